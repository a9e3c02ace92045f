import Foundation
import PushSwarmCore

/// One option of a command, declared once: the parser reads it, the help text shows it, and its
/// check judges each value given (the shape of swift-argument-parser's `@Option(help:)`, without
/// the package).
struct OptionDeclaration: Sendable {
    let name: String
    /// What it takes, as the help shows it (`N`, `FILE`); nil for a switch.
    let value: String?
    /// Lines of help, as they are to be shown.
    let help: String
    /// What is wrong with a value; nil when it is good.
    let check: @Sendable (String) -> String?
    /// What `run --workers` does with the option (declared for `run`'s options; nil elsewhere).
    private(set) var shards: ShardPassing?

    /// What `run --workers N` does with an option it was given: the shard processes' argument
    /// lists are made from these, so that an option added to `run` is passed on, kept by the
    /// parent or refused by its declaration, never left out by a list kept by hand (one once
    /// left out `--max-waiting`, and shards ran with the default ceiling).
    enum ShardPassing: Sendable, Equatable {
        /// Each shard gets it as given (every value of a repeated option).
        case forwarded
        /// The parent acts on it, or gives each shard its own; why.
        case parent(String)
        /// It does not go with --workers; why.
        case refused(String)
    }

    init(_ name: String, _ value: String? = nil, _ help: String, check: @escaping @Sendable (String) -> String? = { _ in nil }) {
        self.name = name
        self.value = value
        self.help = help
        self.check = check
    }

    /// The same option with the help another command gives it.
    func help(_ text: String) -> OptionDeclaration {
        var declaration = OptionDeclaration(name, value, text, check: check)
        declaration.shards = shards
        return declaration
    }

    /// The same option, saying what `run --workers` does with it.
    func shards(_ passing: ShardPassing) -> OptionDeclaration {
        var declaration = self
        declaration.shards = passing
        return declaration
    }

    /// A check: a whole number within `range`.
    static func wholeNumber(_ range: ClosedRange<Int>) -> @Sendable (String) -> String? {
        { text in Int(text).map(range.contains) == true ? nil : wholeNumberProblem(range, text) }
    }

    /// What is said of a value that is not a whole number within `range`.
    static func wholeNumberProblem(_ range: ClosedRange<Int>, _ text: String) -> String {
        "expected a whole number from \(range.lowerBound) to \(range.upperBound), found \"\(text)\""
    }

    /// A check: a value `parse` reads; otherwise described as `expected`.
    static func parsed<Value>(_ expected: String, by parse: @escaping @Sendable (String) -> Value?) -> @Sendable (String) -> String? {
        { text in parse(text) == nil ? "expected \(expected), found \"\(text)\"" : nil }
    }

    /// A check: one of `choices`.
    static func oneOf(_ choices: [String]) -> @Sendable (String) -> String? {
        { text in
            choices.contains(text) ? nil : "expected \(choices.joined(separator: " or ")), found \"\(text)\""
        }
    }
}

/// A command's words: its synopsis, what it does, its options (each declared once), and the help
/// text, parser and checks that follow from them. `-h`/`--help` is every command's.
struct CommandDeclaration: Sendable {
    /// `pushswarm run FILE [options]`.
    let synopsis: String
    /// What the command does, as paragraphs.
    let about: String
    let options: [OptionDeclaration]
    /// Text after the options (paths served, exit codes), if any.
    var footer = ""

    static let help = OptionDeclaration("--help", nil, "Show this help.")

    /// The help text: `pushswarm <command> --help`.
    var usage: String {
        let shown = options + [Self.help]
        let labels = shown.map { option in
            (option.name == "--help" ? "-h, --help" : option.name) + (option.value.map { " " + $0 } ?? "")
        }
        let column = min(24, max(20, (labels.map(\.count).max() ?? 0) + 2))
        var lines = ["Usage: \(synopsis)", "", about, "", "Options:"]
        for (option, label) in zip(shown, labels) {
            let helpLines = option.help.split(separator: "\n", omittingEmptySubsequences: false)
            let indent = String(repeating: " ", count: column + 2)
            if label.count < column {
                lines.append("  " + label.padding(toLength: column, withPad: " ", startingAt: 0) + (helpLines.first.map(String.init) ?? ""))
            } else {
                lines.append("  " + label)
                lines.append(indent + (helpLines.first.map(String.init) ?? ""))
            }
            for line in helpLines.dropFirst() { lines.append(indent + line) }
        }
        if !footer.isEmpty { lines += ["", footer] }
        return lines.joined(separator: "\n")
    }

