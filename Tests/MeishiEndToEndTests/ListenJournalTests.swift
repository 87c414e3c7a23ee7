import Foundation
import Testing
import MeishiCard
import MeishiKit
import MeishiStore
@testable import meishi

#if canImport(Glibc)
import Glibc
#endif

/// `listen` with nobody at a terminal, as the meishi-listen user unit runs it (issue 27): its
/// standard error is the journal's stream (JOURNAL_STREAM names its device and inode), each note
/// is a journal line with its priority, and a real `notify-send` (libnotify-bin) raises a desktop
/// notification on a private session bus (dbus-daemon) where tools/notification-server.py, a
/// notification server, records what arrived.
@Suite(.serialized) struct ListenJournalTests {
    static let notifySend = "/usr/bin/notify-send"
    static let server = Fixtures.root.appendingPathComponent("tools/notification-server.py").path

    static var canNotify: Bool {
        guard FileManager.default.isExecutableFile(atPath: notifySend), FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon")
        else { return false }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = ["-c", "from gi.repository import Gio"]
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }

    /// A session bus of its own with the notification server on it.
    struct Desktop {
        let address: String
        let notifications: String
        let processes: [Process]

        static func start() throws -> Desktop {
            let dir = Fixtures.temporaryDirectory()
            let config = """
                <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
                 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
                <busconfig><type>session</type><listen>unix:path=\(dir)/bus</listen>
                <auth>EXTERNAL</auth>
                <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
                </busconfig>
                """
            try config.write(toFile: dir + "/session.conf", atomically: true, encoding: .utf8)
            let bus = Process()
            bus.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
            bus.arguments = ["--config-file=\(dir)/session.conf", "--nofork"]
            // Their output goes to a file: a pipe inherited from the test would keep `swift test` waiting.
            FileManager.default.createFile(atPath: dir + "/log", contents: nil)
            let log = try FileHandle(forWritingTo: URL(fileURLWithPath: dir + "/log"))
            bus.standardOutput = log
            bus.standardError = log
            try bus.run()
            for _ in 0..<500 where !FileManager.default.fileExists(atPath: dir + "/bus") { usleep(10_000) }
            let address = "unix:path=\(dir)/bus"
            let server = Process()
            server.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            server.arguments = [ListenJournalTests.server, dir + "/notifications", dir + "/ready"]
            server.environment = ["DBUS_SESSION_BUS_ADDRESS": address, "PATH": "/usr/bin:/bin"]
            server.standardOutput = log
            server.standardError = log
            try server.run()
            let desktop = Desktop(address: address, notifications: dir + "/notifications", processes: [server, bus])
            for _ in 0..<1000 where !FileManager.default.fileExists(atPath: dir + "/ready") { usleep(10_000) }
            guard FileManager.default.fileExists(atPath: dir + "/ready") else {
                desktop.stop()
                Issue.record("the notification server did not start: \((try? String(contentsOfFile: dir + "/log", encoding: .utf8)) ?? "")")
                throw CancellationError()
            }
            return desktop
        }

        /// Each notification received: app, summary, body, icon, category.
        var received: [[String: String]] {
            let text = (try? String(contentsOfFile: notifications, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: String]
            }
        }

        func stop() {
            for p in processes where p.isRunning {
                kill(p.processIdentifier, SIGKILL)
                p.waitUntilExit()
            }
        }
    }

    /// `meishi listen` as the unit starts it: standard error is a file, and JOURNAL_STREAM names
    /// that file's device and inode (the way systemd names the journal's stream).
    struct UnitListener {
        let process: Process
        let journal: String

        static func start(_ person: MessagePerson, _ args: [String] = [], environment: [String: String],
                          journalStream: Bool = true) throws -> UnitListener {
            try start(home: person.home.path, args, environment: environment, journalStream: journalStream)
        }

