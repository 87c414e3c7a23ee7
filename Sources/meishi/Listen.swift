import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit

struct Listen: MeishiCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Receive notes from your contacts on this network.",
        discussion: """
            Makes this machine reachable for known contacts and stays silent otherwise: it announces \
            nothing, answers only a multicast probe carrying the tag of one of your contacts for the \
            current 5-minute window, and accepts a message only after a Noise KK handshake with that \
            contact's card key. A message from an unknown or unsigned contact, for someone else, \
            expired, oversized or failing authentication is refused with a logged reason and nothing is \
            stored; a message received twice is acknowledged again and stored once. Messages are kept \
            sealed: read them with 'meishi inbox'. A contact's newer card ('meishi card push') is \
            stored when it verifies, is that contact's and is newer than the one held (the earlier one \
            stays in the history), and announced: "Ken Sato updated their card: title changed, +phone".

            Examples:
              meishi listen --for 1h
              meishi listen --port 0 --json
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: .customLong("for"), help: ArgumentHelp("Stop after this long (default: until interrupted).", valueName: "duration"))
    var duration: DurationArgument?

    @Option(help: "TCP port to listen on (0: any free port).")
    var port: Int = MessagePort.default

    @Flag(help: "Print a summary as JSON when it stops.")
    var json = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        if let duration { guard duration.seconds > 0 else { throw ValidationError("--for must be positive") } }
    }

    func run(_ ctx: Context) async throws {
        let session = try global.session(ctx)
        let identity = try session.loadIdentity()
        let out = ctx.out, quiet = json
        let service = MessageService(home: session.home, clock: ctx.unixClock)
        let (port, duration) = (self.port, self.duration)
        let listening = Task {
            try await service.listen(
                identity: identity, port: port, seconds: duration?.seconds,
                log: { line in out.note(line) },
                received: { c in if !quiet { out.note("a message from \(CardRendering.who(c)): read it with 'meishi inbox'") } },
                cardUpdated: { outcome in if !quiet { out.note(CardRendering.pushed(outcome.contact)) } },
                listening: { port, contacts in
                    // On standard error, --json too: a script using --port 0 learns the port here.
                    out.note("listening for messages from \(contacts) contact\(contacts == 1 ? "" : "s") on port \(port), announcing nothing"
                             + (duration.map { " (for \($0.seconds)s)" } ?? " (Ctrl-C to stop)"))
                    if contacts == 0 { out.warn("no contact with a signed card can reach you yet: swap cards with 'meishi exchange' first") }
                })
        }
        // Ctrl-C (or SIGTERM) ends the wait like --for does: the summary is still printed.
        let stop = SignalStop([SIGINT, SIGTERM]) { listening.cancel() }
        defer { stop.release() }
        // The serving task is unstructured: a cancelled caller (a test running it in-process) must
        // end it as a signal does.
        let outcome = try await withTaskCancellationHandler { try await listening.value } onCancel: { listening.cancel() }
        if json {
            out.json(.object([
                "port": .number(Double(outcome.port)), "stored": .number(Double(outcome.stored)),
                "duplicates": .number(Double(outcome.duplicates)), "refused": .number(Double(outcome.refused)),
                "cards": .number(Double(outcome.cards)),
            ]))
        } else {
            out.note("stopped: \(outcome.stored) stored, \(outcome.duplicates) repeated, \(outcome.refused) refused"
                     + (outcome.cards > 0 ? ", \(outcome.cards) newer card\(outcome.cards == 1 ? "" : "s")" : ""))
        }
    }
}

/// Turns the given signals into a call of `action` while it is held, then restores them.
final class SignalStop: @unchecked Sendable {
    private let sources: [DispatchSourceSignal]
    private let signals: [Int32]

    init(_ signals: [Int32], _ action: @escaping @Sendable () -> Void) {
        self.signals = signals
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: action)
            source.resume()
            return source
        }
    }

    func release() {
        sources.forEach { $0.cancel() }
        signals.forEach { signal($0, SIG_DFL) }
    }
}
