/// `application/x-www-form-urlencoded` query strings, as clients build them and services read
/// them (`event=<urlencoded JSON>`, `body=`).
public enum URLQuery {
    /// `value` percent-encoded for a query component: every byte but the unreserved characters
    /// of RFC 3986 (`A-Z a-z 0-9 - . _ ~`) becomes `%XX`.
    public static func encode(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count * 3)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%"
                out += String(byte >> 4, radix: 16, uppercase: true)
                out += String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// `name=value&…` with each part encoded; a nil value gives a bare `name` (`master`).
    public static func build(_ items: [(String, String?)]) -> String {
        items.map { name, value in value.map { "\(encode(name))=\(encode($0))" } ?? encode(name) }.joined(separator: "&")
    }

    /// The parameters of `query` (the part after `?`), decoded; `+` is a space. Nil when a `%`
    /// escape is malformed or the bytes are not UTF-8. A repeated name keeps its first value.
    public static func parse(_ query: Substring) -> [String: String]? {
        var result: [String: String] = [:]
        for part in query.split(separator: "&", omittingEmptySubsequences: true) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(pieces[0]) else { return nil }
            let value = pieces.count > 1 ? decode(pieces[1]) : ""
            guard let value else { return nil }
            if result[name] == nil { result[name] = value }
        }
        return result
    }

    /// The query of a request target (`/path?query`), parsed; an empty map when there is none.
    public static func parameters(ofTarget target: String) -> [String: String]? {
        guard let mark = target.firstIndex(of: "?") else { return [:] }
        return parse(target[target.index(after: mark)...])
    }

    static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
