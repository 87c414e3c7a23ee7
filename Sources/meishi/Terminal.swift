import Synchronization
import Foundation
import MeishiCard
import MeishiCrypto
import MeishiProximity
import MeishiText

/// Ctrl-C while a question is open answers it "no" instead of killing the process, so that the
/// answer still reaches whoever waits for it (the other side of an exchange): `answeringNo` arms
/// a SIGINT handler for the duration of its body; `LiveTerminal.ask` returns nil when it fired.
enum PromptInterruption {
    nonisolated(unsafe) private static var fired: sig_atomic_t = 0
    nonisolated(unsafe) private static var armed: sig_atomic_t = 0
    /// The question is void (the pairing behind it was lost): `withdrawable` sets it.
    private static let withdrawn = Atomic<Bool>(false)

    static var requested: Bool { armed != 0 && (fired != 0 || isWithdrawn) }
    static var isArmed: Bool { armed != 0 }
    static var isWithdrawn: Bool { withdrawn.load(ordering: .sequentiallyConsistent) }

    /// `answeringNo` for a question that the task's cancellation withdraws: the exchange cancels
    /// the question when the pairing behind it is lost (the peer hung up or stopped answering), so
    /// the question does not stay live to "confirm" a dead pairing, and Ctrl-C afterwards ends the
    /// run instead of answering nobody (a tester's finding). `withdrawn` is true when that happened.
    /// The question runs on a thread of its own (`BlockingWork`): the exchange it belongs to goes
    /// on meanwhile on the event loop, and hears the other side's answer.
    static func withdrawable<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> (value: T, interrupted: Bool, withdrawn: Bool) {
        withdrawn.store(false, ordering: .sequentiallyConsistent)
        return await withTaskCancellationHandler {
            let (value, interrupted) = await BlockingWork.run { answeringNo(body) }
            let void = isWithdrawn
            return (value, interrupted && !void, void)
        } onCancel: {
            withdrawn.store(true, ordering: .sequentiallyConsistent)
        }
    }

    /// Runs `body` with Ctrl-C turned into a "no" (true in `interrupted` when it was pressed).
    static func answeringNo<T>(_ body: () -> T) -> (value: T, interrupted: Bool) {
        fired = 0
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in PromptInterruption.fired = 1 }
        sigemptyset(&action.sa_mask)
        var old = sigaction()
        sigaction(SIGINT, &action, &old)
        armed = 1
        defer {
            armed = 0
            sigaction(SIGINT, &old, nil)
        }
        let value = body()
        return (value, fired != 0)
    }
}

/// Whether a question is on the terminal, unanswered, with the cursor at its end: a message
/// printed then (the other side ended the exchange meanwhile) starts on a line of its own
/// instead of after "[y/N] " (found by a fresh tester at 100 columns).
enum OpenPrompt {
    private static let open = Atomic<Bool>(false)
    static func set(_ value: Bool) { open.store(value, ordering: .sequentiallyConsistent) }
    /// True once for an open question, which is then treated as closed by the line break.
    static func close() -> Bool { open.exchange(false, ordering: .sequentiallyConsistent) }
}

/// The process's controlling terminal: questions on /dev/tty (never on stdout), hidden input.
struct LiveTerminal: TerminalIO {
    var isInteractive: Bool {
        guard isatty(STDIN_FILENO) == 1 else { return false }
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
    var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    var width: Int? { size.map { Int($0.ws_col) } }
    var height: Int? { size.flatMap { $0.ws_row > 0 ? Int($0.ws_row) : nil } }

    /// The window size of standard error's terminal, else standard output's.
    private var size: winsize? {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0 || ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0,
              size.ws_col > 0 else { return nil }
        return size
    }

    func waitForEndOfLine() {
        let fd = open("/dev/tty", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { while true { sleep(3600) } }
        defer { close(fd) }
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1, byte != 0x0A, byte != 0x0D {}
    }

    func reply(_ question: String, timeout: Double?) -> TerminalReply {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return .ended }
        defer { close(fd) }
        _ = question.withCString { Glibc.write(fd, $0, strlen($0)) }
        OpenPrompt.set(true)
        defer { OpenPrompt.set(false) }
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        var line: [UInt8] = []
        while line.count < 256 {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if PromptInterruption.requested {
                // A withdrawn question, or one Ctrl-C answered, ends its line: what is said next
                // starts a line of its own (after "[y/N] ^C" before, a tester's finding).
                if OpenPrompt.close() { _ = "\n".withCString { Glibc.write(fd, $0, 1) } }
                return .ended
            }
            let left = deadline.map { Int32(max(0, $0.timeIntervalSinceNow) * 1000) } ?? -1
            // In slices while Ctrl-C may answer the question: the signal can land on any thread.
            let wait = PromptInterruption.isArmed ? (left < 0 ? 100 : min(left, 100)) : left
            let ready = poll(&pfd, 1, wait)
            if ready < 0 { if errno == EINTR { continue }; return .ended }
            if ready == 0, PromptInterruption.isArmed, left != 0 { continue }
            if ready == 0 {
                _ = "\n".withCString { Glibc.write(fd, $0, 1) }
                return .timedOut
            }
            var byte: UInt8 = 0
            guard read(fd, &byte, 1) == 1 else {
                _ = "\n".withCString { Glibc.write(fd, $0, 1) }  // Ctrl-D: the next message starts a line
                return .ended
            }
            if byte == 0x0A || byte == 0x0D { break }
            line.append(byte)
        }
        return .line(String(decoding: line, as: UTF8.self))
    }

    func readHidden(_ prompt: String) -> HiddenReply? {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard isatty(fd) == 1 else { return nil }
        var old = termios()
        guard tcgetattr(fd, &old) == 0 else { return nil }
        var quiet = old
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)
        // Echo off before the prompt shows: TCSAFLUSH drops what was typed before it, and so
        // dropped a passphrase (or Ctrl-D) typed the moment the prompt appeared.
        tcsetattr(fd, TCSAFLUSH, &quiet)
        defer { tcsetattr(fd, TCSAFLUSH, &old) }
        _ = prompt.withCString { Glibc.write(fd, $0, strlen($0)) }
        var line = [UInt8](repeating: 0, count: 1025)
        defer { wipe(&line) }
        var count = 0
        var byte: UInt8 = 0
        var ended = false
        while count < 1024 {
            guard read(fd, &byte, 1) == 1 else {
                ended = true
                break
            }
            if byte == 0x0A || byte == 0x0D { break }
            line[count] = byte
            count += 1
        }
        byte = 0
        // Ctrl-D: no line break was echoed, so the next message would follow the prompt; at the
        // start of the line it answers nothing (the prompt is cancelled).
        if ended { _ = "\n".withCString { Glibc.write(fd, $0, 1) } }
        return ended && count == 0 ? .ended : .text(SecureBytes(copying: line[0..<count]))
    }
}

