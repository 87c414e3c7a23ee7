import MeishiCard
import MeishiCrypto
import MeishiProximity

/// Drives the exchange state machine (the side under test, "A") against an honest peer ("B")
/// whose frames the fuzzer delivers, alters, replays, cuts short or replaces with its own bytes.
///
/// Properties: A never throws a trap whatever arrives; the only card A can ever accept is B's
/// (nobody else holds a key or the session secrets); A accepts a card only after both people's
/// confirmations (or the PAKE's); an ACK never arrives before A sent its card.
enum SessionFuzz {
    static let peerKey = try! Ed25519.SigningKey(seed: SecureBytes(copying: [UInt8](repeating: 0x42, count: 32)))
    static let ownKey = try! Ed25519.SigningKey(seed: SecureBytes(copying: [UInt8](repeating: 0x17, count: 32)))
    static let peerCard = card(peerKey, name: "Ken Sato")
    static let ownCard = card(ownKey, name: "Mei Tanaka")
    static let code = try! ExchangeCode(parsing: "7-tulip-anchor")
    static let otherCode = try! ExchangeCode(parsing: "7-tulip-adroitness")

    static func card(_ key: Ed25519.SigningKey, name: String) -> SignedCard {
        try! ProximityPayload.sign(disclosed: [.name: [name]], level: .public, signingKey: key,
                                   boxKey: X25519.SecretKey().publicKey, timestamp: FuzzTarget.now)
    }

    final class Side {
        let session: ExchangeSession
        var outbox: [[UInt8]] = []
        var ended = false

        init(_ session: ExchangeSession) { self.session = session }

        /// Feeds one frame; returns the event, or nil once the session ended with an error.
        func receive(_ body: [UInt8]) -> ExchangeSession.Event? {
            guard !ended, !body.isEmpty else { return nil }
            do {
                let step = try session.receive(body)
                outbox += step.send
                return step.event
            } catch {
                ended = true
                return nil
            }
        }

        /// What a person and the application would do next, if anything is allowed now.
        func act(confirming matches: Bool, card: SignedCard, key: Ed25519.SigningKey) {
            guard !ended else { return }
            let s = session
            if s.code != nil, !s.confirmedLocally {
                outbox.append(s.confirm(matches))
                if !matches { ended = true }
            } else if s.confirmedLocally, s.confirmedByPeer, !s.cardSent {
                outbox.append(s.card(card, signedBy: key))
            } else if s.peerCard != nil, !s.acknowledgedLocally {
                outbox.append(s.acknowledge())
            }
        }
    }

    /// Runs one input; returns whether the side under test completed the exchange (both cards
    /// verified and acknowledged), so tests can check that the honest seeds reach the end.
    @discardableResult
    static func run(_ data: [UInt8]) -> Bool {
        var input = FuzzInput(data)
        let setup = input.byte()
        let aRole: ExchangeSession.Role = setup & 1 == 0 ? .listener : .dialer
        let bRole: ExchangeSession.Role = aRole == .listener ? .dialer : .listener
        let aBinding = setup & 2 != 0 ? ExchangeSession.CodeBinding(code: code) : nil
        let bBinding = setup & 2 != 0 ? ExchangeSession.CodeBinding(code: setup & 4 != 0 ? otherCode : code) : nil
        let verifier = CardVerifier(clock: { FuzzTarget.now })
        let a = Side(ExchangeSession(role: aRole, verifier: verifier, binding: aBinding))
        let b = Side(ExchangeSession(role: bRole, verifier: verifier, binding: bBinding))
        if let hello = a.session.start() { a.outbox.append(hello) }
        if let hello = b.session.start() { b.outbox.append(hello) }
        var delivered: [[UInt8]] = []
        var steps = 0
        while !input.isAtEnd, steps < 64, !a.ended {
            steps += 1
            let op = input.byte() % 8
            var toA: [UInt8]?
            switch op {
            case 0:
                if !b.outbox.isEmpty { toA = b.outbox.removeFirst() }
            case 1:
                if !b.outbox.isEmpty {
                    var f = b.outbox.removeFirst()
                    let i = Int(input.byte()) % f.count
                    f[i] ^= input.byte() | 1
                    toA = f
                }
            case 2:
                toA = input.take(Int(input.byte()) * 4 + 1)
            case 3:
                if !delivered.isEmpty { toA = delivered[Int(input.byte()) % delivered.count] }
            case 4:
                if !a.outbox.isEmpty { _ = b.receive(a.outbox.removeFirst()) }
            case 5:
                a.act(confirming: input.byte() != 0xFF, card: ownCard, key: ownKey)
            case 6:
                b.act(confirming: true, card: peerCard, key: peerKey)
            default:
                if !b.outbox.isEmpty {
                    let f = b.outbox.removeFirst()
                    toA = Array(f.prefix(Int(input.byte()) % f.count + 1))
                }
            }
            guard let frame = toA else { continue }
            delivered.append(frame)
            let confirmedBefore = a.session.confirmedLocally && a.session.confirmedByPeer
            let sentBefore = a.session.cardSent
            switch a.receive(frame) {
            case .cardReceived(let card)?:
                require(card.payload == peerCard.payload, "the session accepted a card its peer did not send")
                require(confirmedBefore, "a card was accepted before both confirmations")
            case .peerAcknowledged?:
                require(sentBefore, "an ACK was accepted before our card was sent")
            default:
                break
            }
        }
        return a.session.isComplete
    }
}