        static func start(home: String, _ args: [String] = [], environment: [String: String],
                          journalStream: Bool = true) throws -> UnitListener {
            let journal = Fixtures.temporaryDirectory() + "/journal"
            FileManager.default.createFile(atPath: journal, contents: nil)
            var st = stat()
            try #require(stat(journal, &st) == 0)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: CLI.binary)
            p.arguments = ["--home", home, "listen", "--port", "0", "--for", "600"] + args
            var env = ["PATH": "/usr/bin:/bin", "HOME": home]
            if journalStream { env["JOURNAL_STREAM"] = "\(st.st_dev):\(st.st_ino)" }
            p.environment = env.merging(environment) { $1 }
            p.standardInput = FileHandle.nullDevice
            p.standardOutput = FileHandle.nullDevice
            p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: journal))
            try p.run()
            return UnitListener(process: p, journal: journal)
        }

        var lines: [String] {
            ((try? String(contentsOfFile: journal, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        /// The port it says it listens on.
        func port() async throws -> Int {
            for _ in 0..<3000 {
                if let line = lines.first(where: { $0.contains(" on port ") }),
                   let port = Int(line.split(separator: " on port ")[1].prefix { $0.isNumber }) { return port }
                try await Task.sleep(for: .milliseconds(10))
            }
            Issue.record("listen never said its port: \(lines)")
            throw CancellationError()
        }

        /// Stops it as systemd does (SIGTERM) and returns its status.
        func stop() async throws -> Int32 {
            kill(process.processIdentifier, SIGTERM)
            let p = process
            return try await offPool {
                p.waitUntilExit()
                return p.terminationStatus
            }
        }
    }

    /// Mei (whose name tries markup, an option and a terminal escape) and Ken know each other.
    static func people() throws -> (mei: MessagePerson, ken: MessagePerson) {
        let mei = try MessagePerson("-u critical <b>Mei</b>\u{1B}[31m & co"), ken = try MessagePerson("Ken")
        try mei.knows(ken)
        try ken.knows(mei)
        return (mei, ken)
    }

    /// `meishi send` as a process of its own: a sender in this test process would share the
    /// cooperative pool with the whole suite and, starved, outlast the listener's 5 s per connection.
    static func send(_ text: String, from mei: MessagePerson, port: Int, once: Bool = false) async throws {
        let r = try await offPool {
            try CLI(home: mei.home.path).run(["send", "Ken", text, "--peer", "127.0.0.1:\(port)", "--timeout", "60"] + (once ? ["--once"] : []))
        }
        #expect(r.status == 0 && r.stdout.hasPrefix("delivered to Ken"), "\(r.stderr)")
    }

    static let shownName = "-u critical <b>Mei</b>\\u{1B}[31m & co"

    @Test(.enabled(if: canNotify, "skipped: needs notify-send (libnotify-bin), dbus-daemon and python3-gi (make test installs them)"))
    func aNoteReachesTheJournalAndTheDesktopWithTheSendersNameOnly() async throws {
        let (mei, ken) = try Self.people()
        let desktop = try Desktop.start()
        defer { desktop.stop() }
        let listener = try UnitListener.start(ken, environment: ["DBUS_SESSION_BUS_ADDRESS": desktop.address])
        let port = try await listener.port()
        try await Self.send("the slides are at https://example.org/s", from: mei, port: port)
        try await Self.send("burn after reading", from: mei, port: port, once: true)
        #expect(try await listener.stop() == 0)
        let lines = listener.lines
        // Every line carries its priority; the notes are sanitised, named by sender, without their text.
        #expect(lines.allSatisfy { $0.hasPrefix("<6>") || $0.hasPrefix("<4>") }, "\(lines)")
        #expect(lines.contains("<6>a note from \(Self.shownName) (#1, signed): read it with 'meishi inbox'"), "\(lines)")
        #expect(lines.contains("<6>a note from \(Self.shownName) (#1, signed), to be read once: read it with 'meishi inbox'"), "\(lines)")
        #expect(lines.last == "<6>stopped: 2 stored, 0 repeated, 0 refused", "\(lines)")
        let journal = try String(contentsOfFile: listener.journal, encoding: .utf8)
        #expect(!journal.contains("slides") && !journal.contains("burn") && !journal.contains("\u{1B}"), "\(journal)")
        // Two notifications: plain-text summary naming the sender (escape shown, never acted on;
        // the leading '-' is not an option), body without the text.
        let received = desktop.received
        #expect(received.count == 2, "\(received)")
        #expect(received.allSatisfy { $0["app"] == "meishi" && $0["category"] == "im.received" && $0["summary"] == "Note from \(Self.shownName)" })
        #expect(received.map { $0["body"] ?? "" } == ["read it with 'meishi inbox'", "sent to be read once: read it with 'meishi inbox'"])
        // Still sealed in the store, and in the inbox.
        let inbox = try MessageService(home: ken.home, clock: { Int64(Date().timeIntervalSince1970) }).inbox(identity: ken.identity,
                                                                                                            includeShown: false)
        #expect(inbox.compactMap(\.text).sorted() == ["burn after reading", "the slides are at https://example.org/s"])
    }

    @Test(.enabled(if: canNotify, "skipped: needs notify-send (libnotify-bin), dbus-daemon and python3-gi (make test installs them)"))
    func notifyTextShowsTheTextEscapedButNeverANoteSentOnce() async throws {
        let (mei, ken) = try Self.people()
        let desktop = try Desktop.start()
        defer { desktop.stop() }
        let listener = try UnitListener.start(ken, ["--notify-text"], environment: ["DBUS_SESSION_BUS_ADDRESS": desktop.address])
        let port = try await listener.port()
        try await Self.send("see you at <b>booth</b> & 5\nbye\u{1B}[2J \\n", from: mei, port: port)
        try await Self.send("burn after reading", from: mei, port: port, once: true)
        #expect(try await listener.stop() == 0)
        let received = desktop.received
        #expect(received.map { $0["body"] ?? "" }
                == ["see you at &lt;b&gt;booth&lt;/b&gt; &amp; 5\nbye\\u{1B}[2J \\n", "sent to be read once: read it with 'meishi inbox'"],
                "\(received)")
        let journal = try String(contentsOfFile: listener.journal, encoding: .utf8)
        #expect(journal.contains("<6>a note from \(Self.shownName) (#1, signed): see you at <b>booth</b> & 5"), "\(journal)")
        #expect(!journal.contains("burn") && !journal.contains("\u{1B}"), "\(journal)")
        #expect(listener.lines.count == journal.split(separator: "\n").count && listener.lines.allSatisfy { $0.hasPrefix("<") })
    }

    /// No session bus (a server, or a user not logged in): the real notify-send fails; that is
    /// said once, as a warning, and the notes are still stored and logged.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: notifySend), "skipped: needs notify-send (libnotify-bin)"))
    func withoutASessionBusTheFailureIsSaidOnce() async throws {
        let (mei, ken) = try Self.people()
        let listener = try UnitListener.start(ken, environment: [:])
        let port = try await listener.port()
        try await Self.send("one", from: mei, port: port)
        try await Self.send("two", from: mei, port: port)
        #expect(try await listener.stop() == 0)
        let lines = listener.lines
        let warnings = lines.filter { $0.hasPrefix("<4>warning: no desktop notification: notify-send failed (exit status 1") }
        #expect(warnings.count == 1, "\(lines)")
        #expect(lines.filter { $0.hasPrefix("<6>a note from ") }.count == 2 && lines.last == "<6>stopped: 2 stored, 0 repeated, 0 refused",
                "\(lines)")
    }

    /// JOURNAL_STREAM inherited by a process whose standard error goes elsewhere (run from a
    /// service's shell into a file) is not the journal: plain lines, no notification unless asked.
    @Test func aJournalStreamThatIsNotStandardErrorIsNotTheJournal() async throws {
        let (mei, ken) = try Self.people()
        let listener = try UnitListener.start(ken, environment: ["JOURNAL_STREAM": "8:12345", "PATH": "/nonexistent"])
        let port = try await listener.port()
        try await Self.send("one", from: mei, port: port)
        #expect(try await listener.stop() == 0)
        let lines = listener.lines
        #expect(lines.contains("meishi: a note from \(Self.shownName) (#1, signed): read it with 'meishi inbox'"), "\(lines)")
        #expect(lines.allSatisfy { $0.hasPrefix("meishi: ") }, "\(lines)")
        // --journal asks for it; --notify without notify-send on the PATH says so, as a warning.
        let asked = try UnitListener.start(ken, ["--journal", "--notify"], environment: ["PATH": "/nonexistent"], journalStream: false)
        _ = try await asked.port()
        #expect(try await asked.stop() == 0)
        #expect(asked.lines.first == "<4>warning: no desktop notifications: notify-send is not installed (Debian: libnotify-bin)",
                "\(asked.lines)")
        #expect(asked.lines.allSatisfy { $0.hasPrefix("<") }, "\(asked.lines)")
    }

    /// An error under the journal carries error priority and the exit status it always has.
    @Test func anErrorUnderTheJournalHasItsPriority() async throws {
        let home = Fixtures.temporaryDirectory() + "/empty"
        let listener = try UnitListener.start(home: home, environment: [:])
        let status = try await offPool {
            listener.process.waitUntilExit()
            return listener.process.terminationStatus
        }
        #expect(status == 66, "\(listener.lines)")
        #expect(listener.lines.first?.hasPrefix("<3>error: ") == true && listener.lines.dropFirst().allSatisfy { $0.hasPrefix("<5>hint: ") },
                "\(listener.lines)")
    }
}

