/// The words after a subcommand: positionals and `--flag value` options, each read once.
struct Arguments {
    private(set) var positionals: [String] = []
    private var options: [String: [String]] = [:]
    private(set) var flags: Set<String> = []

    /// - Parameters:
    ///   - valued: options that take a value (`--seed 7` or `--seed=7`).
    ///   - switches: options that take none (`--help`).
    init(_ words: [String], valued: Set<String>, switches: Set<String>) throws(UsageError) {
        var index = 0
        while index < words.count {
            let word = words[index]
            index += 1
            guard word.hasPrefix("-"), word != "-" else {
                positionals.append(word)
                continue
            }
            var name = word
            var inline: String?
            if let equals = word.firstIndex(of: "=") {
                name = String(word[..<equals])
                inline = String(word[word.index(after: equals)...])
            }
            if name == "-h" { name = "--help" }
            if switches.contains(name) {
                flags.insert(name)
            } else if valued.contains(name) {
                if let inline {
                    options[name, default: []].append(inline)
                } else {
                    guard index < words.count else { throw UsageError("\(name) needs a value") }
                    // `--run-id --quiet` forgot the id: an option's own name is never its value.
                    let next = words[index]
                    let nextName = next.firstIndex(of: "=").map { String(next[..<$0]) } ?? next
                    if nextName.hasPrefix("-"), valued.contains(nextName) || switches.contains(nextName) || nextName == "-h" {
                        throw UsageError("\(name) needs a value; found the option \(nextName)")
                    }
                    options[name, default: []].append(next)
                    index += 1
                }
            } else {
                throw UsageError("unknown option \(name)")
            }
        }
    }

    /// The option's value (the last, if given more than once).
    func value(_ name: String) -> String? { options[name]?.last }

    /// Every value given for a repeatable option, in order.
    func values(_ name: String) -> [String] { options[name] ?? [] }
}

/// A command line that cannot be understood; exit code 2.
struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}
