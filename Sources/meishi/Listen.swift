import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiStore

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
            stays in the history), and announced: "Ken Sato (#1) updated their card: title changed, \
            +phone"; a new name old → new ("Eve (#2) now calls themselves Mei Tanaka"), after a warning \
            when the new name or email is another contact's. \
            Started before the network is up (or when it goes away), it says it is not answering \
            probes yet and tries again every 3 seconds; interfaces that come up later are joined.

            With --relay it is also reachable from other networks ('meishi send --relay'): it holds, on a \
            magic-wormhole mailbox server, the mailbox each contact's pair key names for the day (one \
            connection per contact; only that contact can find it, and tomorrow's is unrelated), and \
            serves a contact who calls there through the transit relay with the same Noise KK delivery. \
            A mailbox server that does not answer at the start is an error (exit 69); one lost later is \
            tried again every 3 seconds.

            Without a terminal (the meishi-listen user unit: systemctl --user enable --now \
            meishi-listen) each note received is a line in the journal naming its sender \
            (journalctl --user -u meishi-listen), and a desktop notification through notify-send \
            names the sender; the text stays sealed unless --notify-text, and a note sent --once \
            is never shown there.

            Examples:
              meishi listen --for 1h
              meishi listen --port 0 --json
              meishi listen --notify
              meishi listen --relay
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: .customLong("for"), help: ArgumentHelp("Stop after this long (default: until interrupted).", valueName: "duration"))
    var duration: DurationArgument?

    @Option(help: "TCP port to listen on (0: any free port).")
    var port: Int = MessagePort.default

    @Option(help: ArgumentHelp("Also wait for notes through a magic-wormhole mailbox server and transit relay (alone: the configured or the public one).",
                               discussion: "For contacts on other networks ('meishi send --relay'). Needs the internet (or your own servers).",
                               valueName: "url"))
    var relay: String?

    @Option(help: ArgumentHelp("With --relay: the transit relay (default: the configured or the public one).", valueName: "tcp:host:port"))
    var transit: String?

    @Flag(help: "Print a summary as JSON when it stops.")
    var json = false

    @Flag(help: "Write lines for the systemd journal, each with its priority (automatic when standard error is the journal's stream).")
    var journal = false

    @Flag(inversion: .prefixedNo,
          help: "Raise a desktop notification (notify-send) naming the sender of each note (default: on for the journal, off at a terminal).")
    var notify: Bool?

    @Flag(help: "Put the note's text in the notification and the journal line (never a note sent --once).")
    var notifyText = false

    /// How long a listener may take to end after Ctrl-C or SIGTERM before meishi ends without it.
    static let stopGraceSeconds = 30.0

    func validate() throws {
        if notifyText && notify == false { throw ValidationError("--notify-text shows the text in a notification: drop --no-notify") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        if let duration { guard duration.seconds > 0 else { throw ValidationError("--for must be positive") } }
        try RelayChoice.validate(relay: relay, transit: transit)
    }

    func run(_ ctx: Context) async throws {
        let journal = self.journal || JournalOutput.isStandardError(ctx.environment)
        let out = journal ? Console(standardOutput: ctx.standardOutput, standardError: JournalOutput.sink(ctx.standardError)) : ctx.out
        do {
            try await listen(ctx, out: out, journal: journal)
        } catch let error where journal {
            // Reported here, so the journal records it with its priority; the status stays the same.
            let failure = (error as? MeishiFailure) ?? (error as? MeishiError).map { MeishiFailure($0) }
            guard let failure else { throw error }
            out.report(failure)
            throw ExitCode(failure.status.rawValue)
        }
    }

    private func listen(_ ctx: Context, out: Console, journal: Bool) async throws {
        let session = try global.session(ctx)
        let servers = try RelayChoice.servers(relay: relay, transit: transit, ctx, try Settings.load(ctx))
        let identity = try session.loadIdentity()
        let quiet = json && !journal
        let notifier = notifier(ctx, out: out, journal: journal)
        let showsText = notifyText
        let service = MessageService(home: session.home, clock: ctx.unixClock)
        let (port, duration) = (self.port, self.duration)
        // Ctrl-C (or SIGTERM) ends the wait like --for does: the summary is still printed. A
        // listener still running `stopGraceSeconds` after it (or at a second one) is left behind:
        // a mailbox server that accepts the connection and never answers holds it, and a person's
        // Ctrl-C or systemd's stop must end the command all the same.
        let stopping = StopRequest<MessageService.ListenOutcome>(graceSeconds: Self.stopGraceSeconds)
        let stop = SignalStop([SIGINT, SIGTERM]) { [terminal = ctx.terminal] signal in
            // The terminal echoed ^C: the summary starts on a line of its own.
            if signal == SIGINT, terminal.isInteractive { out.endLine() }
            stopping.ask()
        }
        defer { stop.release() }
        let listening = Task {
            try await service.listen(
                identity: identity, port: port, seconds: duration?.seconds, relay: servers,
                events: { event in out.note(NoteEvents.describe(event)) },
                cardUpdated: { outcome in if !quiet { Self.announce(outcome, on: out) } },
                keyRotated: { applied in if !quiet { out.note(CardRendering.rotated(applied)) } },
                note: { note in
                    if !quiet { out.note(Self.line(for: note, showingText: showsText)) }
                    notifier?.notify(note)
                },
                openingText: showsText,
                listening: { port, contacts in
                    // On standard error, --json too: a script using --port 0 learns the port here.
                    out.note("listening for messages from \(contacts) contact\(contacts == 1 ? "" : "s") on port \(port)"
                             + (servers.map { " and on the mailbox server \($0.mailbox)" } ?? "") + ", announcing nothing"
                             + (duration.map { " (for \($0.seconds)s)" } ?? (journal ? "" : " (Ctrl-C to stop)")))
                    if contacts == 0 { out.warn("no contact with a signed card can reach you yet: swap cards with 'meishi exchange' first") }
                })
        }
        // The serving task is unstructured: a cancelled caller (a test running it in-process) must
        // end it as a signal does.
        let ending = await withTaskCancellationHandler { await stopping.watch(listening) } onCancel: { stopping.ask() }
        let outcome: MessageService.ListenOutcome
        switch ending {
        case .ended(let result): outcome = try result.get()
        case .abandoned(let second):
            throw MeishiFailure(listenerHeldAfterStop: second ? nil : Self.stopGraceSeconds, relay: servers)
        }
        notifier?.finish()
        if json {
            out.json(.object([
                "port": .number(Double(outcome.port)), "stored": .number(Double(outcome.stored)),
                "duplicates": .number(Double(outcome.duplicates)), "refused": .number(Double(outcome.refused)),
                "cards": .number(Double(outcome.cards)), "relay": RelayChoice.json(servers),
            ]))
        } else {
            out.note("stopped: \(outcome.stored) stored, \(outcome.duplicates) repeated, \(outcome.refused) refused"
                     + (outcome.cards > 0 ? ", \(outcome.cards) newer card\(outcome.cards == 1 ? "" : "s")" : ""))
        }
    }

    /// The notifier asked for (`--notify`, `--notify-text`) or, for the journal, the one there is.
    private func notifier(_ ctx: Context, out: Console, journal: Bool) -> NoteNotifier? {
        guard notify ?? (journal || notifyText) else { return nil }
        if let notifier = NoteNotifier(environment: ctx.environment, showsText: notifyText, warn: { out.warn($0) }) { return notifier }
        let missing = "no desktop notifications: notify-send is not installed (Debian: libnotify-bin)"
        if notify == true || notifyText { out.warn(missing) } else { out.note(missing) }
        return nil
    }

    /// What `listen` says of a pushed card it stored: the change (a new name old → new, with the
    /// contact's id), after a warning for each other contact whose name or email it now uses (the
    /// look-alike check `contacts add` does; journal priority warning) when it changed its name,
    /// email or phone.
    static func announce(_ outcome: StoreOutcome, on out: Console) {
        let c = outcome.contact
        let identifying: Set<FieldName> = [.name, .email, .phone]
        let renamed = c.changes.contains {
            switch $0 {
            case .added(let f, _), .changed(let f): identifying.contains(f)
            case .withdrawn, .level: false
            }
        }
        if renamed, !outcome.conflicts.isEmpty {
            out.warnConflicts(c, who: CardRendering.name(c.name), outcome.conflicts, sharing: "name or email")
        }
        out.note(CardRendering.pushed(c))
    }

    /// The line a received note gets (on standard error, or in the journal).
    static func line(for note: MessageService.ReceivedNote, showingText: Bool) -> String {
        let who = CardRendering.who(note.sender)
        if note.once { return "a note from \(who), to be read once: read it with 'meishi inbox'" }
        if showingText, let text = note.text { return "a note from \(who): \(text)" }
        return "a note from \(who): read it with 'meishi inbox'"
    }
}