/// A pushed card that changes the contact's name (a tester's Eve renamed herself "Mei Tanaka"
/// by push, announced as "Mei Tanaka updated their card: name changed").
@Suite struct PushedRenameTests {
    static func contact(_ did: String, _ fields: [FieldName: [String]], at t: Int64) -> Contact {
        Contact(did: did, fields: fields, level: .public, trust: .signed, source: .push, seen: t, cardTimestamp: t,
                payload: Data("card \(did) \(t)".utf8))
    }

    /// The listener says old → new with the id, after a warning (journal priority 4) naming the
    /// contact whose name the card now uses; one email replaced by another is "email changed".
    @Test func aRenameByPushIsSaidOldToNewAndWarned() throws {
        let store = try ContactStore(path: Fixtures.temporaryDirectory() + "/meishi.sqlite")
        _ = try store.store(Self.contact("did:key:z6MkMei", [.name: ["Mei Tanaka"], .email: ["mei@example.org"]], at: 100))
        _ = try store.store(Self.contact("did:key:z6MkEve", [.name: ["Eve"], .email: ["eve@example.org"]], at: 100))
        let outcome = try store.store(Self.contact("did:key:z6MkEve", [.name: ["Mei Tanaka"], .email: ["mei@example.net"]], at: 200))
        let recorder = Recorder()
        let journal = Console(standardOutput: Sink { recorder.appendOut($0) }, standardError: JournalOutput.sink(Sink { recorder.appendErr($0) }))
        Listen.announce(outcome, on: journal)
        let lines = recorder.stderr.split(separator: "\n").map(String.init)
        #expect(lines == ["<4>warning: Mei Tanaka uses the same name or email as contact #1 Mei Tanaka (signed) under a different key: "
                          + "possible impersonation",
                          "<6>Eve (#2) now calls themselves Mei Tanaka; email changed"], "\(lines)")
        // `contacts changes` says it the same way, under the name the card had then.
        let changes = try store.receivedChanges()
        #expect(changes.count == 1 && changes.first?.previousName == "Eve" && changes.first?.name == "Mei Tanaka")
        #expect(CardRendering.updated(name: changes[0].name, previousName: changes[0].previousName, id: 2, how: "push",
                                      changes: changes[0].changes) == "Eve (#2, push) now calls themselves Mei Tanaka; email changed")
        // The same card signed again changes nothing: no warning, and no row in `contacts changes`.
        let again = try store.store(Self.contact("did:key:z6MkEve", [.name: ["Mei Tanaka"], .email: ["mei@example.net"]], at: 300))
        let quiet = Recorder()
        Listen.announce(again, on: Console(standardOutput: Sink { quiet.appendOut($0) }, standardError: Sink { quiet.appendErr($0) }))
        #expect(quiet.stderr == "meishi: Mei Tanaka (#2) updated their card (nothing changed)\n", "\(quiet.stderr)")
        #expect(try store.receivedChanges().count == 1)
    }
}

/// `meishi listen` on a terminal, as a person runs it.
@Suite struct ListenTerminalTests {
    /// Ctrl-C ends `listen` with its summary; the terminal echoes ^C, and the summary used to
    /// follow it on the same line ("^Cmeishi: stopped: …").
    @Test(.enabled(if: ExchangePromptTests.script != nil, "skipped: needs script(1)"))
    func ctrlCPutsTheSummaryOnALineOfItsOwn() throws {
        let mei = try CLI.withCard(name: "Mei Tanaka", email: "mei@example.org")
        let host = try ExchangePromptTests.OnTerminal(mei, ["listen", "--port", "0"])
        defer { if host.process.isRunning { host.process.terminate() } }
        #expect(host.waitFor("listening for messages from 0 contacts on port [0-9]+") != nil, "\(host.shown)")
        host.typing.fileHandleForWriting.write(Data("\u{03}".utf8))
        #expect(host.exited(within: 20), "Ctrl-C did not end listen:\n\(host.shown)")
        #expect(host.shown.range(of: #"(^|\n)meishi: stopped: 0 stored"#, options: .regularExpression) != nil,
                "the summary did not start a line after ^C:\n\(host.shown.debugDescription)")
    }
}