    /// The words parsed and each value checked; nil when they ask for help.
    func arguments(_ words: [String]) throws(UsageError) -> Arguments? {
        let arguments = try Arguments(
            words, valued: Set(options.filter { $0.value != nil }.map(\.name)),
            switches: Set(options.filter { $0.value == nil }.map(\.name) + ["--help"])
        )
        if arguments.flags.contains("--help") { return nil }
        for option in options where option.value != nil {
            for value in arguments.values(option.name) {
                if let problem = option.check(value) { throw UsageError("\(option.name): \(problem)") }
            }
        }
        return arguments
    }

    /// `arguments(_:)` for a command: on a usage error the problem and the usage are printed and
    /// the result is exit code 2; on `--help` the usage is printed and the result is success.
    func parse(_ words: [String]) -> Result<Arguments, PushSwarmCommand.ExitCode> {
        do {
            guard let arguments = try arguments(words) else {
                print(usage)
                return .failure(.success)
            }
            return .success(arguments)
        } catch {
            PushSwarmCommand.printError("\(error.message)\n\n\(usage)")
            return .failure(.badInput)
        }
    }
}

/// A subcommand: its words as declared, and what it does with them once parsed and checked.
protocol Command: SendableMetatype {
    static var declaration: CommandDeclaration { get }
    static func run(_ arguments: Arguments) async -> PushSwarmCommand.ExitCode
}

extension Command {
    static var usage: String { declaration.usage }

    /// Parses and checks `words`, then runs; a usage error or `--help` ends it before (exit 2 or 0).
    static func main(_ words: [String]) async -> PushSwarmCommand.ExitCode {
        switch declaration.parse(words) {
        case .success(let arguments): await run(arguments)
        case .failure(let code): code
        }
    }
}

/// An option whose value a command reads as a `Value`: one function both checks each value given
/// (its declaration's `check`, as the words are parsed) and reads it for the command
/// (`Arguments.value(_:)`), so that what is accepted and what is used cannot part (a check that
/// took `--seed -1` while the read took nothing once left the scenario's seed in place).
struct TypedOption<Value: Sendable>: Sendable {
    let declaration: OptionDeclaration
    let read: @Sendable (String) -> Value?

    /// `problem`: what is said of a text `read` does not take.
    init(_ name: String, _ value: String, _ help: String, problem: @escaping @Sendable (String) -> String, read: @escaping @Sendable (String) -> Value?) {
        self.read = read
        declaration = OptionDeclaration(name, value, help, check: { text in read(text) == nil ? problem(text) : nil })
    }

    private init(declaration: OptionDeclaration, read: @escaping @Sendable (String) -> Value?) {
        self.declaration = declaration
        self.read = read
    }

    var name: String { declaration.name }

    /// The same option with the help another command gives it.
    func help(_ text: String) -> TypedOption { TypedOption(declaration: declaration.help(text), read: read) }

    /// The declaration, saying what `run --workers` does with it.
    func shards(_ passing: OptionDeclaration.ShardPassing) -> OptionDeclaration { declaration.shards(passing) }

    /// A whole number within `range`.
    static func wholeNumber(_ name: String, _ value: String, _ help: String, in range: ClosedRange<Int>) -> TypedOption<Int> {
        TypedOption<Int>(name, value, help, problem: { OptionDeclaration.wholeNumberProblem(range, $0) }) { text in
            Int(text).flatMap { range.contains($0) ? $0 : nil }
        }
    }
}

extension Arguments {
    /// The option's last value, read as its declaration reads it: checked so as the words were
    /// parsed (`CommandDeclaration.arguments`), so nil only where it was not given.
    func value<Value>(_ option: TypedOption<Value>) -> Value? {
        value(option.name).flatMap(option.read)
    }
}
