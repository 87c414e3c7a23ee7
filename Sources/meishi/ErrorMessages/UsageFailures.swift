import Foundation

/// Command-line mistakes: a word that names no command, a usage error from argument parser.
extension MeishiFailure {
    static func unknownCommand(_ word: String, under path: [String], suggestions: [String]) -> MeishiFailure {
        let under = (["meishi"] + path).joined(separator: " ")
        let hint = suggestions.isEmpty ? "see '\(under) --help' for the commands"
            : "did you mean " + suggestions.map { "'\(under) \($0)'" }.joined(separator: " or ") + "?"
        return MeishiFailure("'\(word)' is not a command of '\(under)'", hint: hint, status: .usage)
    }

    static let durationForms = "a duration is a whole number with s, m, h or d, as in 90s, 10m, 24h or 7d (a bare number is seconds)"

    /// argument parser's message, lowercased, with a pointer to the command's help.
    static func usage(_ text: String, command: [String], status: ExitStatus) -> MeishiFailure {
        var message = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if let first = message.first { message = first.lowercased() + message.dropFirst() }
        let help = "see '\((["meishi"] + command).joined(separator: " ")) --help'"
        // "The value 'x' is invalid for '--trust <trust>'. Please provide one of 'a', 'b' or 'c'." → one line and a hint.
        if let m = message.firstMatch(of: /^the value '(.*)' is invalid for '(-[^ ']+)[^']*'\. Please provide one of (.*)\.$/) {
            return MeishiFailure("\(m.2) cannot be '\(m.1)'", hint: "choose one of \(m.3)", status: status)
        }
        if let m = message.firstMatch(of: /^the value '(.*)' is invalid for '(-[^ ']+) <duration>'$/) {
            return MeishiFailure("\(m.2) cannot be '\(m.1)'", hint: durationForms, status: status)
        }
        return MeishiFailure(message, hint: help, status: status)
    }
}
