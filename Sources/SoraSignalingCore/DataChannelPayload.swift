import CZlib
import Foundation

/// How Sora set up one data channel (the offer's `data_channels` entry, sora-protocol.md §7).
public struct SoraDataChannelSettings: Sendable, Equatable {
    public var label: String
    public var compress: Bool
    /// Each message starts with the sender's connection id (26 bytes) when the header asks for it.
    public var senderConnectionIDHeader: Bool

    public init(label: String, compress: Bool, senderConnectionIDHeader: Bool) {
        self.label = label
        self.compress = compress
        self.senderConnectionIDHeader = senderConnectionIDHeader
    }

    static func parse(_ list: Any?) -> [SoraDataChannelSettings] {
        guard let entries = list as? [[String: Any]] else { return [] }
        return entries.prefix(256).compactMap { entry in
            guard let label = entry["label"] as? String, !label.isEmpty, label.utf8.count <= 1_024 else { return nil }
            let header = (entry["header"] as? [[String: Any]] ?? []).contains { $0["type"] as? String == "sender_connection_id" }
            return SoraDataChannelSettings(label: label, compress: entry["compress"] as? Bool ?? false, senderConnectionIDHeader: header)
        }
    }
}

public enum DataChannelPayloadError: Error, Equatable, Sendable, CustomStringConvertible {
    case decompressionFailed(String)
    case tooLarge(limit: Int)
    case missingHeader

    public var description: String {
        switch self {
        case .decompressionFailed(let detail): "cannot decompress data-channel message: \(detail)"
        case .tooLarge(let limit): "decompressed data-channel message exceeds \(limit) bytes"
        case .missingHeader: "data-channel message shorter than its sender header"
        }
    }
}

/// A data-channel message as Sora meant it: decompressed, with the sender header split off.
public struct SoraDataChannelMessage: Sendable, Equatable {
    public var senderConnectionID: String?
    public var data: [UInt8]

    /// Sora's connection ids are 26 characters.
    public static let senderHeaderLength = 26

    public init(raw: [UInt8], settings: SoraDataChannelSettings?, maximumSize: Int) throws(DataChannelPayloadError) {
        var bytes = raw
        if settings?.compress == true { bytes = try Zlib.inflate(bytes, limit: maximumSize) }
        if settings?.senderConnectionIDHeader == true {
            guard bytes.count >= SoraDataChannelMessage.senderHeaderLength else { throw .missingHeader }
            senderConnectionID = String(decoding: bytes.prefix(SoraDataChannelMessage.senderHeaderLength), as: UTF8.self)
            bytes.removeFirst(SoraDataChannelMessage.senderHeaderLength)
        }
        data = bytes
    }
}

/// zlib-format (RFC 1950) inflate and deflate on the system zlib, with an output limit so a
/// small compressed message cannot expand without bound (a zlib bomb).
public enum Zlib {
    public static func inflate(_ input: [UInt8], limit: Int) throws(DataChannelPayloadError) -> [UInt8] {
        var stream = z_stream()
        guard inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw .decompressionFailed("inflateInit")
        }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        var source = input
        var status: Int32 = Z_OK
        var failure: DataChannelPayloadError?
        source.withUnsafeMutableBufferPointer { inputBuffer in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = UInt32(inputBuffer.count)
            repeat {
                status = chunk.withUnsafeMutableBufferPointer { outputBuffer in
                    stream.next_out = outputBuffer.baseAddress
                    stream.avail_out = UInt32(outputBuffer.count)
                    return CZlib.inflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunk.count - Int(stream.avail_out)
                guard output.count + produced <= limit else {
                    failure = .tooLarge(limit: limit)
                    return
                }
                output.append(contentsOf: chunk.prefix(produced))
                if status != Z_OK && status != Z_STREAM_END {
                    failure = .decompressionFailed("zlib status \(status)")
                    return
                }
                if status == Z_OK && produced == 0 && stream.avail_in == 0 {
                    failure = .decompressionFailed("truncated stream")
                    return
                }
            } while status != Z_STREAM_END
        }
        if let failure { throw failure }
        return output
    }

    /// For tests and for sending compressed replies.
    public static func deflate(_ input: [UInt8]) -> [UInt8] {
        var length = compressBound(UInt(input.count))
        var output = [UInt8](repeating: 0, count: Int(length))
        let status = compress(&output, &length, input, UInt(input.count))
        return status == Z_OK ? Array(output.prefix(Int(length))) : []
    }
}
