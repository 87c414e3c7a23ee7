import MeishiKit
import MeishiProximity

/// The words of what happens while notes travel (`ListenerEvent`, `DeliveryStep`, told by
/// MeishiProximity and MeishiKit as values): `listen` writes each event as a line on standard
/// error, `send` and `card push` their steps with `--verbose`. Failures inside an event are
/// worded by `NoteWording` (ErrorMessages/MessageFailures.swift).
enum NoteEvents {
    static func describe(_ event: MessageService.ListenEvent) -> String {
        switch event {
        case .listener(let e): describe(e)
        case .expiredNotPurged(let error): "expired messages not purged yet: \(error)"
        }
    }

    static func describe(_ event: ListenerEvent) -> String {
        switch event {
        case .summarised(let failure, let untold):
            describe(failure) + (untold > 0 ? " (and \(untold) more \(counting(failure)))" : "")
        case .refused(let from, let why): "refused a message from \(sender(from)): \(describe(why))"
        case .probesNotAnswered(let failure, let seconds, let port):
            "not answering probes yet (\(NoteWording.describe(failure))): trying again every \(seconds) s; "
                + "meanwhile senders need --peer HOST:\(port)"
        case .answeringProbes: "answering probes now"
        case .probesStopped(let error, let seconds): "stopped answering probes (\(error ?? "the socket closed")): trying again in \(seconds) s"
        case .answeringProbesOn(let names): "answering probes on \(names.joined(separator: ", ")) too"
        case .callNotAnswered(let maximum): "a contact called through the mailbox server while \(maximum) calls were in hand: not answered"
        case .callFailed(let failure): "a contact called through the mailbox server, but \(NoteWording.describe(failure))"
        }
    }

    private static func describe(_ failure: ListenerEvent.Summarised) -> String {
        switch failure {
        case .refused(let from, let why): "refused a message from \(sender(from)): \(describe(why))"
        case .cutIdle(let from): "cut a connection from \(sender(from)): it had sent no hello while others waited"
        case .probeIgnored(let from, .tooMany(let perSecond)): "ignored probes from \(from): more than \(perSecond) a second"
        case .probeIgnored(let from, .replayed): "ignored a replayed probe from \(from)"
        case .probeIgnored(let from, .unanswerable(let error)): "could not answer a probe from \(from): \(error)"
        case .mailboxLost(let failure, let seconds): "the mailbox server: \(NoteWording.describe(failure)); trying again every \(seconds) s"
        }
    }

    /// A sender by its address; a connection already gone has none.
    private static func sender(_ address: String?) -> String { address ?? "a sender whose address is gone" }

    /// What "(and N more …)" counts.
    private static func counting(_ failure: ListenerEvent.Summarised) -> String {
        switch failure {
        case .refused, .cutIdle: "failed connections"
        case .probeIgnored: "ignored probes"
        case .mailboxLost: "lost mailboxes"
        }
    }

    /// Why a listener refused a connection.
    static func describe(_ why: ListenerRefusal) -> String {
        switch why {
        case .notAHello: "not a message hello"
        case .message(let r): NoteWording.describe(r)
        case .handshakeNotAuthenticated: NoteWording.describe(MessageRefusal.authenticationFailed) + " (handshake)"
        case .malformedHandshake: "malformed handshake"
        case .staleHandshake(let skew): "stale handshake (a replay, or clocks more than \(skew)s apart)"
        case .replayedHandshake: "replayed handshake"
        case .noMessage: "no message after the handshake"
        case .card(let r): "a card: " + NoteWording.describe(r)
        case .unexpectedFrame: "unexpected frame"
        // The reason as the wire names it (docs/PROTOCOL.md), as the sender is told.
        case .protocolViolation(let e): e.wireReason
        case .connectionLost(let error): "connection lost (\(error))"
        }
    }

    /// A step of `send` or `card push` (`--verbose`).
    static func describe(_ step: DeliveryStep) -> String {
        switch step {
        case .callingOnMailbox(let mailbox, let day, let side): "calling on the mailbox server \(mailbox) (the pair's mailbox of day \(day), side \(side))"
        case .listenerAnswered(let transit): "the listener answered; connecting to the transit relay \(transit)"
        case .ignoredAnswer(let from): "ignored an answer from \(from) that does not prove the pair key"
        }
    }
}
