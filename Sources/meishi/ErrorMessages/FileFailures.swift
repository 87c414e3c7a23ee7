import MeishiKit

/// Files and standard input.
extension MeishiFailure {
    /// Files that cannot be read or written (`init(_: MeishiError)` routes them here).
    init(file e: MeishiError) {
        switch e {
        case .cannotRead(let path, let reason, let missing):
            self.init("cannot read \(path): \(reason)", hint: missing ? "check the path" : nil, status: .noInput)
        case .isDirectory(let path): self.init("cannot read \(path): it is a directory", status: .noInput)
        case .cannotWrite(let path, let reason):
            self.init("cannot write \(path): \(reason)", hint: SecureFile.isDirectory(path) ? "name a file inside it: -o \(path)/NAME" : nil,
                      status: .failure)
        case .alreadyExists(let path): self.init("\(path) already exists", status: .failure)
        case .fileTooLarge(let path, let limit):
            self.init("\(path) is larger than \(Self.size(limit)), the most meishi reads there",
                      hint: limit < 1 << 20 ? "is it the right file?" : "split the file", status: .dataError)
        default: preconditionFailure("not a file failure: \(e)")
        }
    }

    /// `16 KiB`, `8 MiB`, or bytes.
    static func size(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }

    /// An empty file, or nothing on standard input.
    static func emptyInput(_ file: String) -> MeishiFailure {
        file == "-" ? MeishiFailure("nothing arrived on standard input", hint: "pipe an image in: meishi scan - < photo.png", status: .noInput)
                    : MeishiFailure("\(file) is empty", status: .dataError)
    }

    static let standardInputNotText = MeishiFailure("standard input is not UTF-8 text", status: .dataError)
}

/// Issue 21 (second pass): files `contacts export --vdir` leaves as they are.
extension MeishiFailure {
    /// `contacts export --vdir`: files changed since meishi wrote them (or not written by it), left as they are.
    static func vdirFilesKept(_ names: [String]) -> String {
        let shown = names.prefix(5).map { Console.safe($0) }.joined(separator: ", ") + (names.count > 5 ? ", …" : "")
        return "kept \(names.count) file\(names.count == 1 ? "" : "s") changed since the last export (or not written by meishi): "
            + "\(shown); --overwrite replaces them"
    }
}
