import Archive
import Crypto
import Foundation
import Glibc
import Logging
import NIOCore
import NIOFoundationCompat
import ObjectStorage
import WireCoding

/// Puts one local file into one object: a single PUT when it fits a part, else a multipart
/// upload that resumes what an earlier run left (its id is in the catalog). Every part goes
/// with its Content-MD5 (the server refuses a corrupted one) and the result is checked by a
/// HEAD: size, and the ETag S3's MD5 rule predicts.
struct FileUpload {
    let client: S3Client
    let catalog: CatalogAccess
    let bucket: String
    let key: String
    let path: String
    let fileName: String
    let partObserver: PartObserver?
    let clock: any TimeSource
    let logger: Logger

    func run(record: UploadRecord, preferredPartSize: Int64) async throws(UploadError) -> (UploadRecord, FileUploadOutcome) {
        var record = record
        let before = try LocalFileState(path: path, fileName: fileName)
        let size = before.size
        if record.status == .uploaded, record.etag != nil, let uploadedAt = record.uploadedAt, before.unchanged(since: uploadedAt),
           try await storedMatches(record: record, size: size) {
            return (record, .alreadyUploaded)
        }
        record.bytes = size
        let plan = PartPlan(fileSize: size, preferredPartSize: record.uploadID != nil ? (record.partSize ?? preferredPartSize) : preferredPartSize)
        if plan.isSinglePut, let stale = record.uploadID {
            // An earlier multipart upload this file no longer needs: its parts would be billed for ever.
            try? await client.abortMultipartUpload(bucket: bucket, key: key, uploadID: stale)
            record.uploadID = nil
        }
        record.status = .uploading
        record.attempts += 1
        record.error = nil
        record.partSize = plan.partSize
        record = try catalog.save(record)
        do throws(UploadError) {
            let (etag, expected, resumed) = plan.isSinglePut
                ? try await putWhole(size: size)
                : try await putInParts(plan: plan, record: &record)
            try await verify(size: size, etag: etag, expected: expected)
            // A file that grew or was rewritten meanwhile is not what went up.
            guard try LocalFileState(path: path, fileName: fileName) == before else {
                throw UploadError.verification(file: fileName, "the local file changed while it was uploaded")
            }
            record.status = .uploaded
            record.etag = etag
            record.uploadID = nil
            record.uploadedAt = clock.wallClockMilliseconds()
            record = try catalog.save(record)
            return (record, resumed ? .resumed : .uploaded)
        } catch {
            record.status = .failed
            record.error = error.description
            _ = try? catalog.save(record)
            throw error
        }
    }

    // MARK: Single PUT

    private func putWhole(size: Int64) async throws(UploadError) -> (etag: String, expected: String, resumed: Bool) {
        let bytes = try read(0..<size)
        let md5 = Array(Insecure.MD5.hash(data: bytes.readableBytesView))
        let etag = try await storage {
            try await client.putObject(bucket: bucket, key: key, body: bytes, md5: md5, contentType: UploadOrder.contentType(fileName))
        }
        do { try partObserver?(fileName, 1, 1) } catch { throw .interrupted("\(error)") }
        return (etag, ObjectDigest.singleETag(md5: md5), false)
    }

    // MARK: Multipart

    private func putInParts(plan: PartPlan, record: inout UploadRecord) async throws(UploadError) -> (etag: String, expected: String, resumed: Bool) {
        var md5s: [Int: [UInt8]] = [:]
        var etags: [Int: String] = [:]
        var toSend = Array(1...plan.partCount)
        var resumed = false
        if let uploadID = record.uploadID,
           let stored = try await storage({ try await client.listParts(bucket: bucket, key: key, uploadID: uploadID) }) {
            let decision = try ResumePlan.partsToSend(plan: plan, stored: stored) { (number: Int) throws(UploadError) -> [UInt8] in
                let digest = Array(Insecure.MD5.hash(data: try read(plan.range(ofPart: number)).readableBytesView))
                md5s[number] = digest
                return digest
            }
            toSend = decision.send
            etags = decision.keep
            resumed = true
            logger.info("resuming upload", metadata: [
                "file": "\(fileName)", "parts_stored": "\(decision.keep.count)", "parts_to_send": "\(decision.send.count)",
            ])
        } else {
            let id = try await storage {
                try await client.createMultipartUpload(bucket: bucket, key: key, contentType: UploadOrder.contentType(fileName))
            }
            record.uploadID = id
            record = try catalog.save(record)  // from here a crash leaves an upload the next run resumes
        }
        guard let uploadID = record.uploadID else { throw .interrupted("no multipart upload id") }
        for number in toSend {
            let bytes = try read(plan.range(ofPart: number))
            let md5 = Array(Insecure.MD5.hash(data: bytes.readableBytesView))
            md5s[number] = md5
            etags[number] = try await storage {
                try await client.uploadPart(bucket: bucket, key: key, uploadID: uploadID, number: number, body: bytes, md5: md5)
            }
            do { try partObserver?(fileName, number, plan.partCount) } catch { throw .interrupted("\(error)") }
        }
        let parts = (1...plan.partCount).map { (number: $0, etag: etags[$0] ?? "") }
        let expected = ObjectDigest.multipartETag(partMD5s: (1...plan.partCount).map { md5s[$0] ?? [] })
        do {
            let etag = try await client.completeMultipartUpload(bucket: bucket, key: key, uploadID: uploadID, parts: parts)
            return (etag, expected, resumed)
        } catch where error.code == "NoSuchUpload" {
            // A completion that succeeded but whose answer was lost, retried: the object is there.
            if let stored = try await storage({ try await client.headObject(bucket: bucket, key: key) }),
               stored.size == plan.fileSize, ObjectDigest.normalized(stored.etag) == expected {
                return (stored.etag, expected, resumed)
            }
            throw .storage(error, file: fileName)
        } catch {
            throw .storage(error, file: fileName)
        }
    }

