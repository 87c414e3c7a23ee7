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
    /// EX_TEMPFAIL: timed out; for `send`, not delivered (nobody answered in time, nothing half-sent).
    case timedOut = 75
    /// EX_PROTOCOL: the exchange's guesses were spent (someone may be interfering).
    case protocolError = 76
    /// EX_NOPERM: a key file others can read, or a wrong or missing passphrase.
    case permission = 77

    /// `send`: nobody answered within --timeout; the message was not delivered (EX_TEMPFAIL, 75).
    static let notDelivered = ExitStatus.timedOut
}

/// An error as the user sees it: what failed and why, a likely fix, and the exit status.
struct MeishiFailure: Error, Equatable, Sendable, CustomStringConvertible {
    var message: String
    var hint: String?
    var status: ExitStatus

    init(_ message: String, hint: String? = nil, status: ExitStatus = .failure) {
        self.message = message
        self.hint = hint
        self.status = status
    }

    var description: String { message }

    /// The same failure with `context` ("card.png") before its message.
    func located(_ context: String) -> MeishiFailure {
        MeishiFailure("\(context): \(message)", hint: hint, status: status)
    }
}
