public struct CodecError: Error, CustomStringConvertible, Sendable, Equatable {
    public var codec: String
    public var operation: String
    public var code: Int32
    public var detail: String

    public var description: String { "\(codec) \(operation) failed (\(code)): \(detail)" }

    public init(codec: String, operation: String, code: Int32, detail: String) {
        (self.codec, self.operation, self.code, self.detail) = (codec, operation, code, detail)
    }
}
