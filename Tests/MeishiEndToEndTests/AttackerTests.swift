import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiProximity

#if canImport(Glibc)
import Glibc
#endif

/// Issue 22: a stranger on the LAN against real `meishi` processes, over real sockets.
@Suite struct AttackerTests {
    /// A TCP relay on 127.0.0.1 in front of `port`: it forwards one connection both ways and runs
    /// `onFirstReply` (on its own thread) just before it forwards the first bytes the far side
    /// sends back. Returns its port.
    static func relay(to port: Int, onFirstReply: @escaping @Sendable () -> Void) -> Int {
        let (server, relayPort) = Loopback.listen()
        Thread.detachNewThread {
            let near = accept(server, nil, nil)
            close(server)
            guard near >= 0 else { return }
            let far = Loopback.connect(to: port)
            let back = Thread { Self.pump(far, near, first: onFirstReply) }
            back.start()
            Self.pump(near, far, first: nil)
            while !back.isFinished { Thread.sleep(forTimeInterval: 0.01) }
            close(near)
            close(far)
        }
        return relayPort
    }

    /// Copies `from` to `to` until `from` ends, running `first` before the first bytes go out.
    static func pump(_ from: Int32, _ to: Int32, first: (@Sendable () -> Void)?) {
        var first = first
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(from, &buf, buf.count)
            guard n > 0 else { break }
            first?()
            first = nil
            _ = buf.withUnsafeBytes { write(to, $0.baseAddress, n) }
        }
        shutdown(to, Int32(SHUT_WR))
    }

    /// Finding 1: one connection accepted while an honest `--code` exchange was being served, and
    /// still waiting when it ended, made the listener trap (signal 4) after both ACKs: the dialer
    /// stored the listener, the listener stored nothing. The waiting connection is opened once the
    /// listener has answered the honest dialer's first frame (through a relay), so it is always
    /// queued behind the exchange.
    @Test func aConnectionWaitingWhenTheExchangeEndsDoesNotCrashTheListener() throws {
        let mei = try CLI.withCard(name: "Mei Tanaka", email: "mei@example.org")
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let (listener, port, out, err) = try ExchangeCommandTests.startListener(mei, ["--code", "7-secret-words", "--json", "--timeout", "60"])
        let waiting = SharedSocket()
        let relayPort = Self.relay(to: port) { waiting.set(Loopback.connect(to: port)) }
        let honest = try ken.run(["exchange", "--peer", "127.0.0.1:\(relayPort)", "--code", "7-secret-words", "--json"])
        let (status, result, log) = HostilePeerTests.finish(listener, out, err)
        waiting.close()
        #expect(waiting.wasOpened, "the relay never opened the waiting connection")
        #expect(honest.status == 0, "\(honest.stderr)")
        #expect(listener.terminationReason == .exit && status == 0, "listener ended by \(listener.terminationReason == .exit ? "exit" : "signal") \(status):\n\(log)")
        #expect((result?["contact"] as? [String: Any])?["name"] as? String == "Ken Sato", "\(log)")
        let stored = try mei("contacts", "list", "--json").json["contacts"] as? [[String: Any]]
        #expect(stored?.map { $0["name"] as? String } == ["Ken Sato"])
    }

    /// Finding 1: three pairings abandoned after the code sample, with one more connection waiting
    /// when the third hangs up, ended the run with signal 4 instead of exit 76.
    @Test func threeAbortedPairingsAndAWaitingConnectionEndWithExit76() throws {
        let mei = try CLI.withCard(name: "Mei Tanaka", email: "mei@example.org")
        let (listener, port, out, err) = try ExchangeCommandTests.startListener(mei, ["--json", "--timeout", "60"])
        var waiting: Int32 = -1
        for n in 0..<3 {
            let fd = Loopback.connect(to: port)
            var wire = Wire(fd: fd)
            let session = ExchangeSession(role: .dialer, verifier: HostilePeerTests.verifier)
            wire.write(session.start()!)
            let sampled = (try? wire.read()).flatMap { try? session.receive($0) }
            #expect(sampled != nil, "pairing \(n + 1) got no code sample")
            if n == 2 { waiting = Loopback.connect(to: port) }  // queued behind the third pairing
            close(fd)  // the code does not suit: hang up before REVEAL
        }
        let (status, _, log) = HostilePeerTests.finish(listener, out, err)
        close(waiting)
        #expect(listener.terminationReason == .exit && status == 76,
                "listener ended by \(listener.terminationReason == .exit ? "exit" : "signal") \(status):\n\(log)")
        #expect(log.contains("someone may be interfering"), "\(log)")
        #expect((try mei("contacts", "list", "--json").json["contacts"] as? [Any])?.isEmpty ?? true)
    }

    /// Finding 1 over discovery: a third host opens a garbage connection to each announced port
    /// every 50 ms (tools/flood-connections.py). Both sides trapped once both had answered, and
    /// stored nothing; now the pair exchanges and each stores the other.
    @Test(.enabled(if: NamespaceExchangeTests.canRun, "skipped: needs root and iproute2 to create network namespaces (CI runs as root)"))
    func garbageConnectionsDuringDiscoveryDoNotCrashEitherSide() throws {
        let teardown = try NamespaceExchangeTests.hosts("mgc", 3)
        defer { teardown() }
        let attacker = Process()
        attacker.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        attacker.arguments = ["netns", "exec", "mgc3", "/usr/bin/python3",
                              Fixtures.root.appendingPathComponent("tools/flood-connections.py").path,
                              "--interface-address", "10.147.0.3", "--every", "0.05", "--seconds", "10"]
        let attackerOut = Pipe()
        attacker.standardOutput = attackerOut
        attacker.standardError = FileHandle.nullDevice
        try attacker.run()
        defer { if attacker.isRunning { attacker.terminate() } }
        Thread.sleep(forTimeInterval: 0.5)
        let mei = try CLI.withCard(name: "Mei Tanaka", email: "mei@example.org")
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let first = try NamespaceExchangeTests.exchange(in: "mgc1", home: mei.home, ["--timeout", "30"])
        let second = try NamespaceExchangeTests.exchange(in: "mgc2", home: ken.home, ["--timeout", "30"])
        let a = NamespaceExchangeTests.result(first), b = NamespaceExchangeTests.result(second)
        attacker.waitUntilExit()
        let flood = String(decoding: attackerOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(flood.hasPrefix("opened ") && !flood.hasPrefix("opened 0 "), "the attacker reached no port: \(flood)")
        for (run, name) in [(first.0, "Mei"), (second.0, "Ken")] {
            #expect(run.terminationReason == .exit, "\(name)'s side was killed by signal \(run.terminationStatus)")
        }
        #expect(a.0 == 0 && b.0 == 0, "\(a.2)\n\(b.2)")
        #expect((a.1["contact"] as? [String: Any])?["name"] as? String == "Ken Sato")
        #expect((b.1["contact"] as? [String: Any])?["name"] as? String == "Mei Tanaka")
        for cli in [mei, ken] {
            let stored = try cli("contacts", "list", "--json").json["contacts"] as? [[String: Any]]
            #expect(stored?.count == 1, "\(stored ?? [])")
        }
    }
}

/// A socket one thread opens and another closes.
final class SharedSocket: @unchecked Sendable {
    private let lock = NSLock()
    private var fd: Int32 = -1
    private var opened = false

    var wasOpened: Bool { lock.withLock { opened } }
    func set(_ new: Int32) { lock.withLock { fd = new; opened = true } }
    func close() { lock.withLock { if fd >= 0 { _ = Glibc.close(fd); fd = -1 } } }
}
