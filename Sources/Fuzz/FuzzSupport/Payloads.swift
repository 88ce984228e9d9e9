/// The payload-list input format the depacketizer targets share: a length byte before each
/// payload, at most 64 payloads.
public func splitPayloads(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
    var payloads: [ArraySlice<UInt8>] = []
    var offset = 0
    while offset < bytes.count, payloads.count < 64 {
        let end = min(bytes.count, offset + 1 + Int(bytes[offset]))
        payloads.append(bytes[(offset + 1)..<end])
        offset = end
    }
    return payloads
}

/// The fuzzer's input as bytes.
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
}
