import ArchiveUpload
import Crypto
import Foundation
import Testing
@testable import ObjectStorage

@Suite struct S3DestinationTests {
    @Test func aDestinationNamesObjectsTheWaySoraArchiveUploaderDoes() throws {
        let root = try S3Destination.parse("s3://archive")
        #expect(root.key(recordingID: "01J0", fileName: "report-01J0.json") == "01J0/report-01J0.json")
        let prefixed = try S3Destination.parse("S3://archive//tenant/a/")
        #expect(prefixed.prefix == "tenant/a")
        #expect(prefixed.key(recordingID: "01J0", fileName: "archive-X.webm") == "tenant/a/01J0/archive-X.webm")
        #expect(prefixed.url(key: "k") == "s3://archive/k")
        #expect(prefixed.objectURLPrefix == "s3://archive/tenant/a/")
    }

    @Test(arguments: ["s3://Archive", "s3://a", "s3://-x-", "s3://a..b", "s3://ok-bucket/../up", "http://bucket", "s3://"])
    func badDestinationsAreConfigurationErrors(_ text: String) {
        #expect { try S3Destination.parse(text) } throws: { ($0 as? S3Error)?.kind == .configuration }
    }

    @Test func noEndpointMeansAWSWithVirtualHostedNames() throws {
        let aws = try S3Endpoint(url: nil, region: "eu-west-1")
        #expect(aws.description == "https://s3.eu-west-1.amazonaws.com")
        #expect(aws.address(bucket: "b", key: "x/y z").host == "b.s3.eu-west-1.amazonaws.com")
        #expect(aws.address(bucket: "b", key: "x/y z").path == "/x/y%20z")
    }

    @Test func anEndpointMeansPathStyleRequestsToIt() throws {
        let local = try S3Endpoint(url: "http://127.0.0.1:8333", region: nil)
        #expect(local.region == "us-east-1")
        #expect(local.address(bucket: "b", key: "k/1").host == "127.0.0.1:8333")
        #expect(local.address(bucket: "b", key: "k/1").path == "/b/k/1")
        #expect(local.address(bucket: "b", key: nil).path == "/b")
    }

    @Test func aDefaultPortStaysOutOfTheSignedHostHeader() throws {
        #expect(try S3Endpoint(url: "https://s3.example.net:443", region: nil).address(bucket: "b", key: nil).host == "s3.example.net")
        #expect(try S3Endpoint(url: "http://s3.example.net:80", region: nil).description == "http://s3.example.net")
        #expect(try S3Endpoint(url: "https://s3.example.net:8443", region: nil).address(bucket: "b", key: nil).host == "s3.example.net:8443")
    }

    @Test(arguments: ["http://user:secret@host", "ftp://host", "http://host/path", "not a url"])
    func badEndpointsAreRefused(_ text: String) {
        #expect { try S3Endpoint(url: text, region: nil) } throws: { ($0 as? S3Error)?.kind == .configuration }
    }

    @Test func credentialsComeFromTheStandardVariables() throws {
        let credentials = try S3Credentials.fromEnvironment(["AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": ""])
        #expect(credentials.accessKeyID == "k" && credentials.sessionToken == nil)
        #expect { try S3Credentials.fromEnvironment(["AWS_ACCESS_KEY_ID": "k"]) } throws: { ($0 as? S3Error)?.kind == .configuration }
    }
}

@Suite struct PartPlanTests {
    @Test func aFileIsCutIntoPartsOfThePreferredSizeWithASmallerLastOne() {
        let plan = PartPlan(fileSize: 12 << 20, preferredPartSize: 5 << 20)
        #expect(!plan.isSinglePut && plan.partCount == 3)
        #expect(plan.range(ofPart: 1) == 0..<(5 << 20))
        #expect(plan.range(ofPart: 3) == (10 << 20)..<(12 << 20))
    }

    @Test func smallAndEmptyFilesGoInOnePut() {
        #expect(PartPlan(fileSize: 0).isSinglePut)
        #expect(PartPlan(fileSize: 1000).partCount == 1)
        #expect(PartPlan(fileSize: 5 << 20, preferredPartSize: 5 << 20).isSinglePut)
    }

