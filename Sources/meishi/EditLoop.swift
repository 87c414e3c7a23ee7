import Foundation
import MeishiCard
import MeishiKit

/// The edit loop `card edit` and `contacts edit` share: the text is written to a new 0600 file in
/// the home, named for this run (`STEM-XXXXXX.txt`: two sessions shared one file, vi warned of
/// its swap file and one save was lost), `$VISUAL`/`$EDITOR` (else vi) runs on it through the
/// context, and what was saved is checked; on a mistake the editor opens again with the error at
/// the top, and saving the same mistake again, or an empty file, ends it with nothing changed.
/// `save` stores what was accepted; the file is removed however it ends, unless `save` throws
/// `KeepFile` (the edit could not be stored and the person needs the text).
enum EditLoop {
    /// A line of the saved text that was refused, counting from 1, and why.
    struct Problem: Error {
        let line: Int
        let message: String
    }

    /// What the loop says when it ends without a result, for what is being edited.
    struct Wording: Sendable {
        var cancelled: MeishiFailure
        var notSaved: @Sendable (_ message: String) -> MeishiFailure
        var interrupted: @Sendable (_ editor: String) -> MeishiFailure
        var failed: @Sendable (_ editor: String, _ status: Int32) -> MeishiFailure
    }

    /// Thrown by `save`: `failure` ends the loop and the edited file stays where it is.
    struct KeepFile: Error {
        let failure: MeishiFailure
    }

    /// Runs the editor on `text` until `parse` accepts what was saved, then `save`s the result
    /// (given the file's path, for a failure that keeps it).
    static func edit<T>(_ ctx: Context, home: Home, file stem: String, text initial: String, wording: Wording,
                        parse: (String) -> Result<T, Problem>, save: (T, _ path: String) throws -> Void) throws {
        let editor = ["VISUAL", "EDITOR"].lazy.compactMap { ctx.environment[$0] }.first { !$0.isEmpty } ?? "vi"
        let path = try temporaryFile(in: home, stem: stem)
        var keep = false
        defer { if !keep { unlink(path) } }
        var text = initial
        // The last text that failed: saving it again unchanged ends the loop (as a script would).
        var lastFailed: String?
        while true {
            try SecureFile.write(Array(text.utf8), to: path)
            try runEditor(editor, path, ctx, wording)
            let edited = String(decoding: try SecureFile.read(path, limit: 1 << 20), as: UTF8.self)
            if CardEditText.isEmpty(edited) { throw wording.cancelled }  // comments and blank lines only
            // Line numbers count the person's text, not the "# error:" lines put on top of it: a
            // file reopened and left as it was named the same line by two numbers (trial 7, F11).
            let attempt = withoutErrorLines(edited)
            switch parse(attempt) {
            case .success(let result):
                do {
                    return try save(result, path)
                } catch let kept as KeepFile {
                    keep = true
                    throw kept.failure
                }
            case .failure(let problem):
                let message = "line \(problem.line): " + problem.message
                if attempt == lastFailed { throw wording.notSaved(message) }
                ctx.out.warn(message)
                lastFailed = attempt
                text = "# error: \(message)\n" + attempt
            }
        }
    }

    /// A new file `STEM-XXXXXX.txt` in the home, mode 0600, its name unique to this run.
    static func temporaryFile(in home: Home, stem: String) throws -> String {
        try home.ensureExists()
        var template = Array((home.path + "/\(stem)-XXXXXX.txt").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemps($0.baseAddress!, 4) }
        guard fd >= 0 else { throw MeishiError.cannotWrite(path: home.path + "/\(stem)-XXXXXX.txt", reason: String(cString: strerror(errno))) }
        close(fd)
        return String(cString: template)
    }

    static func withoutErrorLines(_ text: String) -> String {
        text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).drop { $0.hasPrefix("# error:") }.joined(separator: "\n")
    }

    /// Runs the editor on `path` through the context; a failure leaves everything unchanged.
    static func runEditor(_ editor: String, _ path: String, _ ctx: Context, _ wording: Wording) throws {
        let status: Int32
        do { status = try ctx.runEditor(editor, path, ctx.environment) } catch {
            throw MeishiFailure.cannotStartEditor(editor, error.localizedDescription)
        }
        if [SIGINT, SIGQUIT, SIGTERM, SIGHUP].contains(status - 128) { throw wording.interrupted(editor) }
        guard status == 0 else { throw wording.failed(editor, status) }
    }
}
