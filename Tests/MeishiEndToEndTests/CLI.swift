import Foundation
import Testing

/// Runs the built `meishi` binary in its own temporary home and captures what it prints.
struct CLI {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] ?? [:]
        }
    }

    let home: String
    var environment: [String: String] = [:]

    static var binary: String {
        if let override = ProcessInfo.processInfo.environment["MEISHI_BIN"] { return override }
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("meishi").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        let alt = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("meishi").path
        if FileManager.default.isExecutableFile(atPath: alt) { return alt }
        return Fixtures.root.appendingPathComponent(".build/debug/meishi").path
    }

    init(home: String = Fixtures.temporaryDirectory() + "/home") { self.home = home }

    @discardableResult
    func callAsFunction(_ arguments: String..., stdin: Data? = nil) throws -> Result {
        try run(arguments, stdin: stdin)
    }

    func run(_ arguments: [String], stdin: Data? = nil, extraEnvironment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["MEISHI_HOME"] = home
        env["MEISHI_PASSPHRASE"] = nil
        env["MEISHI_LOG"] = nil
        env.merge(environment) { $1 }
        env.merge(extraEnvironment) { $1 }
        process.environment = env
        let out = Pipe(), err = Pipe(), inp = Pipe()
        process.standardOutput = out
        process.standardError = err
        // The input comes from a file, not written into a pipe: a command that ends without reading
        // all of it (a usage error, --version) would make that write raise SIGPIPE, which ends the
        // whole test process (a full run died of it once). No input is an empty pipe.
        let inputDirectory = stdin.map { _ in Fixtures.temporaryDirectory() }
        defer { if let inputDirectory { try? FileManager.default.removeItem(atPath: inputDirectory) } }
        if let stdin, let inputDirectory {
            FileManager.default.createFile(atPath: inputDirectory + "/stdin", contents: stdin)
            process.standardInput = FileHandle(forReadingAtPath: inputDirectory + "/stdin")
        } else {
            process.standardInput = inp
        }
        try process.run()
        try inp.fileHandleForWriting.close()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
                      stderr: String(decoding: e, as: UTF8.self))
    }

    /// A home with an identity (every command but init, verify and scan --raw needs one).
    static func initialised() throws -> CLI {
        let cli = CLI()
        try #require(try cli("init").status == 0)
        return cli
    }

    /// A home with an identity and the typical card.
    static func withCard(name: String = "Mei Tanaka", email: String = "mei.tanaka@example.org") throws -> CLI {
        let cli = CLI()
        try #require(try cli("init").status == 0)
        try #require(try cli("card", "set", "name", name).status == 0)
        try #require(try cli("card", "set", "org", "Example Robotics").status == 0)
        try #require(try cli("card", "add", "email", email).status == 0)
        try #require(try cli("card", "add", "phone", "+81 90 1234 5678").status == 0)
        return cli
    }

    func export(_ extra: String...) throws -> Data {
        let r = try run(["card", "export"] + extra)
        #expect(r.status == 0, "\(r.stderr)")
        return Data(r.stdout.utf8)
    }

    func file(_ name: String, _ data: Data) throws -> String {
        let path = (home as NSString).deletingLastPathComponent + "/" + name
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The project's .venv python when it can import every module named, else nil.
    static func venvPython(importing modules: String) -> String? {
        let py = Fixtures.root.appendingPathComponent(".venv/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: py) else { return nil }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: py)
        p.arguments = ["-c", "import " + modules]
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return nil }
        p.waitUntilExit()
        return p.terminationStatus == 0 ? py : nil
    }

    func storeDigest() -> Data? {
        let db = home + "/meishi.sqlite"
        let r = try? CLI(home: home).run(["contacts", "list", "--json"])
        return r.map { Data($0.stdout.utf8) } ?? FileManager.default.contents(atPath: db)
    }
}
