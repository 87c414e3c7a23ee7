import Foundation
import Testing
import MeishiCrypto
@testable import MeishiProximity

/// The common-friends phase with both sides in memory: what one sends is what the other receives.
@Suite struct CommonFriendsPhaseTests {
    typealias Message = (type: UInt8, content: [UInt8])
    static let transcript = [UInt8](repeating: 7, count: 32)

    static func dids(_ range: Range<Int>) -> [[UInt8]] { range.map { Array("did:key:z6Mk\($0)".utf8) } }

    static func phase(_ role: ExchangeSession.Role, _ mode: FriendsMode, dids: [[UInt8]], extras: [[UInt8]] = [], cap: Int = 10_000,
                      authenticated: Bool = true) -> CommonFriendsPhase {
        let elements = CommonFriendsElements(dids: dids, extras: extras)
        let request = CommonFriendsRequest(mode: mode, maximumSetSize: cap, codeComparedByPerson: authenticated, elements: { _ in elements })
        return CommonFriendsPhase(request: request, elements: elements, transcriptHash: transcript, role: role, codeConfirmedByPAKE: false)
    }

    /// Runs both phases to the end; `tamper` may rewrite what the listener sends (a hostile peer).
    /// Returns the outcomes, or the error each side ended with.
    @discardableResult
    static func run(_ a: CommonFriendsPhase, _ b: CommonFriendsPhase, tamper: (Message) -> [Message] = { [$0] })
        async -> (Result<CommonFriendsOutcome, CommonFriendsError>, Result<CommonFriendsOutcome, CommonFriendsError>) {
        var toB: [Message] = [a.hello()], toA: [Message] = tamper(b.hello())
        var ra: Result<CommonFriendsOutcome, CommonFriendsError>?, rb: Result<CommonFriendsOutcome, CommonFriendsError>?
        func step(_ p: CommonFriendsPhase, _ inbox: inout [Message], _ result: inout Result<CommonFriendsOutcome, CommonFriendsError>?) async -> [Message] {
            guard result == nil else { inbox = []; return [] }
            var out: [Message] = []
            do {
                if p.needsBlinding { out += try p.blind(with: await p.elements.blinding()) }
                while !inbox.isEmpty, p.outcome == nil {
                    let m = inbox.removeFirst()
                    out += try p.receive(type: m.type, content: m.content)
                    if p.needsBlinding { out += try p.blind(with: await p.elements.blinding()) }
                }
                if let o = p.outcome { result = .success(o) }
            } catch { result = .failure(error); out = [] }
            return out
        }
        for _ in 0..<100 where ra == nil || rb == nil {
            let fromA = await step(a, &toA, &ra)
            toB += fromA
            let fromB = await step(b, &toB, &rb)
            toA += fromB.flatMap(tamper)
            if fromA.isEmpty, fromB.isEmpty, toA.isEmpty, toB.isEmpty { break }
        }
        return (ra ?? .failure(.connection(.failed(.other("stalled")))), rb ?? .failure(.connection(.failed(.other("stalled")))))
    }

    static func shared(_ r: Result<CommonFriendsOutcome, CommonFriendsError>, _ elements: [[UInt8]]) -> Set<[UInt8]>? {
        guard case .success(.ran(_, let indices, _)) = r else { return nil }
        return Set(indices.map { elements[$0] })
    }

