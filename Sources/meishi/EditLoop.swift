import Foundation
import MeishiCard
import MeishiKit

/// The edit loop `card edit` and `contacts edit` share: the text is written to a 0600 file in
/// the home, `$VISUAL`/`$EDITOR` (else vi) runs on it through the context, and what was saved is
/// checked; on a mistake the editor opens again with the error at the top, and saving the same
/// mistake again, or an empty file, ends it with nothing changed. The file is removed however it
/// ends.
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

    /// Runs the editor on `text` until `parse` accepts what was saved; its result.
    static func edit<T>(_ ctx: Context, home: Home, file: String, text initial: String, wording: Wording,
                        parse: (String) -> Result<T, Problem>) throws -> T {
        let editor = ["VISUAL", "EDITOR"].lazy.compactMap { ctx.environment[$0] }.first { !$0.isEmpty } ?? "vi"
        try home.ensureExists()
        let path = home.path + "/" + file
        defer { unlink(path) }
        var text = initial
        // The last text that failed: saving it again unchanged ends the loop (as a script would).
        var lastFailed: String?
        while true {
            try SecureFile.write(Array(text.utf8), to: path)
            try runEditor(editor, path, ctx, wording)
            let edited = String(decoding: try SecureFile.read(path, limit: 1 << 20), as: UTF8.self)
            if CardEditText.isEmpty(edited) { throw wording.cancelled }  // comments and blank lines only
            switch parse(edited) {
            case .success(let result):
                return result
            case .failure(let problem):
                let message = "line \(problem.line): " + problem.message
                let attempt = withoutErrorLines(edited)
                if attempt == lastFailed { throw wording.notSaved(message) }
                ctx.out.warn(message)
                lastFailed = attempt
                text = "# error: \(message)\n" + attempt
            }
        }
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
