import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiProximity

/// fixtures/common-friends.json: every message of docs/PROTOCOL.md §8 for fixed scalars and sets,
/// so another implementation can check itself. `MEISHI_WRITE_FIXTURES=1` rewrites the file (then
/// review the diff: the vectors must only change with the protocol).
@Suite struct CommonFriendsVectorTests {
    static let path = "common-friends.json"
    static let transcript = SHA256.hash(Array("meishi common-friends vector transcript".utf8))
    static let dialerScalar = SecureBytes(copying: Hex.decode("0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f00")!)
    static let listenerScalar = SecureBytes(copying: Hex.decode("2122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f00")!)
    static let proofScalar = SecureBytes(copying: Hex.decode("4142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f00")!)
    static let dialerDIDs = ["did:key:z6MkCleoPark", "did:key:z6MkDevRao", "did:key:z6MkEveMoss"]
    static let dialerExtras = ["email:cleo@example.org"]
    static let listenerDIDs = ["did:key:z6MkDevRao", "did:key:z6MkCleoPark", "did:key:z6MkFayLin"]
    static let listenerExtras = ["email:cleo@example.org", "phone:+819012345678"]

    static func hex(_ points: [Ristretto255.Point]) -> [String] { points.map { Hex.encode($0.rawRepresentation) } }

    /// The vectors as computed now.
    static func compute() throws -> [String: Any] {
        let a = try Ristretto255.Scalar(rawRepresentation: dialerScalar), b = try Ristretto255.Scalar(rawRepresentation: listenerScalar)
        let da = (dialerDIDs + dialerExtras).map { Array($0.utf8) }, lb = (listenerDIDs + listenerExtras).map { Array($0.utf8) }
        let sa = PrivateSetIntersection.Blinding(elements: da, scalar: a, shuffle: false)
        let sb = PrivateSetIntersection.Blinding(elements: lb, scalar: b, shuffle: false)
        let returnedToDialer = sb.reblind(sa.blinded), returnedToListener = sa.reblind(sb.blinded)
        let r = try Ristretto255.Scalar(rawRepresentation: proofScalar)
        func side(_ dids: [String], _ extras: [String], _ s: PrivateSetIntersection.Blinding, scalar: SecureBytes, role: UInt8,
                  received: [Ristretto255.Point], returned: [Ristretto255.Point], learned: [Int], elements: [[UInt8]]) -> [String: Any] {
            let hello = [CommonFriendsPhase.version, FriendsMode.verified.wireValue, 1] + CommonFriendsPhase.u32(10_000)
                + CommonFriendsPhase.u32(dids.count) + CommonFriendsPhase.u32(extras.count)
            return [
                "scalar": Hex.encode(scalar.exposedBytes()), "publicKey": Hex.encode(s.publicKey.rawRepresentation),
                "dids": dids, "extras": extras,
                "hello": Hex.encode([0x50] + hello),
                "groupElements": hex(elements.map { PrivateSetIntersection.groupElement($0) }),
                "items": hex(s.blinded),
                "returned": hex(returned),
                "commitment": Hex.encode(PrivateSetIntersection.commitment(to: returned, transcriptHash: transcript, role: role)),
                "proof": Hex.encode(DLEQ.proof(scalar: s.scalar, publicKey: s.publicKey, inputs: received, outputs: returned, randomScalar: r).rawRepresentation),
                "hashItems": dids.map { Hex.encode(PrivateSetIntersection.saltedHash(Array($0.utf8), transcriptHash: transcript)) },
                "learns": learned.map { String(decoding: elements[$0], as: UTF8.self) },
            ]
        }
        return [
            "description": "docs/PROTOCOL.md section 8: common friends. Items are in input order here (a real run shuffles them); "
                + "role 0 is the dialer, 1 the listener; proofs use proofRandomScalar as r.",
            "transcriptHash": Hex.encode(transcript), "proofRandomScalar": Hex.encode(proofScalar.exposedBytes()),
            "dialer": side(dialerDIDs, dialerExtras, sa, scalar: dialerScalar, role: 0, received: sb.blinded, returned: returnedToListener,
                           learned: sa.intersection(returned: returnedToDialer, reblindedPeer: returnedToListener), elements: da),
            "listener": side(listenerDIDs, listenerExtras, sb, scalar: listenerScalar, role: 1, received: sa.blinded, returned: returnedToDialer,
                             learned: sb.intersection(returned: returnedToListener, reblindedPeer: returnedToDialer), elements: lb),
        ]
    }