    /// Random sets with random overlaps give exactly the plain intersection, on both sides, in every mode.
    @Test(arguments: [FriendsMode.hash, .ecdh, .verified])
    func propertyRandomOverlaps(mode: FriendsMode) async {
        var rng = SystemRandomNumberGenerator()
        let shapes: [(Int, Int, Int)] = [(0, 0, 0), (0, 7, 0), (7, 0, 0), (1, 1, 1), (1, 1, 0), (30, 30, 0), (30, 30, 30),
                                         (2_100, 3, 2), (3, 2_001, 3)]
            + (0..<4).map { _ in let a = Int.random(in: 1...300, using: &rng), b = Int.random(in: 1...300, using: &rng)
                return (a, b, Int.random(in: 0...min(a, b), using: &rng)) }
        for (na, nb, common) in shapes {
            let both = Self.dids(100_000..<100_000 + common)
            let a = (Self.dids(0..<na - common) + both).shuffled(), b = (Self.dids(50_000..<50_000 + nb - common) + both).shuffled()
            let (ra, rb) = await Self.run(Self.phase(.dialer, mode, dids: a), Self.phase(.listener, mode, dids: b))
            #expect(Self.shared(ra, a) == Set(both), "\(mode) \(na)×\(nb) ∩ \(common)")
            #expect(Self.shared(rb, b) == Set(both), "\(mode) \(na)×\(nb) ∩ \(common)")
            if case .success(.ran(let m, _, let size)) = ra { #expect(m == mode && size == nb) }
        }
    }

    /// The issue's unbalanced case: 1 against 10,000, in every mode.
    @Test(arguments: [FriendsMode.hash, .ecdh, .verified])
    func oneAgainstTenThousand(mode: FriendsMode) async {
        let big = Self.dids(0..<10_000), small = [big[4_321]]
        let (ra, rb) = await Self.run(Self.phase(.dialer, mode, dids: small), Self.phase(.listener, mode, dids: big))
        #expect(Self.shared(ra, small) == Set(small))
        #expect(Self.shared(rb, big) == Set(small))
    }

    @Test func extrasOnlyInTheEcdhModes() async {
        let a = Self.phase(.dialer, .ecdh, dids: Self.dids(0..<3), extras: [Array("email:cleo@example.org".utf8)])
        let b = Self.phase(.listener, .hash, dids: Self.dids(2..<5), extras: [Array("email:cleo@example.org".utf8)])
        let (ra, rb) = await Self.run(a, b)
        // ecdh wins over hash: the email is compared too (index 3 = the first extra).
        guard case .success(.ran(.ecdh, let sa, 4)) = ra, case .success(.ran(.ecdh, let sb, 4)) = rb else {
            Issue.record("\(ra) \(rb)"); return
        }
        #expect(sa == [2, 3] && sb == [0, 3])
    }

    @Test func mostPrivateModeWinsAndOffSkipsBothSides() async {
        for (x, y, expected) in [(FriendsMode.hash, FriendsMode.verified, FriendsMode.verified), (.ecdh, .hash, .ecdh), (.verified, .ecdh, .verified)] {
            let (ra, rb) = await Self.run(Self.phase(.dialer, x, dids: Self.dids(0..<3)), Self.phase(.listener, y, dids: Self.dids(1..<4)))
            guard case .success(.ran(let ma, _, _)) = ra, case .success(.ran(let mb, _, _)) = rb else { Issue.record("\(ra) \(rb)"); continue }
            #expect(ma == expected && mb == expected)
        }
        let (ra, rb) = await Self.run(Self.phase(.dialer, .off, dids: Self.dids(0..<3)), Self.phase(.listener, .verified, dids: Self.dids(1..<4)))
        guard case .success(.skipped(.offHere)) = ra, case .success(.skipped(.offByPeer)) = rb else { Issue.record("\(ra) \(rb)"); return }
    }

    @Test func unauthenticatedSideSkipsBothWithReasons() async {
        let (ra, rb) = await Self.run(Self.phase(.dialer, .ecdh, dids: Self.dids(0..<3), authenticated: false),
                                      Self.phase(.listener, .ecdh, dids: Self.dids(1..<4)))
        guard case .success(.skipped(.unauthenticatedHere)) = ra, case .success(.skipped(.unauthenticatedByPeer)) = rb else {
            Issue.record("\(ra) \(rb)"); return
        }
    }

    @Test func setOverTheOtherCapSkipsBoth() async {
        let (ra, rb) = await Self.run(Self.phase(.dialer, .ecdh, dids: Self.dids(0..<30)), Self.phase(.listener, .ecdh, dids: Self.dids(1..<4), cap: 20))
        guard case .success(.skipped(.ourSetTooLarge(30, 20))) = ra, case .success(.skipped(.peerSetTooLarge(30, 20))) = rb else {
            Issue.record("\(ra) \(rb)"); return
        }
    }

    // MARK: A hostile listener

    static func refusal(_ mode: FriendsMode, count: Int = 40, tamper: @escaping (Message) -> [Message]) async -> Result<CommonFriendsOutcome, CommonFriendsError> {
        let (ra, _) = await run(phase(.dialer, mode, dids: dids(0..<count)), phase(.listener, mode, dids: dids(10..<count + 10)), tamper: tamper)
        return ra
    }

    static func isRefused(_ r: Result<CommonFriendsOutcome, CommonFriendsError>, _ expected: CommonFriendsError) -> Bool {
        if case .failure(let e) = r { return e == expected }
        return false
    }

    static func replacingItem(_ type: UInt8, at index: Int, with item: [UInt8]) -> (Message) -> [Message] {
        { m in
            guard m.type == type else { return [m] }
            var c = m.content
            c.replaceSubrange(index * 32..<(index + 1) * 32, with: item)
            return [(m.type, c)]
        }
    }

    @Test func duplicatesIdentityAndNonCanonicalPointsAreRefused() async {
        let identity = [UInt8](repeating: 0, count: 32)
        var nonCanonical = PrivateSetIntersection.groupElement([1]).rawRepresentation
        nonCanonical[31] |= 0x80
        for mode in [FriendsMode.ecdh, .verified] {
            #expect(Self.isRefused(await Self.refusal(mode, tamper: Self.replacingItem(0x51, at: 3, with: identity)), .refused(.invalidPoint(index: 3))))
            #expect(Self.isRefused(await Self.refusal(mode, tamper: Self.replacingItem(0x51, at: 5, with: nonCanonical)), .refused(.invalidPoint(index: 5))))
            #expect(Self.isRefused(await Self.refusal(mode, tamper: Self.replacingItem(0x53, at: 0, with: identity)), .refused(.invalidPoint(index: 0))))
            #expect(Self.isRefused(await Self.refusal(mode, tamper: { m in
                m.type == 0x51 ? [(m.type, Array(m.content.prefix(32)) + m.content.dropLast(32))] : [m]
            }), .refused(.duplicate(index: 1))))
        }
        #expect(Self.isRefused(await Self.refusal(.hash, tamper: { m in
            m.type == 0x51 ? [(m.type, Array(m.content.prefix(32)) + m.content.dropLast(32))] : [m]
        }), .refused(.duplicate(index: 1))))
    }

    @Test func wrongCountsAreRefused() async {
        // A chunk with a partial item, one item short, one item extra, and an empty chunk.
        #expect(Self.isRefused(await Self.refusal(.ecdh, tamper: { m in m.type == 0x51 ? [(m.type, m.content + [1])] : [m] }),
                               .refused(.wrongCount(expected: 40, actual: 40))))
        #expect(Self.isRefused(await Self.refusal(.ecdh, tamper: { m in m.type == 0x51 ? [(m.type, Array(m.content.dropLast(32)))] : [m] }),
                               .refused(.wrongCount(expected: 40, actual: 39))))
        #expect(Self.isRefused(await Self.refusal(.hash, tamper: { m in m.type == 0x51 ? [(m.type, m.content + m.content.prefix(32))] : [m] }),
                               .refused(.wrongCount(expected: 40, actual: 41))))
        #expect(Self.isRefused(await Self.refusal(.ecdh, tamper: { m in m.type == 0x53 ? [(m.type, [])] : [m] }),
                               .refused(.wrongCount(expected: 40, actual: 0))))
        // A HELLO that lies: it announces 3 items and sends 40.
        #expect(Self.isRefused(await Self.refusal(.ecdh, tamper: { m in
            guard m.type == 0x50 else { return [m] }
            var c = m.content
            c.replaceSubrange(7..<11, with: [0, 0, 0, 3])
            return [(m.type, c)]
        }), .refused(.wrongCount(expected: 3, actual: 40))))
    }

    @Test func chunksOfAFullListAreCheckedOneByOne() async {
        // 4,500 items travel as 2,000 + 2,000 + 500; a peer sending 1,000 + … is refused at once.
        let big = Self.dids(0..<4_500)
        let (ra, _) = await Self.run(Self.phase(.dialer, .hash, dids: Self.dids(0..<3)), Self.phase(.listener, .hash, dids: big), tamper: { m in
            guard m.type == 0x51, m.content.count == 64_000 else { return [m] }
            return [(m.type, Array(m.content.prefix(32_000))), (m.type, Array(m.content.suffix(32_000)))]
        })
        #expect(Self.isRefused(ra, .refused(.wrongCount(expected: 2_000, actual: 1_000))))
        let items = [[UInt8]](repeating: [UInt8](repeating: 1, count: 32), count: 4_500)
        #expect(CommonFriendsPhase.chunks(items, type: .items).map(\.content.count) == [64_000, 64_000, 16_000])
        // A sealed chunk fits a frame.
        #expect(1 + 1 + 64_000 + 16 <= FrameCodec.maximumBody)
    }

    @Test func malformedHelloAndOutOfOrderMessagesAreRefused() async {
        #expect(Self.isRefused(await Self.refusal(.ecdh, tamper: { m in m.type == 0x50 ? [(m.type, m.content + [0])] : [m] }),
                               .protocolViolation(.malformedFrame("common-friends HELLO must be 15 bytes"))))
        #expect(Self.isRefused(await Self.refusal(.ecdh, tamper: { m in
            m.type == 0x50 ? [(m.type, [m.content[0], 9] + m.content.dropFirst(2))] : [m]
        }), .protocolViolation(.malformedFrame("common-friends HELLO names an unknown mode or flag"))))
        #expect(Self.isRefused(await Self.refusal(.ecdh, tamper: { m in m.type == 0x50 ? [(m.type, [2] + m.content.dropFirst())] : [m] }),
                               .protocolViolation(.unsupportedVersion(2))))
        #expect(Self.isRefused(await Self.refusal(.ecdh, tamper: { m in m.type == 0x51 ? [(0x53, m.content)] : [m] }),
                               .protocolViolation(.unexpectedMessage("common-friends message 83 out of order"))))
        // Without its COMMIT, the peer's RETURNED comes before any commitment: refused.
        #expect(Self.isRefused(await Self.refusal(.ecdh, tamper: { m in m.type == 0x52 ? [] : [m] }),
                               .protocolViolation(.unexpectedMessage("common-friends message 83 out of order"))))
        #expect(Self.isRefused(await Self.refusal(.ecdh, tamper: { m in m.type == 0x51 ? [CommonFriendsPhase.abort("no\u{1b}[2J thanks")] : [m] }),
                               .abortedByPeer("no\u{1b}[2J thanks")))
        #expect(CommonFriendsError.abortedByPeer("no\u{1b}[2J thanks").wireReason.contains("\u{1b}") == false)
    }

    @Test func returnedListNotMatchingItsCommitmentIsRefused() async {
        // The hostile listener returns its list with one item swapped for a fresh one.
        let fresh = PrivateSetIntersection.groupElement(Array("not in any set".utf8)).rawRepresentation
        #expect(Self.isRefused(await Self.refusal(.ecdh, tamper: Self.replacingItem(0x53, at: 2, with: fresh)), .refused(.commitmentMismatch)))
    }

    /// In `verified` mode a peer returning its list reordered or substituted (and committing to
    /// that) is caught by the proof; in `ecdh` mode it would mislabel, as SECURITY.md says.
    @Test func verifiedCatchesReorderedAndSubstitutedLists() async throws {
        for substitute in [false, true] {
            let a = Self.phase(.dialer, .verified, dids: Self.dids(0..<20))
            let hostile = HostileListener(dids: Self.dids(10..<30), substitute: substitute)
            let r = await hostile.run(against: a)
            #expect(Self.isRefused(r, .refused(.proofInvalid)), "substitute: \(substitute)")
        }
        let a = Self.phase(.dialer, .ecdh, dids: Self.dids(0..<20))
        let r = await HostileListener(dids: Self.dids(10..<30), substitute: false, mode: .ecdh).run(against: a)
        guard case .success(.ran(.ecdh, let shared, _)) = r else { Issue.record("\(r)"); return }
        // Rotating the list by one moved every label: 10 of 20 shared positions are never rotation-invariant.
        #expect(Set(shared) != Set(10..<20))
    }

    /// A listener that follows the protocol but returns the dialer's list rotated by one (or with one item
    /// made with another scalar), committing to what it sends and proving with its real key.
    struct HostileListener {
        let dids: [[UInt8]]
        let substitute: Bool
        var mode = FriendsMode.verified

        func run(against a: CommonFriendsPhase) async -> Result<CommonFriendsOutcome, CommonFriendsError> {
            let blinding = PrivateSetIntersection.Blinding(elements: dids)
            do {
                _ = try a.receive(type: 0x50, content: [1, mode.wireValue, 1] + CommonFriendsPhase.u32(10_000) + CommonFriendsPhase.u32(dids.count) + CommonFriendsPhase.u32(0))
                let items = try a.blind(with: await a.elements.blinding())
                let theirs = try PrivateSetIntersection.points(items.flatMap(\.content), count: 20, distinct: true)
                var returned = blinding.reblind(theirs)
                if substitute { returned[0] = try theirs[0].multiplied(by: Ristretto255.Scalar()) } else { returned = Array(returned.dropFirst()) + [returned[0]] }
                let commit = try a.receive(type: 0x51, content: blinding.blinded.flatMap(\.rawRepresentation))
                #expect(commit.count == 1 && commit[0].type == 0x52)
                let commitment = PrivateSetIntersection.commitment(to: returned, transcriptHash: CommonFriendsPhaseTests.transcript, role: 1)
                _ = try a.receive(type: 0x52, content: commitment + (mode == .verified ? blinding.publicKey.rawRepresentation : []))
                _ = try a.receive(type: 0x53, content: returned.flatMap(\.rawRepresentation))
                if mode == .verified {
                    let proof = DLEQ.proof(scalar: blinding.scalar, publicKey: blinding.publicKey, inputs: theirs, outputs: returned)
                    _ = try a.receive(type: 0x54, content: proof.rawRepresentation)
                }
                return a.outcome.map { .success($0) } ?? .failure(.connection(.failed(.other("unfinished"))))
            } catch let e as CommonFriendsError {
                return .failure(e)
            } catch {
                return .failure(.connection(.failed(.other("\(error)"))))
            }
        }
    }
}