/// A stop asked for (a signal, or the caller's cancellation) that ends the wait even when what it
/// stops does not end: the task is cancelled at once, and `watch` gives up on it `graceSeconds`
/// later, or at a second request.
final class StopRequest<Success: Sendable>: @unchecked Sendable {
    enum Ending: Sendable {
        case ended(Result<Success, any Error>)
        /// Given up on: `graceSeconds` after the first request, or at a second one.
        case abandoned(atSecondRequest: Bool)
    }

    private let lock = NSLock()
    private let graceSeconds: Double
    private var requests = 0
    private var task: Task<Success, any Error>?
    private var ending: Ending?
    private var waiting: CheckedContinuation<Ending, Never>?

    init(graceSeconds: Double) { self.graceSeconds = graceSeconds }

    /// Cancels the task; the first request gives it `graceSeconds` to end, a second none.
    func ask() {
        let (task, first): (Task<Success, any Error>?, Bool) = lock.withLock {
            requests += 1
            return (self.task, requests == 1)
        }
        task?.cancel()
        if first {
            DispatchQueue.global().asyncAfter(deadline: .now() + graceSeconds) { self.end(.abandoned(atSecondRequest: false)) }
        } else {
            end(.abandoned(atSecondRequest: true))
        }
    }

    /// The task's result, or `.abandoned` when a stop was asked for and it did not end in time.
    func watch(_ task: Task<Success, any Error>) async -> Ending {
        if lock.withLock({ self.task = task; return requests > 0 }) { task.cancel() }
        Task { self.end(.ended(await task.result)) }
        return await withCheckedContinuation { continuation in
            let ended: Ending? = lock.withLock {
                if ending == nil { waiting = continuation }
                return ending
            }
            if let ended { continuation.resume(returning: ended) }
        }
    }

    private func end(_ e: Ending) {
        let continuation: CheckedContinuation<Ending, Never>? = lock.withLock {
            guard ending == nil else { return nil }
            ending = e
            defer { waiting = nil }
            return waiting
        }
        continuation?.resume(returning: e)
    }
}

/// Turns the given signals into a call of `action` while it is held, then restores them.
final class SignalStop: @unchecked Sendable {
    private let sources: [DispatchSourceSignal]
    private let signals: [Int32]

    /// `action` hears which signal came.
    init(_ signals: [Int32], _ action: @escaping @Sendable (Int32) -> Void) {
        self.signals = signals
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { action(number) }
            source.resume()
            return source
        }
    }

    func release() {
        sources.forEach { $0.cancel() }
        signals.forEach { signal($0, SIG_DFL) }
    }
}
