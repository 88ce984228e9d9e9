/// Why a hisui layout file cannot be used; each names the key or value at fault.
public enum HisuiLayoutError: Error, Equatable, CustomStringConvertible {
    case unreadable(String)
    case syntax(String)
    case unknownKey(String)
    case badValue(key: String, why: String)
    case unsupported(key: String, why: String)
    case sources(String)

    public var description: String {
        switch self {
        case .unreadable(let why): "cannot read the layout file: \(why)"
        case .syntax(let why): "the layout file is not JSON or JSONC: \(why)"
        case .unknownKey(let key): "unknown key \(key) in the layout file (a hisui layout key is expected)"
        case .badValue(let key, let why): "\(key): \(why)"
        case .unsupported(let key, let why): "\(key) is not supported by recbot compose: \(why)"
        case .sources(let why): "sources: \(why)"
        }
    }
}
