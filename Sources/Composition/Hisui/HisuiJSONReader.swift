import Foundation

/// Typed reads of one JSON object's members, each failure naming the key by its dotted path
/// (`video_layout.main.max_columns`), as hisui's documentation names them.
struct HisuiJSONReader {
    let object: [String: Any]
    let path: String

    init(_ value: Any, path: String) throws(HisuiLayoutError) {
        guard let object = value as? [String: Any] else { throw .badValue(key: path.isEmpty ? "the layout" : path, why: "must be a JSON object") }
        self.object = object
        self.path = path
    }

    func key(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    /// Fails on a member not in `known`.
    func rejectUnknown(_ known: Set<String>) throws(HisuiLayoutError) {
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) { throw .unknownKey(key(unknown)) }
    }

    func has(_ name: String) -> Bool { object[name] != nil }

    func string(_ name: String) throws(HisuiLayoutError) -> String? {
        guard let value = object[name] else { return nil }
        guard let text = value as? String else { throw .badValue(key: key(name), why: "must be a string") }
        return text
    }

    func bool(_ name: String) throws(HisuiLayoutError) -> Bool? {
        guard let value = object[name] else { return nil }
        guard let number = value as? NSNumber, Self.isBoolean(number) else { throw .badValue(key: key(name), why: "must be true or false") }
        return number.boolValue
    }

    /// An integer within `range` (JSON numbers with a fraction are refused, as hisui's parser does).
    func integer(_ name: String, in range: ClosedRange<Int>) throws(HisuiLayoutError) -> Int? {
        guard let value = object[name] else { return nil }
        guard let number = value as? NSNumber, !Self.isBoolean(number) else { throw .badValue(key: key(name), why: "must be an integer") }
        let double = number.doubleValue
        guard double.rounded() == double, double >= Double(range.lowerBound), double <= Double(range.upperBound) else {
            throw .badValue(key: key(name), why: "must be an integer from \(range.lowerBound) to \(range.upperBound), not \(number)")
        }
        return Int(double)
    }

    func strings(_ name: String) throws(HisuiLayoutError) -> [String]? {
        guard let value = object[name] else { return nil }
        guard let array = value as? [Any], let texts = array as? [String] else { throw .badValue(key: key(name), why: "must be an array of strings") }
        guard texts.count <= 1_000 else { throw .badValue(key: key(name), why: "has more than 1000 entries") }
        return texts
    }

    func integers(_ name: String, in range: ClosedRange<Int>) throws(HisuiLayoutError) -> [Int]? {
        guard let value = object[name] else { return nil }
        guard let array = value as? [Any], array.count <= 1_000 else { throw .badValue(key: key(name), why: "must be an array of at most 1000 integers") }
        var out: [Int] = []
        for (index, element) in array.enumerated() {
            guard let integer = try HisuiJSONReader(["v": element], path: key(name) + "[\(index)]").integer("v", in: range) else { continue }
            out.append(integer)
        }
        return out
    }

    /// JSONSerialization gives booleans as NSNumber too, of objCType "c" (numbers are "i", "q" or "d").
    static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }
}
