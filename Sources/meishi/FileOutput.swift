import MeishiKit

/// Writing a command's result to `-o FILE` or to standard output.
enum FileOutput {
    /// Writes `bytes` atomically to `path`, or to standard output for nil or "-".
    static func write(_ bytes: [UInt8], to path: String?, console: Console) throws(MeishiError) {
        if let path, path != "-" {
            try SecureFile.write(bytes, to: path, mode: 0o644)
        } else {
            console.bytes(bytes)
        }
    }
}