extension TerminalIO {
    /// Asks a yes/no question; anything but y/yes (or no answer within `timeout`) is no.
    func confirm(_ question: String, timeout: Double? = nil) -> Bool {
        guard let answer = ask(question, timeout: timeout)?.trimmingCharacters(in: .whitespaces).lowercased() else { return false }
        return answer == "y" || answer == "yes"
    }

    /// Asks whether the other screen shows `code`: on one line where it fits, else with the code
    /// on a line of its own, so that a narrow terminal never wraps it in the middle (at 40
    /// columns "123 456" was cut after "123 4").
    func confirmCode(_ code: String, timeout: Double? = nil) -> Bool {
        answerCode(code, timeout: timeout) == .same
    }

    /// `confirmCode`, saying when there was no answer at all (`timeout` passed, end of input).
    func answerCode(_ code: String, timeout: Double? = nil) -> CodeAnswer {
        let line = "Check that the other screen shows \(code) — same? [y/N] "
        let question = DisplayWidth.of(line) < (width ?? 80) ? line : "Check that the other screen shows\n    \(code)\nsame? [y/N] "
        switch reply(question, timeout: timeout) {
        case .line(let answer):
            let a = answer.trimmingCharacters(in: .whitespaces).lowercased()
            return CodeAnswer(a == "y" || a == "yes")
        case .timedOut: return .none(timedOut: true)
        case .ended: return .none(timedOut: false)
        }
    }

    /// Lists the peers announcing and asks which one (nil when the answer is not a listed number).
    func choose(_ peers: [DiscoveredPeer], timeout: Double? = nil) -> DiscoveredPeer? {
        var question = "\r\u{1B}[Kseveral people are announcing:\n"
        for (n, p) in peers.enumerated() {
            question += "  \(n + 1)) \(TerminalText.sanitized(p.announcement.alias ?? "(no alias)")) at \(p.host)\n"
        }
        let which = "Which one? [1-\(peers.count)] "
        question += which
        // A number out of range (or none) asks again; no answer within `timeout` or the end of input chooses nobody.
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        while let answer = ask(question, timeout: deadline.map { max(0, $0.timeIntervalSinceNow) }) {
            if let n = Int(answer.trimmingCharacters(in: .whitespaces)), (1...peers.count).contains(n) { return peers[n - 1] }
            question = "a number from 1 to \(peers.count), please. " + which
        }
        return nil
    }
}

/// A one-line spinner on standard error while waiting (only on a terminal; else one note).
final class Spinner: @unchecked Sendable {
    private let enabled: Bool
    private let sink: Sink
    /// Columns of the terminal: a longer line would wrap, and `\r` could not redraw it.
    private let width: Int
    private var timer: DispatchSourceTimer?
    private let queue = DispatchQueue(label: "meishi.spinner")

    init(enabled: Bool, sink: Sink, width: Int?) {
        self.enabled = enabled
        self.sink = sink
        self.width = width ?? 80
    }

    func start(_ text: String) {
        guard enabled else {
            sink.write(Array("meishi: \(text)\n".utf8))
            return
        }
        let frames = Array("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
        let room = max(8, width - 3)
        let text = text.count > room ? String(text.prefix(room - 1)) + "…" : text
        var n = 0
        let t = DispatchSource.makeTimerSource(queue: queue)
        t.schedule(deadline: .now(), repeating: .milliseconds(100))
        t.setEventHandler { [sink] in
            sink.write(Array("\r\(frames[n % frames.count]) \(text)\u{1B}[K".utf8))
            n += 1
        }
        queue.sync { timer = t }
        t.resume()
    }

    /// Writes `body`'s output on a line of its own: the spinner line is cleared first and
    /// redrawn at the next tick, so log lines and the spinner never share a line.
    func interrupt(_ body: () -> Void) {
        queue.sync {
            if enabled, timer != nil { sink.write(Array("\r\u{1B}[K".utf8)) }
            body()
        }
    }

    func stop() {
        queue.sync {
            guard let t = timer else { return }
            t.cancel()
            timer = nil
            sink.write(Array("\r\u{1B}[K".utf8))
        }
    }
}
