import MeishiCard
import MeishiCrypto
import MeishiProximity

/// A whole exchange with no sockets: the side under test ("A") and an honest peer ("B"), each an
/// `ExchangeSession` with both post-card phases (common friends, the message), fed through
/// `handle` alone. The fuzzer delivers B's frames to A, alters, replays, cuts short or replaces
/// them with its own bytes, and answers A's digit question.
///
/// Properties: A never traps whatever arrives; the only card A ever stores is B's (nobody else
/// holds a key or the session secrets), and only once both cards are acknowledged; A finishes
/// once; an untampered run that A finishes found exactly the true common friends.
enum SessionFuzz {
    static let peerKey = try! Ed25519.SigningKey(seed: SecureBytes(copying: [UInt8](repeating: 0x42, count: 32)))
    static let ownKey = try! Ed25519.SigningKey(seed: SecureBytes(copying: [UInt8](repeating: 0x17, count: 32)))
    static let boxKey = try! X25519.SecretKey(rawRepresentation: SecureBytes(copying: [UInt8](repeating: 0x32, count: 32)))
    static let peerCard = card(peerKey, name: "Ken Sato")
    static let ownCard = card(ownKey, name: "Mei Tanaka")
    static let code = try! ExchangeCode(parsing: "7-tulip-anchor")
    static let otherCode = try! ExchangeCode(parsing: "7-tulip-adroitness")
    /// B's note for A, when the setup asks for one: a valid envelope (its keys are the envelope target's).
    static let note = EnvelopeFuzz.seed("great talk", once: false)

    static func card(_ key: Ed25519.SigningKey, name: String) -> SignedCard {
        try! ProximityPayload.sign(disclosed: [.name: [name]], level: .public, signingKey: key,
                                   boxKey: boxKey.publicKey, timestamp: FuzzTarget.now)
    }

    final class Side {
        let session: ExchangeSession
        let card: SignedCard
        let key: Ed25519.SigningKey
        var outbox: [[UInt8]] = []
        var question: String?
        var stored: VerifiedCard?
        var outcome: ExchangeSession.Outcome?

        init(_ session: ExchangeSession, card: SignedCard, key: Ed25519.SigningKey) {
            self.session = session
            self.card = card
            self.key = key
        }

        /// Feeds one input and performs what the session asks, as the driver does.
        func feed(_ input: ExchangeSession.Input) {
            var inputs = [input]
            while !inputs.isEmpty {
                for action in session.handle(inputs.removeFirst()) {
                    require(outcome == nil, "a session acted after it finished")
                    switch action {
                    case .send(let frame): outbox.append(frame)
                    case .askPerson(let digits): question = digits
                    case .signCard: inputs.append(.cardSigned(card, key))
                    case .store(let card):
                        require(stored == nil && session.isComplete, "a card stored twice, or before both acknowledgements")
                        stored = card
                    case .perform: fatalError("no work is asked without a blinding computed ahead")
                    case .finish(let o): outcome = o
                    case .spendGuess, .arm, .event: break
                    }
                }
            }
        }

        /// The person answers the question, if one is asked.
        func answer(_ matches: Bool) {
            guard question != nil else { return }
            question = nil
            feed(.personAnswered(matches))
        }
    }

    static func side(_ role: ExchangeSession.Role, binding: ExchangeSession.CodeBinding?, mode: FriendsMode, elements: [[UInt8]],
                     note: [UInt8]?, card: SignedCard, key: Ed25519.SigningKey) -> Side {
        let request = CommonFriendsRequest(mode: mode, maximumSetSize: 16, codeComparedByPerson: true,
                                           elements: { _ in CommonFriendsElements(dids: elements, extras: []) })
        let messages = ExchangeMessages(
            authenticated: true,
            outgoing: { _ throws(MessageEnvelopeError) in
                guard let note else { return nil }
                return try MessageEnvelope(parsing: note)
            },
            incoming: { bytes, _ in (try? MessageEnvelope(parsing: bytes)) == nil ? .refused(.malformed) : .stored })
        let session = ExchangeSession(role: role, verifier: CardVerifier(clock: { FuzzTarget.now }), binding: binding,
                                      phases: [CommonFriendsExchangePhase(request), ExchangeMessagePhase(messages)])
        return Side(session, card: card, key: key)
    }

    /// Runs one input; returns whether the side under test finished the whole exchange (both
    /// cards, then every phase), so tests can check that the honest seeds reach the end.
    /// The first byte: bit 0 A dials, bit 1 both use a code, bit 2 B's code differs, bits 3–4
    /// the friends mode of both (ecdh, hash, verified, off), bit 5 B sends A a note.
    @discardableResult
    static func run(_ data: [UInt8]) -> Bool {
        var input = FuzzInput(data)
        let setup = input.byte()
        let aRole: ExchangeSession.Role = setup & 1 == 0 ? .listener : .dialer
        let bRole: ExchangeSession.Role = aRole == .listener ? .dialer : .listener
        let aBinding = setup & 2 != 0 ? ExchangeSession.CodeBinding(code: code) : nil
        let bBinding = setup & 2 != 0 ? ExchangeSession.CodeBinding(code: setup & 4 != 0 ? otherCode : code) : nil
        let mode = [FriendsMode.ecdh, .hash, .verified, .off][Int(setup >> 3 & 3)]
        let a = side(aRole, binding: aBinding, mode: mode, elements: FriendsFuzz.mine, note: nil, card: ownCard, key: ownKey)
        let b = side(bRole, binding: bBinding, mode: mode, elements: FriendsFuzz.theirs, note: setup & 32 != 0 ? note : nil,
                     card: peerCard, key: peerKey)
        a.feed(.connected)
        b.feed(.connected)
        var delivered: [[UInt8]] = []
        var tampered = false
        var steps = 0
        while !input.isAtEnd, steps < 96, a.outcome == nil {
            steps += 1
            var toA: [UInt8]?
            switch input.byte() % 8 {
            case 0:
                if !b.outbox.isEmpty { toA = b.outbox.removeFirst() }
            case 1:
                if !b.outbox.isEmpty {
                    var f = b.outbox.removeFirst()
                    let i = Int(input.byte()) % f.count
                    f[i] ^= input.byte() | 1
                    toA = f
                    tampered = true
                }
            case 2:
                toA = input.take(Int(input.byte()) * 4 + 1)
                tampered = true
            case 3:
                if !delivered.isEmpty {
                    toA = delivered[Int(input.byte()) % delivered.count]
                    tampered = true
                }
            case 4:
                if !a.outbox.isEmpty, b.outcome == nil { b.feed(.frame(a.outbox.removeFirst())) }
            case 5:
                a.answer(input.byte() != 0xFF)
            case 6:
                b.answer(true)
            default:
                if !b.outbox.isEmpty {
                    let f = b.outbox.removeFirst()
                    toA = Array(f.prefix(Int(input.byte()) % f.count + 1))
                    tampered = true
                }
            }
            guard let frame = toA else { continue }
            delivered.append(frame)
            a.feed(.frame(frame))
            if let card = a.stored { require(card.payload == peerCard.payload, "the session stored a card its peer did not send") }
        }
        guard case .exchanged(let card, _, let phases)? = a.outcome else { return false }
        require(a.stored?.payload == card.payload, "a session finished without storing the card it returns")
        let friends = phases.lazy.compactMap { $0 as? CommonFriendsExchangePhase }.first?.outcome
        if !tampered, mode != .off, case .ran(_, let shared, _)? = friends {
            require(shared.sorted() == [3, 4, 5], "an honest run found \(shared) instead of the true intersection")
        }
        return true
    }
}
