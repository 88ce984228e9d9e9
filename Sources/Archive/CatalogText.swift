/// Free text as both catalogs store it.
///
/// Neither keeps U+0000 as it is: PostgreSQL refuses it in `text` (SQLSTATE 22021, which cost
/// a whole batch of events) and SQLite, through GRDB's C strings, cuts the value there. Text
/// from the wire (a data-channel message, a client id, a close reason) may hold it, so it is
/// escaped, the same way in both: U+0000 is stored as U+FFFF "0", and U+FFFF as U+FFFF U+FFFF.
/// U+FFFF is a Unicode noncharacter, never in interchanged text, so a value without either is
/// stored as it is, and rows written before the escape read back unchanged.
public enum CatalogText {
    static let escape: Unicode.Scalar = "\u{FFFF}"

    public static func stored(_ text: String) -> String {
        guard mayNeedEscaping(text) else { return text }
        var output = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\0": output.append(escape); output.append("0")
            case escape: output.append(escape); output.append(escape)
            default: output.append(scalar)
            }
        }
        return String(output)
    }

    /// An escape followed by anything else is kept as it is (it cannot come from `stored`).
    public static func loaded(_ text: String) -> String {
        guard mayNeedEscaping(text) else { return text }
        var output = String.UnicodeScalarView()
        var scalars = text.unicodeScalars.makeIterator()
        var pending = scalars.next()
        while let scalar = pending {
            pending = scalars.next()
            guard scalar == escape, let next = pending, next == "0" || next == escape else { output.append(scalar); continue }
            output.append(next == "0" ? "\0" : escape)
            pending = scalars.next()
        }
        return String(output)
    }

    public static func stored(_ text: String?) -> String? { text.map(stored) }
    public static func loaded(_ text: String?) -> String? { text.map(loaded) }

    /// A fast look at the bytes: U+0000 is the byte 0 and U+FFFF starts with 0xEF.
    private static func mayNeedEscaping(_ text: String) -> Bool {
        text.utf8.contains { $0 == 0 || $0 == 0xEF }
    }
}

/// A record whose free text goes through `CatalogText` on its way in and out of a catalog.
/// Keys bound by a rule (session and connection ids, paths, codec and status names) are not
/// free text and are stored as they are.
public protocol CatalogTextFields {
    func mappingText(_ transform: (String?) -> String?) -> Self
}

extension CatalogTextFields {
    public var catalogStored: Self { mappingText(CatalogText.stored) }
    public var catalogLoaded: Self { mappingText(CatalogText.loaded) }
}

extension SessionRecord: CatalogTextFields {
    public func mappingText(_ transform: (String?) -> String?) -> SessionRecord {
        var record = self
        (record.soraSessionID, record.connectionID) = (transform(soraSessionID), transform(connectionID))
        (record.clientID, record.bundleID, record.endReason) = (transform(clientID), transform(bundleID), transform(endReason))
        record.holdReason = transform(holdReason)
        return record
    }
}

extension ConnectionRecord: CatalogTextFields {
    public func mappingText(_ transform: (String?) -> String?) -> ConnectionRecord {
        var record = self
        (record.clientID, record.bundleID, record.role) = (transform(clientID), transform(bundleID), transform(role))
        (record.metadata, record.authnMetadata, record.authzMetadata) = (transform(metadata), transform(authnMetadata), transform(authzMetadata))
        return record
    }
}

extension RecordingRecord: CatalogTextFields {
    public func mappingText(_ transform: (String?) -> String?) -> RecordingRecord {
        var record = self
        (record.videoRefused, record.verificationReport, record.error) = (transform(videoRefused), transform(verificationReport), transform(error))
        return record
    }
}

extension EventRecord: CatalogTextFields {
    public func mappingText(_ transform: (String?) -> String?) -> EventRecord {
        var record = self
        (record.eventType, record.label, record.senderConnectionID) = (transform(eventType), transform(label), transform(senderConnectionID))
        switch payload {
        case .json(let text): record.payload = .json(transform(text) ?? text)
        case .text(let text): record.payload = .text(transform(text) ?? text)
        case .binary: break
        }
        return record
    }
}

extension UploadRecord: CatalogTextFields {
    public func mappingText(_ transform: (String?) -> String?) -> UploadRecord {
        var record = self
        (record.uploadID, record.etag, record.error) = (transform(uploadID), transform(etag), transform(error))
        return record
    }
}

extension InterruptionRecord: CatalogTextFields {
    public func mappingText(_ transform: (String?) -> String?) -> InterruptionRecord {
        var record = self
        record.cause = transform(cause) ?? cause
        return record
    }
}
