import Foundation
import MeishiCard
import MeishiKit
import MeishiText
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `listen` with nobody at a terminal (the `meishi-listen` user unit, issue 27): its lines go to
/// the journal with their priorities, and each note received can raise a desktop notification.
enum JournalOutput {
    /// Standard error is the journal's stream. systemd sets JOURNAL_STREAM to the
    /// `DEVICE:INODE` of the stream it connected (systemd.exec(5)); a child whose standard error
    /// was redirected elsewhere inherits the variable but not the stream, so both are compared.
    static func isStandardError(_ environment: [String: String]) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(STDERR_FILENO, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    /// Standard error for the journal: every line starts with its syslog priority as sd-daemon(3)
    /// describes (`<3>` errors, `<4>` warnings, `<5>` hints, `<7>` debug, `<6>` the rest), which
    /// journald strips and records; the leading `meishi: ` goes, since the journal names the
    /// program already. What reaches here was sanitised by `Console`.
    static func sink(_ inner: Sink) -> Sink {
        Sink { bytes in
            var out = ""
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true) {
                out += priority(of: line) + "\n"
            }
            inner.write(Array(out.utf8))
        }
    }

    private static func priority(of line: Substring) -> String {
        guard line.hasPrefix("meishi: ") else { return "<6>" + line }
        let text = line.dropFirst("meishi: ".count)
        for (word, level) in [("error: ", 3), ("warning: ", 4), ("hint: ", 5), ("debug: ", 7)] where text.hasPrefix(word) {
            return "<\(level)>" + text
        }
        return "<6>" + text
    }
}

/// Desktop notifications for received notes through `notify-send` (Debian: libnotify-bin): the
/// sender's name, never the text unless asked (`--notify-text`), and never the text of a note
/// sent `--once`. They are raised one at a time off the listener's threads; a notifier that fails
/// (no session bus: a server, a user not logged in) is reported once and the notes are still
/// stored and logged.
final class NoteNotifier: Sendable {
    /// The program and the environment it runs in.
    let program: String
    let environment: [String: String]
    let showsText: Bool
    private let warn: @Sendable (String) -> Void
    private let queue = DispatchQueue(label: "meishi.listen.notify")
    private let failedOnce = Atomic<Bool>(false)

    /// nil when `notify-send` is not on the PATH.
    init?(environment: [String: String], showsText: Bool, warn: @escaping @Sendable (String) -> Void) {
        guard let program = Self.program(in: environment) else { return nil }
        self.program = program
        self.environment = environment
        self.showsText = showsText
        self.warn = warn
    }

    static func program(in environment: [String: String]) -> String? {
        let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { $0 + "/notify-send" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// notify-send's arguments for `note`. The summary is plain text; the body may be read as
    /// markup by the notification server, so `&`, `<` and `>` are escaped there, and notify-send
    /// reads C escapes in it (`\n`, `\\`), so each backslash is doubled; `--` ends the options, so
    /// a name starting with `-` is never read as one.
    static func arguments(for note: MessageService.ReceivedNote, showingText: Bool) -> [String] {
        let name = TerminalText.sanitized(note.sender.name ?? "someone")
        let shown = name.count > 64 ? String(name.prefix(63)) + "…" : name
        let body: String
        if showingText, let text = note.text {
            body = TerminalText.sanitized(text, keepingNewlines: true)
        } else {
            body = note.once ? "sent to be read once: read it with 'meishi inbox'" : "read it with 'meishi inbox'"
        }
        let markup = body.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "&", with: "&amp;")
            .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        return ["--app-name=meishi", "--category=im.received", "--icon=mail-message-new", "--", "Note from \(shown)", markup]
    }

    /// Raises the notification for `note` (returns at once).
    func notify(_ note: MessageService.ReceivedNote) {
        let arguments = Self.arguments(for: note, showingText: showsText)
        queue.async { self.run(arguments) }
    }

    /// Waits (at most `seconds`) for the notifications raised so far: `listen` ends after them.
    func finish(within seconds: Double = 10) {
        let done = DispatchSemaphore(value: 0)
        queue.async { done.signal() }
        _ = done.wait(timeout: .now() + seconds)
    }

    private func run(_ arguments: [String]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        let why: String?
        do {
            try process.run()
            // A notifier that hangs (a bus that never answers) is ended after 10 s.
            let timer = DispatchWorkItem { if process.isRunning { process.terminate() } }
            DispatchQueue.global().asyncAfter(deadline: .now() + 10, execute: timer)
            let said = errors.fileHandleForReading.readDataToEndOfFile().prefix(300)
            process.waitUntilExit()
            timer.cancel()
            let first = String(decoding: said, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
            why = process.terminationStatus == 0 ? nil
                : "exit status \(process.terminationStatus)" + (first.isEmpty ? "" : ": \(first)")
        } catch {
            why = "it could not be started"
        }
        guard let why, !failedOnce.exchange(true, ordering: .relaxed) else { return }
        warn("no desktop notification: notify-send failed (\(why)); notes are still stored, "
             + "further failures are not reported")
    }
}
