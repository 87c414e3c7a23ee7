import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiProximity

/// A hostile dialer against a real `meishi exchange --listen --code`: it completes the card
/// exchange honestly, then lies in the common-friends phase. The listener refuses with a clear
/// message (and tells the peer why), and still stores the card.
@Suite(.serialized) struct CommonFriendsHostilePeerTests {
    static let code = "5-tulip-anchor"

    /// Runs the PAKE and the cards as the dialer; returns once both ACKs are through.
    static func exchangedSession(port: Int, key: Ed25519.SigningKey) throws -> (Wire, ExchangeSession) {
        var wire = Wire(fd: Loopback.connect(to: port))
        let session = ExchangeSession(role: .dialer, verifier: HostilePeerTests.verifier,
                                      binding: .init(code: try ExchangeCode(parsing: code)))
        wire.write(session.start()!)
        while !session.codeConfirmedByPAKE { try session.receive(try wire.read()).send.forEach { wire.write($0) } }
        wire.write(session.card(HostilePeerTests.card(key), signedBy: key))
        while session.peerCard == nil { _ = try session.receive(try wire.read()) }
        wire.write(session.acknowledge())
        while !session.acknowledgedByPeer { _ = try session.receive(try wire.read()) }
        return (wire, session)
    }

    /// The listener's next post-card message.
    static func nextPostCard(_ wire: inout Wire, _ session: ExchangeSession) throws -> (type: UInt8, content: [UInt8]) {
        guard case .postCard(let type, let content)? = try session.receive(try wire.read()).event else { throw CocoaError(.coderInvalidValue) }
        return (type, content)
    }

    static func hello(count: Int) -> [UInt8] {
        [1, FriendsMode.ecdh.wireValue, 1] + CommonFriendsPhase.u32(10_000) + CommonFriendsPhase.u32(count) + CommonFriendsPhase.u32(0)
    }

    @Test(arguments: ["identity point", "oversized frame", "lying count"])
    func theCardIsStoredAndThePhaseRefused(attack: String) throws {
        let mei = try CLI.withCard(name: "Mei Tanaka", email: "mei@example.org")
        let friend = try CLI.withCard(name: "Cleo Park", email: "cleo@example.org")
        try #require(try mei("contacts", "add", try friend.file("card.json", try friend.export())).status == 0)
        let (listener, port, out, err) = try ExchangeCommandTests.startListener(mei, ["--json", "--code", Self.code, "--timeout", "60"])
        let mallory = Ed25519.SigningKey()
        var (wire, session) = try Self.exchangedSession(port: port, key: mallory)
        let theirHello = try Self.nextPostCard(&wire, session)
        #expect(theirHello.type == 0x50 && theirHello.content.count == 15)
        let valid = PrivateSetIntersection.groupElement([1]).rawRepresentation
        switch attack {
        case "identity point":
            wire.write(session.postCard(type: 0x50, content: Self.hello(count: 3)))
            wire.write(session.postCard(type: 0x51, content: valid + [UInt8](repeating: 0, count: 32) + PrivateSetIntersection.groupElement([2]).rawRepresentation))
        case "oversized frame":
            wire.write(session.postCard(type: 0x50, content: Self.hello(count: 3)))
            _ = [UInt8]([0, 1, 0, 1, 0xAA]).withUnsafeBytes { write(wire.fd, $0.baseAddress, $0.count) }
        default:
            // Announces 2 items, sends 3.
            wire.write(session.postCard(type: 0x50, content: Self.hello(count: 2)))
            wire.write(session.postCard(type: 0x51, content: valid + PrivateSetIntersection.groupElement([2]).rawRepresentation
                                        + PrivateSetIntersection.groupElement([3]).rawRepresentation))
        }
        // What the listener says back before it hangs up (its ITEMS first, then an ABORT when it refused).
        var abort: String?
        while let m = try? Self.nextPostCard(&wire, session) { if m.type == 0x5F { abort = String(decoding: m.content, as: UTF8.self) } }
        close(wire.fd)
        let (status, result, log) = HostilePeerTests.finish(listener, out, err)
        #expect(status == 0, "\(log)")
        #expect((result?["contact"] as? [String: Any])?["did"] as? String == DIDKey.did(for: mallory.publicKey))
        let friends = result?["commonFriends"] as? [String: Any]
        #expect(friends?["status"] as? String == "failed")
        let reason = friends?["reason"] as? String ?? ""
        let expected = ["identity point": "item 1 of the peer's list is not a valid group element",
                        "oversized frame": "peer sent a 65537-byte frame (limit 65536)",
                        "lying count": "the peer's list holds 3 items where it announced 2"][attack]!
        #expect(reason.contains(expected) && reason.hasSuffix("the card exchange itself completed"), "\(reason)")
        if attack != "oversized frame" { #expect(abort == expected, "\(abort ?? "no ABORT")") }
        // The store holds the card, and no comparison with it.
        let common = try mei("friends", "common", DIDKey.did(for: mallory.publicKey), "--json").json
        #expect(common["compared"] as? Bool == false)
    }
}