/// Post-card phases ride the exchange session only once both sides acknowledged the cards.
extension ExchangeSessionTests {
    static func exchangedUntilAcks() throws -> (ExchangeSession, ExchangeSession) {
        let (d, l) = try handshake()
        _ = try deliver([d.confirm(true)], to: l)
        _ = try deliver([l.confirm(true)], to: d)
        let mei = Person(), ken = Person()
        _ = try deliver([d.card(mei.card("Mei"), signedBy: mei.key)], to: l)
        _ = try deliver([l.card(ken.card("Ken"), signedBy: ken.key)], to: d)
        return (d, l)
    }

    @Test func postCardMessagesOnlyAfterBothAcknowledgements() throws {
        let (d, l) = try Self.exchangedUntilAcks()
        _ = try Self.deliver([l.acknowledge()], to: d)
        // The listener jumps ahead: a common-friends HELLO before the dialer acknowledged.
        #expect(throws: ExchangeError.unexpectedMessage("post-card message 80 before both acknowledgements")) {
            try d.receive(l.seal(type: 0x50, [1]))
        }
        let (d2, l2) = try Self.exchangedUntilAcks()
        _ = try Self.deliver([l2.acknowledge()], to: d2)
        _ = try Self.deliver([d2.acknowledge()], to: l2)
        let hello = d2.postCard(type: 0x50, content: [1, 2, 3])
        #expect(Self.names(try Self.deliver([hello], to: l2).events) == ["post-card 80 (3 bytes)"])
        // A full chunk, sealed, fits one frame.
        let chunk = d2.postCard(type: 0x51, content: [UInt8](repeating: 9, count: 32 * CommonFriendsPhase.itemsPerChunk))
        #expect(chunk.count <= FrameCodec.maximumBody)
        #expect(Self.names(try Self.deliver([chunk], to: l2).events) == ["post-card 81 (64000 bytes)"])
    }
}