    @Test func vectorsMatchTheFixture() throws {
        let now = try Self.compute()
        let encoded = try JSONSerialization.data(withJSONObject: now, options: [.prettyPrinted, .sortedKeys])
        if ProcessInfo.processInfo.environment["MEISHI_WRITE_FIXTURES"] == "1" {
            try (encoded + Data("\n".utf8)).write(to: Fixtures.url(Self.path))
        }
        let stored = try Fixtures.json(Self.path) as! [String: Any]
        #expect(NSDictionary(dictionary: stored).isEqual(to: now), "fixtures/\(Self.path) differs from what the code computes")
        let dialer = stored["dialer"] as! [String: Any], listener = stored["listener"] as! [String: Any]
        #expect(dialer["learns"] as? [String] == ["did:key:z6MkCleoPark", "did:key:z6MkDevRao", "email:cleo@example.org"])
        #expect(listener["learns"] as? [String] == ["did:key:z6MkDevRao", "did:key:z6MkCleoPark", "email:cleo@example.org"])
    }

    /// The phase itself sends exactly the fixture's messages for the fixture's scalars.
    @Test func thePhaseSendsTheFixtureMessages() async throws {
        let stored = try Fixtures.json(Self.path) as! [String: Any]
        let d = stored["dialer"] as! [String: Any], l = stored["listener"] as! [String: Any]
        func phase(_ role: ExchangeSession.Role, _ dids: [String], _ extras: [String], _ scalar: SecureBytes) throws -> CommonFriendsPhase {
            let k = try Ristretto255.Scalar(rawRepresentation: scalar)
            let all = (dids + extras).map { Array($0.utf8) }
            let elements = CommonFriendsElements(dids: dids.map { Array($0.utf8) }, extras: extras.map { Array($0.utf8) },
                                                 blinding: { PrivateSetIntersection.Blinding(elements: all, scalar: k, shuffle: false) })
            let request = CommonFriendsRequest(mode: .verified, maximumSetSize: 10_000, codeComparedByPerson: true, elements: { _ in elements })
            return CommonFriendsPhase(request: request, elements: elements, transcriptHash: Self.transcript, role: role, codeConfirmedByPAKE: false)
        }
        let a = try phase(.dialer, Self.dialerDIDs, Self.dialerExtras, Self.dialerScalar)
        let b = try phase(.listener, Self.listenerDIDs, Self.listenerExtras, Self.listenerScalar)
        let ha = a.hello(), hb = b.hello()
        #expect(Hex.encode([ha.type] + ha.content) == d["hello"] as? String)
        #expect(Hex.encode([hb.type] + hb.content) == l["hello"] as? String)
        _ = try a.receive(type: hb.type, content: hb.content)
        let itemsA = try a.blind(with: await a.elements.blinding())
        #expect(itemsA.count == 1 && Hex.encode(itemsA[0].content) == (d["items"] as! [String]).joined())
        _ = try b.receive(type: ha.type, content: ha.content)
        let itemsB = try b.blind(with: await b.elements.blinding())
        let commitA = try a.receive(type: itemsB[0].type, content: itemsB[0].content)
        #expect(Hex.encode(commitA[0].content) == (d["commitment"] as! String) + (d["publicKey"] as! String))
        let commitB = try b.receive(type: itemsA[0].type, content: itemsA[0].content)
        let openA = try a.receive(type: commitB[0].type, content: commitB[0].content)
        #expect(Hex.encode(openA[0].content) == (d["returned"] as! [String]).joined() && openA[1].type == 0x54)
        let openB = try b.receive(type: commitA[0].type, content: commitA[0].content)
        for m in openB { _ = try a.receive(type: m.type, content: m.content) }
        for m in openA { _ = try b.receive(type: m.type, content: m.content) }
        guard case .ran(.verified, let sa, 5)? = a.outcome, case .ran(.verified, let sb, 4)? = b.outcome else {
            Issue.record("\(String(describing: a.outcome)) \(String(describing: b.outcome))"); return
        }
        #expect(sa == [0, 1, 3] && sb == [0, 1, 3])
    }
}