    @Test func partsGrowSoAHugeFileStaysWithinTenThousandParts() {
        let plan = PartPlan(fileSize: 200 << 30, preferredPartSize: 5 << 20)
        #expect(plan.partCount <= 10_000)
        #expect(plan.partSize % (1 << 20) == 0)
        #expect(PartPlan(fileSize: 100, preferredPartSize: 1).partSize == PartPlan.minimumPartSize)
    }

    /// The value Python's hashlib gives for MD5(MD5(5 MiB of "a") + MD5(100 × "b")), and the
    /// ETag SeaweedFS answered for that two-part upload.
    @Test func theMultipartETagFollowsS3sRule() {
        let first = Array(Insecure.MD5.hash(data: [UInt8](repeating: 0x61, count: 5 << 20)))
        let second = Array(Insecure.MD5.hash(data: [UInt8](repeating: 0x62, count: 100)))
        #expect(ObjectDigest.multipartETag(partMD5s: [first, second]) == "16cafe8d6b8c1c55c3d339c8d69326c6-2")
    }

    @Test func etagsAreComparedWithoutQuotesOrCaseAndForeignShapesAreNotJudged() {
        #expect(ObjectDigest.matches(serverETag: "\"ABCDEF0123456789ABCDEF0123456789\"", expected: "abcdef0123456789abcdef0123456789"))
        #expect(!ObjectDigest.matches(serverETag: "\"abcdef0123456789abcdef0123456789-2\"", expected: "abcdef0123456789abcdef0123456789-3"))
        #expect(ObjectDigest.matches(serverETag: "kms-opaque", expected: "abcdef0123456789abcdef0123456789"))
    }

    @Test func resumingKeepsOnlyStoredPartsWhoseSizeAndChecksumMatchTheLocalBytes() {
        let plan = PartPlan(fileSize: 12 << 20, preferredPartSize: 5 << 20)
        let md5s: [Int: [UInt8]] = [1: [UInt8](repeating: 1, count: 16), 2: [UInt8](repeating: 2, count: 16), 3: [UInt8](repeating: 3, count: 16)]
        let stored = [
            StoredPart(number: 1, etag: "\"" + String(repeating: "01", count: 16) + "\"", size: 5 << 20),
            StoredPart(number: 2, etag: "\"" + String(repeating: "ff", count: 16) + "\"", size: 5 << 20),  // other bytes
        ]
        let decision = ResumePlan.partsToSend(plan: plan, stored: stored) { md5s[$0]! }
        #expect(decision.send == [2, 3])
        #expect(Array(decision.keep.keys) == [1])
    }
}