    // MARK: Verification

    private func verify(size: Int64, etag: String, expected: String) async throws(UploadError) {
        guard let stored = try await storage({ try await client.headObject(bucket: bucket, key: key) }) else {
            throw .verification(file: fileName, "no object after the upload")
        }
        guard stored.size == size else { throw .verification(file: fileName, "\(stored.size) bytes stored, \(size) local") }
        guard ObjectDigest.matches(serverETag: stored.etag, expected: expected),
              ObjectDigest.normalized(stored.etag) == ObjectDigest.normalized(etag) else {
            throw .verification(file: fileName, "ETag \(stored.etag), expected \(expected)")
        }
    }

    /// An upload recorded as done still counts when the object is there with its size and ETag.
    private func storedMatches(record: UploadRecord, size: Int64) async throws(UploadError) -> Bool {
        guard record.bytes == size, let etag = record.etag,
              let stored = try await storage({ try await client.headObject(bucket: bucket, key: key) }) else { return false }
        return stored.size == size && ObjectDigest.normalized(stored.etag) == ObjectDigest.normalized(etag)
    }

    // MARK: Local file

    /// The bytes of `range`, read straight into the buffer that is sent (pread, no Data in
    /// between): a part is in memory once, at most 512 MiB.
    private func read(_ range: Range<Int64>) throws(UploadError) -> ByteBuffer {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw .storage(S3Error(.localFile, "cannot read \(path): \(String(cString: strerror(errno)))"), file: fileName)
        }
        defer { close(descriptor) }
        var buffer = ByteBufferAllocator().buffer(capacity: Int(range.count))
        var offset = range.lowerBound
        while offset < range.upperBound {
            let wanted = Int(range.upperBound - offset)
            var failure: Int32 = 0
            let got = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { pointer in
                let count = pread(descriptor, pointer.baseAddress, wanted, off_t(offset))
                if count < 0 { failure = errno }
                return max(0, count)
            }
            if failure == EINTR { continue }
            guard failure == 0 else { throw .storage(S3Error(.localFile, "cannot read \(path): \(String(cString: strerror(failure)))"), file: fileName) }
            guard got > 0 else { throw .storage(S3Error(.localFile, "\(path) is shorter than when the upload began"), file: fileName) }
            offset += Int64(got)
        }
        return buffer
    }

    /// S3 calls throw S3Error only; closures cannot spell that yet without annotations at every call.
    private func storage<T>(_ body: () async throws -> T) async throws(UploadError) -> T {
        do { return try await body() } catch let error as S3Error { throw .storage(error, file: fileName) } catch {
            throw .storage(S3Error(.protocolViolation, "\(error)"), file: fileName)
        }
    }

}

/// What identifies a local file's contents cheaply: a file whose size, modification time or
/// inode changed is treated as another file.
struct LocalFileState: Equatable {
    var size: Int64
    var modifiedNanoseconds: Int64
    var inode: UInt64

    init(path: String, fileName: String) throws(UploadError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw .storage(S3Error(.localFile, "cannot read \(path): \(String(cString: strerror(errno)))"), file: fileName)
        }
        size = Int64(info.st_size)
        modifiedNanoseconds = Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec)
        inode = UInt64(info.st_ino)
    }

    /// Not modified since `time` (Unix milliseconds).
    func unchanged(since time: Int64) -> Bool { modifiedNanoseconds / 1_000_000 <= time }
}

/// The catalog's calls with upload errors. They block (the catalog is synchronous by design);
/// an upload makes them between requests, with nothing else to run meanwhile.
struct CatalogAccess: Sendable {
    let store: any CatalogStore

    func save(_ record: UploadRecord) throws(UploadError) -> UploadRecord {
        do { return try store.saveUpload(record) } catch { throw .catalog(error) }
    }

    func uploads(_ filter: UploadFilter) throws(UploadError) -> [UploadRecord] {
        do { return try store.uploads(filter) } catch { throw .catalog(error) }
    }

    func recordings(_ filter: RecordingFilter) throws(UploadError) -> [RecordingRecord] {
        do { return try store.recordings(filter) } catch { throw .catalog(error) }
    }
}
