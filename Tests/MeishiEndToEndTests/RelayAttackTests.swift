import Foundation
import Testing
import MeishiCard
@testable import MeishiProximity

/// An active attacker between two real `meishi exchange` processes: it terminates both TCP
/// connections and runs its own handshake with each side.
@Suite struct RelayAttackTests {
    @Test func relayInTheMiddleGetsDifferentCodesAndNoCardAcross() throws {
        let alice = try CLI.withCard(name: "Alice", email: "alice@example.org")
        let bob = try CLI.withCard(name: "Bob", email: "bob@example.org")
        // Bob listens; Alice believes the relay is Bob.
        let (bobProcess, bobPort, _, bobErr) = try ExchangeCommandTests.startListener(bob, ["--timeout", "10"])
        let (relayListen, relayPort) = Loopback.listen()
        defer { close(relayListen) }
        let codes = CodePair()
        let relay = Thread {
            let a = accept(relayListen, nil, nil)
            let b = Loopback.connect(to: bobPort)
            defer { close(a); close(b) }
            var toAlice = Wire(fd: a), toBob = Wire(fd: b)
            let asAlice = ExchangeSession(role: .dialer, verifier: HostilePeerTests.verifier)
            let asBob = ExchangeSession(role: .listener, verifier: HostilePeerTests.verifier)
            do {
                let hello = try toAlice.read()
                let response = try asBob.receive(hello).send
                toBob.write(asAlice.start()!)
                let reveal = try asAlice.receive(try toBob.read()).send
                response.forEach(toAlice.write)
                _ = try asBob.receive(try toAlice.read())
                reveal.forEach(toBob.write)
                codes.set(asBob.code, asAlice.code)
                _ = try asBob.receive(try toAlice.read())   // Alice's CONFIRM
                _ = try asAlice.receive(try toBob.read())   // Bob's CONFIRM
                toAlice.write(asBob.confirm(true))
                toBob.write(asAlice.confirm(true))
                // Alice's card arrives, bound to Alice's session with the relay; forward it to Bob.
                guard case .cardReceived? = try asBob.receive(try toAlice.read()).event else { return }
                // The relay cannot sign Alice's card for its session with Bob (replaying Alice's own
                // binding fails the same way: tested in ExchangeSessionTests).
                let aliceCard = asBob.peerCard!
                let forgedBinding = [UInt8](repeating: 0, count: 64)
                toBob.write(asAlice.seal(.card, forgedBinding + aliceCard.bytes))
                _ = try? toBob.read()  // Bob's REJECT, then Bob closes
            } catch {}
        }
        relay.start()
        let aliceRun = try alice.run(["exchange", "--peer", "127.0.0.1:\(relayPort)", "--yes", "--timeout", "10"])
        bobProcess.waitUntilExit()
        let bobLog = String(decoding: bobErr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let (aliceSees, bobSees) = codes.get()
        #expect(aliceSees != nil && bobSees != nil && aliceSees != bobSees)
        #expect(aliceRun.stderr.contains("code \(aliceSees ?? "?")"))
        #expect(bobLog.contains("code \(bobSees ?? "?")"))
        #expect(aliceRun.status != 0)
        #expect(bobProcess.terminationStatus == 75, "\(bobLog)")
        #expect(bobLog.contains("not bound to this session"), "\(bobLog)")
        for person in [alice, bob] {
            let list = try person("contacts", "list", "--json").json["contacts"] as? [Any]
            #expect(list?.isEmpty ?? true)
        }
    }
}

/// A tiny lock-protected pair of codes shared with the relay thread.
final class CodePair: @unchecked Sendable {
    private let lock = NSLock()
    private var value: (String?, String?) = (nil, nil)
    func set(_ a: String?, _ b: String?) { lock.lock(); value = (a, b); lock.unlock() }
    func get() -> (String?, String?) { lock.lock(); defer { lock.unlock() }; return value }
}
