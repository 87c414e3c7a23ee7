import MeishiCard

/// Process exit statuses (sysexits.h), documented in the man page.
enum ExitStatus: Int32, Sendable {
    case ok = 0
    case failure = 1
    /// EX_USAGE: wrong arguments or options.
    case usage = 64
    /// EX_DATAERR: the input is not valid (bad payload, bad field value).
    case dataError = 65
    /// EX_NOINPUT: a file, identity or contact that must exist does not.
    case noInput = 66
    /// EX_UNAVAILABLE: no peer, or a service is not there.
    case unavailable = 69
    /// EX_CANTCREAT: an output file that is not replaced (an existing backup).
    case cannotCreate = 73
    /// EX_TEMPFAIL: timed out; for `send`, not delivered (nobody answered in time, nothing half-sent).
    case timedOut = 75
    /// EX_PROTOCOL: the exchange's guesses were spent (someone may be interfering).
    case protocolError = 76
    /// EX_NOPERM: a key file others can read, or a wrong or missing passphrase.
    case permission = 77
    /// EX_CONFIG: the configuration file has an unknown key or a bad value.
    case configuration = 78

    /// `send`: nobody answered within --timeout; the message was not delivered (EX_TEMPFAIL, 75).
    static let notDelivered = ExitStatus.timedOut
    /// `card edit`: the card changed while the editor was open; nothing saved, run it again (EX_TEMPFAIL, 75).
    static let cardChanged = ExitStatus.timedOut
}

/// An error as the user sees it: what failed and why, a likely fix, and the exit status.
struct MeishiFailure: Error, Equatable, Sendable, CustomStringConvertible {
    var message: String
    var hint: String?
    var status: ExitStatus
    /// More members for the `--json` error document (a verdict, a reason), beside error, hint, status.
    var details: [String: JSONValue] = [:]

    init(_ message: String, hint: String? = nil, status: ExitStatus = .failure, details: [String: JSONValue] = [:]) {
        self.message = message
        self.hint = hint
        self.status = status
        self.details = details
    }

    /// The JSON error document `--json` prints on standard output: `{"error", "hint", "status"}`.
    var jsonDocument: JSONValue {
        var doc = details
        doc["error"] = .string(message)
        doc["hint"] = hint.map(JSONValue.string) ?? .null
        doc["status"] = .number(Double(status.rawValue))
        return .object(doc)
    }

    var description: String { message }

    /// The same failure with `context` ("card.png") before its message.
    func located(_ context: String) -> MeishiFailure {
        // A message that names the file already ("cannot read x.png: …") is not prefixed again.
        message.contains(context + ":") || message.hasPrefix(context + " ") ? self : MeishiFailure("\(context): \(message)", hint: hint, status: status, details: details)
    }
}
