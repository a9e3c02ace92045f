/// RFC 3986 section 5.2: a URI reference (a redirect's `Location`, RFC 9110 section 10.2.2)
/// resolved against the URL of the request it answered.
public enum URIReference {
    /// What `reference` names, resolved against `basePath` (the request's path and query):
    /// the scheme and authority when it gives them (`authority` alone for a network-path reference,
    /// `//host/path`), and the path and query, starting with `/`, its dot segments removed and its
    /// fragment dropped.
    public static func resolve(_ reference: String, against basePath: String) -> (scheme: String?, authority: String?, path: String) {
        var text = Substring(reference)
        if let hash = text.firstIndex(of: "#") { text = text[..<hash] }
        var scheme: String?
        if let colon = text.firstIndex(of: ":"), isScheme(text[..<colon]) {
            scheme = text[..<colon].lowercased()
            text = text[text.index(after: colon)...]
        }
        if text.hasPrefix("//") {
            let rest = text.dropFirst(2)
            let end = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            return (scheme, String(rest[..<end]), absolutePath(rest[end...]))
        }
        if scheme != nil || text.hasPrefix("/") { return (scheme, nil, absolutePath(text)) }
        let (basePathOnly, baseQuery) = split(Substring(basePath))
        if text.isEmpty { return (nil, nil, String(basePathOnly) + String(baseQuery)) }
        if text.hasPrefix("?") { return (nil, nil, String(basePathOnly) + String(text)) }
        // A relative path: merged with the base's directory (section 5.2.3).
        let directory = basePathOnly.lastIndex(of: "/").map { basePathOnly[...$0] } ?? "/"
        let (path, query) = split(text)
        return (nil, nil, removeDotSegments(String(directory) + String(path)) + String(query))
    }

    /// Section 5.2.4: `.` and `..` segments of an absolute path taken out (`/a/b/../c` is `/a/c`;
    /// `..` above the root stays at the root).
    public static func removeDotSegments(_ path: String) -> String {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        var output: [Substring] = [""]
        for (index, segment) in segments.enumerated().dropFirst() {
            let isLast = index == segments.count - 1
            switch segment {
            case ".":
                if isLast { output.append("") }
            case "..":
                if output.count > 1 { output.removeLast() }
                if isLast { output.append("") }
            default:
                output.append(segment)
            }
        }
        return output.count == 1 ? "/" : output.joined(separator: "/")
    }

    /// Section 3.1: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    private static func isScheme(_ text: Substring) -> Bool {
        guard let first = text.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first | 0x20) else { return false }
        return text.utf8.allSatisfy { byte in
            let lower = byte | 0x20
            return (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(lower) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
        }
    }

    /// A path and query, from `/`, with its dot segments removed.
    private static func absolutePath(_ text: Substring) -> String {
        let (path, query) = split(text)
        return removeDotSegments(path.hasPrefix("/") ? String(path) : "/" + path) + String(query)
    }

    private static func split(_ text: Substring) -> (path: Substring, query: Substring) {
        guard let mark = text.firstIndex(of: "?") else { return (text, "") }
        return (text[..<mark], text[mark...])
    }
}
