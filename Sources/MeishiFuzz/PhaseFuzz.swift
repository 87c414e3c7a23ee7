import MeishiCard
import MeishiCrypto
import MeishiProximity

/// The common-friends phase (docs/PROTOCOL.md §8) of the side under test ("A") against an honest
/// peer ("B") whose messages the fuzzer delivers, alters, replays or replaces.
///
/// Properties: A never traps; a result A reports names only its own elements, each once, and no
/// more than the peer's announced set; when nothing was tampered with, both sides report exactly
/// the true intersection in the mode both agreed on.
enum FriendsFuzz {
    static func element(_ i: Int) -> [UInt8] { Array("did:key:z6MkFriend\(i)".utf8) }
    /// A knows 0..<6, B knows 3..<9: the intersection is elements 3, 4, 5 (A's indices 3, 4, 5).
    static let mine = (0..<6).map(element), theirs = (3..<9).map(element)
    static let transcript = [UInt8](repeating: 7, count: 32)

    final class Side {
        let phase: CommonFriendsPhase
        let elements: [[UInt8]]
        var outbox: [(type: UInt8, content: [UInt8])] = []
        var failed = false

        init(mode: FriendsMode, role: ExchangeSession.Role, elements: [[UInt8]]) {
            self.elements = elements
            let request = CommonFriendsRequest(mode: mode, maximumSetSize: 16, codeComparedByPerson: true,
                                               elements: { _ in CommonFriendsElements(dids: elements, extras: []) })
            phase = CommonFriendsPhase(request: request, elements: CommonFriendsElements(dids: elements, extras: []),
                                       transcriptHash: transcript, role: role, codeConfirmedByPAKE: true)
            outbox.append(phase.hello())
        }

        func receive(_ m: (type: UInt8, content: [UInt8])) {
            guard !failed, phase.outcome == nil else { return }
            do {
                outbox += try phase.receive(type: m.type, content: m.content)
                if phase.needsBlinding { outbox += try phase.blind(with: PrivateSetIntersection.Blinding(elements: elements)) }
            } catch {
                failed = true
            }
        }
    }

    static func run(_ data: [UInt8]) { _ = completes(data) }

    /// Runs one input; returns whether A's phase ran to a result (tests check the honest seeds do).
    static func completes(_ data: [UInt8]) -> Bool {
        var input = FuzzInput(data)
        let setup = input.byte()
        let modes: [FriendsMode] = [.hash, .ecdh, .verified, .off]
        let aMode = modes[Int(setup & 3)], bMode = modes[Int(setup >> 2 & 3)]
        let aRole: ExchangeSession.Role = setup & 16 == 0 ? .dialer : .listener
        let a = Side(mode: aMode, role: aRole, elements: mine)
        let b = Side(mode: bMode, role: aRole == .dialer ? .listener : .dialer, elements: theirs)
        var delivered: [(type: UInt8, content: [UInt8])] = []
        var tampered = false
        var steps = 0
        while !input.isAtEnd, steps < 48, !a.failed, a.phase.outcome == nil {
            steps += 1
            var toA: (type: UInt8, content: [UInt8])?
            switch input.byte() % 6 {
            case 0:
                if !b.outbox.isEmpty { toA = b.outbox.removeFirst() }
            case 1:
                if !b.outbox.isEmpty {
                    var m = b.outbox.removeFirst()
                    if m.content.isEmpty { m.content = [input.byte()] } else { m.content[Int(input.byte()) % m.content.count] ^= input.byte() | 1 }
                    toA = m
                    tampered = true
                }
            case 2:
                toA = (0x50 + input.byte() % 16, input.take(Int(input.byte()) * 2))
                tampered = true
            case 3:
                if !delivered.isEmpty {
                    toA = delivered[Int(input.byte()) % delivered.count]
                    tampered = true
                }
            case 4:
                if !a.outbox.isEmpty { b.receive(a.outbox.removeFirst()) }
            default:
                if !b.outbox.isEmpty, b.outbox.count > 1 {
                    b.outbox.swapAt(0, 1)
                    tampered = true
                }
            }
            guard let m = toA else { continue }
            delivered.append(m)
            a.receive(m)
        }
        guard case .ran(let mode, let shared, let peerSetSize)? = a.phase.outcome else { return false }
        require(Set(shared).count == shared.count && shared.allSatisfy { (0..<mine.count).contains($0) }, "a result names elements A does not hold")
        require(shared.count <= peerSetSize, "more common friends than the peer has")
        if !tampered {
            require(mode == max(aMode, bMode), "the phase ran another mode than the most private asked for")
            require(shared.sorted() == [3, 4, 5], "an honest run found \(shared) instead of the true intersection")
        }
        return true
    }
}

/// Message envelopes (docs/PROTOCOL.md §9.1) as a recipient reads them.
///
/// Properties: an envelope that parses has exactly one encoding; one that opens with the fixed
/// keys came from the fixed sender (nobody else holds its key) and its text is within the limits.
enum EnvelopeFuzz {
    static let sender = try! X25519.SecretKey(rawRepresentation: SecureBytes(copying: [UInt8](repeating: 0x31, count: 32)))
    static let recipient = try! X25519.SecretKey(rawRepresentation: SecureBytes(copying: [UInt8](repeating: 0x32, count: 32)))
    static let senderDID = DIDKey.did(for: try! Ed25519.SigningKey(seed: SecureBytes(copying: [UInt8](repeating: 0x41, count: 32))).publicKey)
    static let recipientDID = DIDKey.did(for: try! Ed25519.SigningKey(seed: SecureBytes(copying: [UInt8](repeating: 0x42, count: 32))).publicKey)

    /// A valid envelope from the fixed keys, for the seed corpus.
    static func seed(_ text: String, once: Bool) -> [UInt8] {
        try! MessageEnvelope.seal(text: text, created: FuzzTarget.now, lifetime: 3600, once: once, senderDID: senderDID,
                                  recipientDID: recipientDID, senderKey: sender, recipientKey: recipient.publicKey,
                                  id: [UInt8](repeating: 9, count: MessageEnvelope.idByteCount),
                                  nonce: [UInt8](repeating: 5, count: 24)).encoded
    }

    static func run(_ data: [UInt8]) {
        guard let envelope = try? MessageEnvelope(parsing: data) else { return }
        require(envelope.encoded == data, "an envelope has two encodings")
        require(envelope.expires > envelope.created, "an envelope that expires before it was made")
        guard let text = try? envelope.open(from: sender.publicKey, with: recipient) else { return }
        require(envelope.senderDID == senderDID && envelope.recipientDID == recipientDID, "an envelope opened with fields it was not sealed with")
        require(text.utf8.count <= MessageEnvelope.maximumTextBytes && !text.utf8.contains(0), "opened text outside the limits")
    }
}