@Suite struct S3ResponseTests {
    @Test func aPageOfPartsIsRead() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>b</Bucket><Key>k</Key>
            <UploadId>u</UploadId><NextPartNumberMarker>2</NextPartNumberMarker><IsTruncated>true</IsTruncated>
            <Part><PartNumber>1</PartNumber><ETag>"aa"</ETag><Size>5242880</Size></Part>
            <Part><PartNumber>2</PartNumber><ETag>&quot;bb&quot;</ETag><Size>10</Size></Part></ListPartsResult>
            """
        let page = try #require(S3Responses.parts(Data(xml.utf8)))
        #expect(page.parts == [StoredPart(number: 1, etag: "\"aa\"", size: 5_242_880), StoredPart(number: 2, etag: "\"bb\"", size: 10)])
        #expect(page.nextMarker == 2)
    }

    @Test func errorsUploadIdsAndCompletionsAreRead() {
        let error = S3Responses.error(Data("<Error><Code>NoSuchUpload</Code><Message>gone</Message></Error>".utf8))
        #expect(error?.code == "NoSuchUpload" && error?.message == "gone")
        #expect(S3Responses.uploadID(Data("<InitiateMultipartUploadResult><UploadId>x-1</UploadId></InitiateMultipartUploadResult>".utf8)) == "x-1")
        #expect(S3Responses.completedETag(Data("<CompleteMultipartUploadResult><ETag>\"e-2\"</ETag></CompleteMultipartUploadResult>".utf8)) == "\"e-2\"")
    }

    @Test(arguments: ["", "<", "not xml", "<ListPartsResult><Part><PartNumber>x</PartNumber></Part></ListPartsResult>",
                      "<ListPartsResult><Part><PartNumber>-1</PartNumber><ETag>e</ETag><Size>1</Size></Part></ListPartsResult>"])
    func garbageIsNotAnAnswer(_ text: String) {
        #expect(S3Responses.parts(Data(text.utf8)) == nil)
    }

    /// AWS keeps a long CompleteMultipartUpload alive with whitespace before the XML.
    @Test func whitespaceBeforeTheDeclarationIsAccepted() {
        let body = "\n   \n" + "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult><ETag>\"e-3\"</ETag></CompleteMultipartUploadResult>"
        #expect(S3Responses.completedETag(Data(body.utf8)) == "\"e-3\"")
    }

    @Test func aDocumentTypeIsRefusedSoNoEntityIsExpanded() {
        let bomb = """
            <?xml version="1.0"?><!DOCTYPE Error [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
            <Error><Code>&b;</Code></Error>
            """
        #expect(S3Responses.error(Data(bomb.utf8)) == nil)
    }

    @Test func aServersMessageBecomesOneShortLine() {
        let error = S3Error.fromResponse(status: 500, code: "InternalError", message: "line one\nline two\u{1B}[31m" + String(repeating: "x", count: 500),
                                         operation: "op")
        #expect(!error.message.contains("\n") && !error.message.contains("\u{1B}"))
        #expect(error.message.count < 260)
    }

    @Test func anOversizedAnswerIsNotParsed() {
        let huge = "<Error><Code>" + String(repeating: "x", count: XMLElementNode.maximumBytes) + "</Code></Error>"
        #expect(S3Responses.error(Data(huge.utf8)) == nil)
    }

    @Test func theCompletionBodyListsPartsInOrderWithEscapedETags() {
        #expect(S3Responses.completionBody([(1, "\"a\""), (2, "b&c")]).contains(
            "<Part><PartNumber>1</PartNumber><ETag>&quot;a&quot;</ETag></Part><Part><PartNumber>2</PartNumber><ETag>b&amp;c</ETag></Part>"))
    }

    @Test func errorCodesSayWhatTheOperatorMustDo() {
        #expect(S3Error.fromResponse(status: 403, code: "SignatureDoesNotMatch", message: nil, operation: "op").kind == .credentials)
        #expect(S3Error.fromResponse(status: 403, code: nil, message: nil, operation: "op").kind == .credentials)
        #expect(S3Error.fromResponse(status: 404, code: "NoSuchBucket", message: nil, operation: "op").kind == .configuration)
        #expect(S3Error.fromResponse(status: 503, code: "SlowDown", message: nil, operation: "op").isRetryable)
        #expect(S3Error.fromResponse(status: 500, code: nil, message: nil, operation: "op").isRetryable)
        #expect(!S3Error.fromResponse(status: 400, code: "BadDigest", message: nil, operation: "op").isRetryable)
    }

    @Test func retriesBackOffWithinTheirCeilingAndStop() {
        let policy = RetryPolicy(retries: 3, baseDelaySeconds: 1, maximumDelaySeconds: 3)
        #expect(policy.delay(afterAttempt: 1, unit: 0) == 0.5)
        #expect(policy.delay(afterAttempt: 2, unit: 0.999)! < 2)
        #expect(policy.delay(afterAttempt: 3, unit: 0.999)! <= 3)
        #expect(policy.delay(afterAttempt: 4, unit: 0) == nil)
    }
}

@Suite struct UploadOrderTests {
    @Test func mediaGoesBeforeSidecarsAndTheReportGoesLast() {
        let names = ["report-R.json", "archive-B.json", ".upload.lock", "archive-B.webm", "notes.txt", "split-archive-end-A.json", "composed-R.webm",
                     "split-archive-A_0001.json", "split-archive-A_0001.webm", "archive-A.webm", "archive-A.webm.tmp", "composed-R.webm.tmp"]
        #expect(UploadOrder.files(names) == [
            "archive-A.webm", "archive-B.webm", "split-archive-A_0001.webm", "archive-B.json", "split-archive-A_0001.json",
            "split-archive-end-A.json", "report-R.json", "composed-R.webm",
        ])
    }
}
