import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiProximity

/// A scripted hostile peer against a real `meishi exchange --listen`: every attack is refused
/// with its own message, and the listener stays up for the honest peer that comes last.
@Suite struct HostilePeerTests {
    typealias Wire = RelayAttackTests.Wire

    /// Connects, completes the handshake as the dialer and confirms the code.
    static func confirmedSession(port: Int) throws -> (Wire, ExchangeSession) {
        var wire = Wire(fd: RelayAttackTests.connectSocket(port))
        let session = ExchangeSession(role: .dialer, verifier: Self.verifier)
        wire.write(session.start()!)
        try session.receive(try wire.read()).send.forEach { wire.write($0) }
        _ = try session.receive(try wire.read())  // the listener's CONFIRM (--yes)
        wire.write(session.confirm(true))
        return (wire, session)
    }

    /// Sends `body` as our CARD and waits until the listener hangs up.
    static func sendCard(port: Int, _ body: (ExchangeSession) -> [UInt8]) throws {
        var (wire, session) = try confirmedSession(port: port)
        wire.write(body(session))
        while (try? wire.read()) != nil {}
        close(wire.fd)
    }

    static let verifier = CardVerifier(clock: { Int64(Date().timeIntervalSince1970) })

    static func card(_ key: Ed25519.SigningKey, age: Int64 = 0, did: String? = nil) -> SignedCard {
        var p = try! ProximityPayload.sign(disclosed: [.name: ["Mallory"]], level: .public, signingKey: key,
                                           boxKey: X25519.SecretKey().publicKey, timestamp: Int64(Date().timeIntervalSince1970) - age).payload
        if let did { p.senderDID = did }
        return p.signed(with: key)
    }

    @Test func everyAttackIsRefusedAndTheListenerStaysUp() throws {
        let mei = try CLI.withCard(name: "Mei Tanaka", email: "mei@example.org")
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let (listener, port, out, err) = try ExchangeCommandTests.startListener(mei, ["--json", "--timeout", "120"])
        let mallory = Ed25519.SigningKey()

        // 1. Truncated frame: a header for 100 bytes, 10 of them, then the connection closes.
        let t = RelayAttackTests.connectSocket(port)
        _ = ([0, 0, 0, 100] + [UInt8](repeating: 1, count: 10)).withUnsafeBytes { write(t, $0.baseAddress, $0.count) }
        close(t)
        // 2. A confirmation with a broken authentication tag.
        do {
            var wire = Wire(fd: RelayAttackTests.connectSocket(port))
            let s = ExchangeSession(role: .dialer, verifier: Self.verifier)
            wire.write(s.start()!)
            try s.receive(try wire.read()).send.forEach { wire.write($0) }
            _ = try s.receive(try wire.read())
            var sealed = s.confirm(true)
            sealed[sealed.count - 1] ^= 0x55
            wire.write(sealed)
            while (try? wire.read()) != nil {}
            close(wire.fd)
        }
        // 3. A card whose DID names another key (signed correctly by its signPubKey).
        let someoneElse = DIDKey.did(for: Ed25519.SigningKey().publicKey)
        try Self.sendCard(port: port) { $0.card(Self.card(mallory, did: someoneElse), signedBy: mallory) }
        // 4. A card replayed with a binding from another session.
        let replayed = Self.card(mallory)
        let foreign = mallory.signature(for: ExchangeSession.bindingInput(transcriptHash: [UInt8](repeating: 7, count: 32), cardBytes: replayed.bytes))
        try Self.sendCard(port: port) { $0.seal(.card, foreign.rawRepresentation + replayed.bytes) }
        // 5. A card signed an hour ago.
        try Self.sendCard(port: port) { $0.card(Self.card(mallory, age: 3600), signedBy: mallory) }

        // The honest peer still gets through.
        let honest = try ken.run(["exchange", "--peer", "127.0.0.1:\(port)", "--yes", "--json"])
        listener.waitUntilExit()
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let result = try JSONSerialization.jsonObject(with: out.fileHandleForReading.readDataToEndOfFile()) as? [String: Any]
        #expect(honest.status == 0, "\(honest.stderr)")
        #expect(listener.terminationStatus == 0, "\(log)")
        #expect((result?["contact"] as? [String: Any])?["name"] as? String == "Ken Sato")
        for expected in ["connection lost", "failed authentication", "does not match the key in senderDID",
                         "not bound to this session", "outside the exchange window"] {
            #expect(log.contains(expected), "missing \"\(expected)\" in:\n\(log)")
        }
        #expect(log.components(separatedBy: "still listening").count - 1 == 5, "\(log)")
        let stored = try mei("contacts", "list", "--json").json["contacts"] as? [[String: Any]]
        #expect(stored?.map { $0["name"] as? String } == ["Ken Sato"])
    }
}
