import Foundation
import Testing
@testable import ObjectStorage

/// AWS's published example for header-signed S3 requests ("Example: GET Object" in the
/// Signature Version 4 documentation: examplebucket, test.txt, bytes 0-9, 2013-05-24).
@Suite struct SigV4Tests {
    let signer = SigV4(credentials: S3Credentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                                                  secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"), region: "us-east-1")
    let date = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z

    @Test func theDocumentedGetObjectExampleSignsToItsPublishedSignature() {
        let headers = signer.sign(method: "GET", path: "/test.txt", query: [],
                                  headers: [("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9")],
                                  payloadHash: SigV4.emptyPayloadHash, date: date)
        let authorization = headers.first { $0.0 == "Authorization" }?.1
        #expect(authorization == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(headers.contains { $0 == ("x-amz-date", "20130524T000000Z") })
    }

    @Test func theCanonicalRequestMatchesTheDocumentedOne() {
        let canonical = signer.canonicalRequest(
            method: "GET", path: "/test.txt", query: [],
            headers: [("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9"),
                      ("x-amz-content-sha256", SigV4.emptyPayloadHash), ("x-amz-date", "20130524T000000Z")],
            payloadHash: SigV4.emptyPayloadHash)
        #expect(canonical.request == """
            GET
            /test.txt

            host:examplebucket.s3.amazonaws.com
            range:bytes=0-9
            x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
            x-amz-date:20130524T000000Z

            host;range;x-amz-content-sha256;x-amz-date
            e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
            """)
    }

    @Test func queryParametersAreEncodedAndSortedAndAnEmptyValueKeepsItsEqualsSign() {
        let canonical = signer.canonicalRequest(method: "POST", path: "/b/k", query: [("uploadId", "a/b+c="), ("partNumber", "2"), ("uploads", "")],
                                                headers: [("Host", "h")], payloadHash: "x")
        #expect(canonical.request.split(separator: "\n", omittingEmptySubsequences: false)[2] == "partNumber=2&uploadId=a%2Fb%2Bc%3D&uploads=")
    }

    @Test func objectKeysKeepTheirSlashesAndEncodeEverythingElseOnce() {
        #expect(SigV4.encodePath("rec/01J/archive-AB_c.webm") == "rec/01J/archive-AB_c.webm")
        #expect(SigV4.encodePath("a b/ü~$") == "a%20b/%C3%BC~%24")
    }

    @Test func headerValuesAreTrimmedAndTheirInnerSpacesCollapsed() {
        let canonical = signer.canonicalRequest(method: "GET", path: "/", query: [], headers: [("X-Amz-Meta-A", "  one   two ")], payloadHash: "x")
        #expect(canonical.request.contains("x-amz-meta-a:one two\n"))
    }

    @Test func aSessionTokenIsSentAndSigned() {
        var credentials = signer.credentials
        credentials.sessionToken = "token"
        let headers = SigV4(credentials: credentials, region: "us-east-1").sign(method: "GET", path: "/", query: [], headers: [("Host", "h")],
                                                                              payloadHash: "x", date: date)
        #expect(headers.contains { $0 == ("x-amz-security-token", "token") })
        #expect(headers.last?.1.contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token") == true)
    }

    @Test func credentialsNeverPrintTheirSecret() {
        #expect(!"\(signer.credentials)".contains("EXAMPLEKEY"))
    }
}
