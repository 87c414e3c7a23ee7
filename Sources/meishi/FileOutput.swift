import Foundation
import MeishiCard
import MeishiKit

/// Writing a command's result to `-o FILE` or to standard output.
enum FileOutput {
    /// Writes `bytes` atomically to `path` (never over one of `home`'s own files), or to standard
    /// output for nil or "-". A `text` document (a card, a vCard, a QR's text) may hold other
    /// people's text: on a terminal it is escaped like every message, and written unchanged to a
    /// pipe or a file. A file gets `mode` (`--mode`; 0600 by default: it holds cards or contacts),
    /// whatever the umask.
    static func write(_ bytes: [UInt8], to path: String?, mode: FileModeArgument?, ctx: Context, home: Home,
                      text: Bool = false) throws(MeishiError) {
        if let path, path != "-" {
            try SecureFile.writeOutput(bytes, to: path, mode: mode_t(mode?.bits ?? FileModeArgument.defaultBits), home: home)
        } else if text, ctx.terminal.standardOutputIsTerminal {
            let document = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
            ctx.out.line(String(document.hasSuffix("\n") ? document.dropLast() : Substring(document)))
        } else {
            ctx.out.bytes(bytes)
        }
    }
}
