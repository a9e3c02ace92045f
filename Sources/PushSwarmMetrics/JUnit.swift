/// JUnit XML, what CI systems show as test results: one suite of named cases, each passed or
/// failed with a message. Thresholds and comparisons are written as this.
public enum JUnit {
    public struct TestCase: Sendable {
        public var className: String
        public var name: String
        /// Nil when the case passed.
        public var failure: String?

        public init(className: String, name: String, failure: String?) {
            self.className = className
            self.name = name
            self.failure = failure
        }
    }

    public static func xml(suite: String, _ cases: [TestCase]) -> String {
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuites><testsuite name=\"\(escape(suite))\" tests=\"\(cases.count)\" failures=\"\(cases.filter { $0.failure != nil }.count)\">\n"
        for testCase in cases {
            xml += "  <testcase classname=\"\(escape(testCase.className))\" name=\"\(escape(testCase.name))\""
            if let failure = testCase.failure {
                xml += "><failure message=\"\(escape(failure))\"/></testcase>\n"
            } else {
                xml += "/>\n"
            }
        }
        return xml + "</testsuite></testsuites>\n"
    }

    /// Text for XML and HTML attributes and content: `&`, `<`, `>` and `"` escaped.
    public static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
