import MeishiCard
import MeishiCrypto

/// The exchange protocol between two peers, independent of the transport (docs/PROTOCOL.md §5).
///
/// Without a code, the dialer commits to its ephemeral X25519 key before it sees the listener's, so
/// a relay in the middle cannot choose keys that make both screens show the same 6-digit code.
/// Both sides derive the code from the shared secret and the transcript, and the people compare it.
/// With a code (`7-tulip-anchor`), CPace over ristretto255 with explicit key confirmation
/// authenticates the session instead (§5.6): nothing is compared, and a wrong code fails the run.
/// Either way everything after the handshake is sealed with XChaCha20-Poly1305 under
/// per-direction keys and counters.
public final class ExchangeSession {
    public enum Role: Sendable { case dialer, listener }

    /// What one frame did (the primitive steps below, which `handle` composes and tests playing
    /// a peer that breaks the rules call directly).
    enum Event: Sendable {
        /// The handshake is complete: show this code and ask the person to compare it.
        case codeReady(String)
        /// The PAKE confirmed: both sides typed the same code. Nothing to compare.
        case codeConfirmed
        /// The peer's person confirmed the code.
        case peerConfirmed
        /// The peer's card arrived and verified, bound to this session.
        case cardReceived(VerifiedCard)
        /// The peer verified our card and will store it.
        case peerAcknowledged
        /// A sealed message of a post-card phase (after both ACKs): its inner type and content.
        case postCard(type: UInt8, content: [UInt8])
    }

    public static let protocolVersion: UInt8 = 1
    static let transcriptDomain = Array("meishi-exchange-transcript-v1".utf8) + [0]
    static let commitDomain = Array("meishi-commit-v1".utf8) + [0]
    static let keyDomain = Array("meishi-exchange-keys-v1".utf8) + [0]
    static let bindingDomain = Array("meishi-exchange-v1".utf8) + [0]
    static let kdfContext = "meishiEX"

    enum Message: UInt8 {
        case hello = 0x01, response = 0x02, reveal = 0x03
        case pakeHello = 0x04, pakeReply = 0x05, pakeFinish = 0x06, pakeConfirm = 0x07, pakeMismatch = 0x08
        case sealed = 0x10
    }

    /// The inputs of CPace that are not the password (§5.6).
    public struct CodeBinding: Sendable {
        public let code: ExchangeCode
        /// The discovery session ids of the dialer and the listener (empty with --listen/--peer).
        public var dialerID: [UInt8]
        public var listenerID: [UInt8]
        /// A pairing of a table (`--table`, §5.7): bound into CI, so a table member and a
        /// pairwise `--code` run never share a generator.
        public var table: Bool

        public init(code: ExchangeCode, dialerID: [UInt8] = [], listenerID: [UInt8] = [], table: Bool = false) {
            self.code = code
            self.dialerID = dialerID
            self.listenerID = listenerID
            self.table = table
        }

        /// CI: `lv_cat("meishi-cpace-v1", "dialer", "listener", N)`, then, after discovery, the
        /// dialer's and the listener's session ids (§5.6), then `"table"` at a table (§5.7).
        var channelID: [UInt8] {
            var parts = [Array("meishi-cpace-v1".utf8), Array("dialer".utf8), Array("listener".utf8), Array(String(code.nameplate).utf8)]
            if !dialerID.isEmpty || !listenerID.isEmpty { parts += [dialerID, listenerID] }
            if table { parts.append(Array("table".utf8)) }
            return CPace.lengthValueConcatenation(parts)
        }
    }

    static let pakeNonceByteCount = 16

    enum Inner: UInt8 {
        case confirm = 0x20, decline = 0x21, card = 0x30, ack = 0x40, reject = 0x41
    }

    /// Inner types from here up belong to post-card phases, which run in order after both ACKs on
    /// the same sealed channel, each with its own range (`PostCardPhase.innerTypes`): 0x50–0x5F
    /// common friends, 0x60–0x6F the message. The session only checks that the cards are done;
    /// the driver gives each phase the messages of its range, and the phase checks them.
    public static let firstPostCardType: UInt8 = 0x50

    public let role: Role
    /// Checks the peer's card (everything `meishi verify` checks, with the session's clock window).
    private let verifier: CardVerifier
    private let ephemeral: X25519.SecretKey
    private let nonce: [UInt8]
    private var transcript: [UInt8] = []
    /// Where the handshake stands: each state holds what the next frame is checked against, so
    /// a frame out of order is refused by the state it meets, not by counting transcript bytes.
    enum Handshake {
        /// Nothing sent or received yet.
        case idle
        /// Dialer: HELLO (the commitment) sent; RESPONSE next.
        case awaitingResponse
        /// Listener: RESPONSE sent; REVEAL next, checked against the dialer's commitment.
        case awaitingReveal(commitment: [UInt8])
        /// Dialer with a code: PAKE HELLO sent; PAKE REPLY next.
        case awaitingPAKEReply
        /// Listener with a code: PAKE REPLY sent (Yb); PAKE FINISH next.
        case awaitingPAKEFinish(CPace.Responder)
        /// Dialer with a code: PAKE FINISH sent (Ya, Ta); PAKE CONFIRM next.
        case awaitingPAKEConfirm(CPace.Session)
        /// The keys are derived: only sealed frames from here.
        case done
    }
    private(set) var handshake = Handshake.idle
    private var sendKey: SecureBytes?
    private var receiveKey: SecureBytes?
    private var sendCounter: UInt64 = 0
    private var receiveCounter: UInt64 = 0
    /// With a code: what CPace binds, our nonce, and the run in progress.
    public private(set) var binding: CodeBinding?
    private var pakeNonce: [UInt8] = []
    private var peerNonce: [UInt8]?

    /// Binds the PAKE to the discovery session ids of both sides; before the handshake starts.
    func bindDiscovery(dialerID: [UInt8], listenerID: [UInt8]) {
        precondition(transcript.isEmpty, "bind before the handshake")
        binding?.dialerID = dialerID
        binding?.listenerID = listenerID
    }

    /// The people's code was confirmed by the PAKE (with a code), so nothing needs comparing.
    public private(set) var codeConfirmedByPAKE = false
    /// The handshake is over: a code to compare, or a code the PAKE confirmed.
    public var handshakeComplete: Bool { code != nil || codeConfirmedByPAKE }

    /// SHA-256 of the handshake transcript, once the handshake is complete.
    public private(set) var transcriptHash: [UInt8]?
    /// The short authentication string, e.g. "482 913".
    public private(set) var code: String?

    /// Our direction after the handshake: our CONFIRM, our CARD, the peer's ACK of it.
    enum Outgoing: Int, Comparable {
        case undecided, confirmed, cardSent, acknowledged
        static func < (a: Outgoing, b: Outgoing) -> Bool { a.rawValue < b.rawValue }
    }
    /// The peer's direction: its CONFIRM, its CARD (verified), our ACK of it.
    enum Incoming {
        case undecided, confirmed
        case card(VerifiedCard)
        case acknowledged(VerifiedCard)
    }
    private(set) var outgoing = Outgoing.undecided
    private(set) var incoming = Incoming.undecided

    public var confirmedLocally: Bool { outgoing >= .confirmed }
    public var cardSent: Bool { outgoing >= .cardSent }
    public var acknowledgedByPeer: Bool { outgoing == .acknowledged }
    public var confirmedByPeer: Bool {
        if case .undecided = incoming { false } else { true }
    }
    public var peerCard: VerifiedCard? {
        switch incoming {
        case .card(let c), .acknowledged(let c): c
        case .undecided, .confirmed: nil
        }
    }
    public var acknowledgedLocally: Bool {
        if case .acknowledged = incoming { true } else { false }
    }

    /// This side is about to send what lets the peer compute the code or learn whether its guess
    /// of it was right (the listener's RESPONSE, the dialer's REVEAL; with a code the dialer's
    /// PAKE FINISH, and the listener's check of it). From here an abandoned session has shown the
    /// peer one code sample: a spent guess (docs/PROTOCOL.md §5.4).
    public private(set) var codeRevealed = false

    /// Both people confirmed, both cards verified, both acknowledged: safe to store.
    public var isComplete: Bool { peerCard != nil && acknowledgedByPeer && acknowledgedLocally }

    /// With a code, the CPace scalar; nil draws a fresh one (only vector tests fix it).
    private let pakeScalar: Ristretto255.Scalar?

    // What `handle` keeps beyond the frames (ExchangeSession+Actions.swift).
    /// The post-card phases, in the order they run after both ACKs, and the one running.
    let phases: [any PostCardPhase]
    var phaseIndex = 0
    var phaseStarted: ContinuousClock.Instant?
    /// After discovery: the introduction this side sends (dialer) or expects first (listener).
    var introduction: Introduction?
    /// The peer has sent something (a listener's first-frame limit gives way to the step limit).
    var heardPeer = false
    /// The person is being asked about the digits.
    var asking = false
    /// During the post-card phases: how the connection ended.
    var lostDuringPhases: ConnectionLoss?
    /// `.finish` was returned: later inputs do nothing.
    var finished = false

    public convenience init(role: Role, verifier: CardVerifier, binding: CodeBinding? = nil, phases: [any PostCardPhase] = [],
                            ephemeral: X25519.SecretKey = X25519.SecretKey(), nonce: [UInt8] = SecureRandom.bytes(32)) {
        self.init(role: role, verifier: verifier, binding: binding, phases: phases, ephemeral: ephemeral, nonce: nonce, pakeNonce: nil,
                  pakeScalar: nil)
    }

    /// Every random input fixed (fixtures/exchange-vectors.json): the PAKE's nonce and scalar too.
    init(role: Role, verifier: CardVerifier, binding: CodeBinding?, phases: [any PostCardPhase] = [], ephemeral: X25519.SecretKey,
         nonce: [UInt8], pakeNonce: [UInt8]?, pakeScalar: Ristretto255.Scalar?) {
        precondition(nonce.count == 32 && (pakeNonce == nil || pakeNonce!.count == Self.pakeNonceByteCount))
        self.role = role
        self.phases = phases
        self.verifier = verifier
        self.binding = binding
        if binding != nil { self.pakeNonce = pakeNonce ?? SecureRandom.bytes(Self.pakeNonceByteCount) }
        self.ephemeral = ephemeral
        self.nonce = nonce
        self.pakeScalar = pakeScalar
    }

    // MARK: Handshake

    /// The first frame body: the dialer's HELLO (nil for the listener, which waits).
    func start() -> [UInt8]? {
        guard role == .dialer else { return nil }
        guard case .idle = handshake else { preconditionFailure("the dialer starts once") }
        if binding != nil {
            let hello = [Message.pakeHello.rawValue, Self.protocolVersion] + pakeNonce
            transcript += hello
            handshake = .awaitingPAKEReply
            return hello
        }
        let commitment = SHA256.hash(Self.commitDomain + ephemeral.publicKey.rawRepresentation + nonce)
        let hello = [Message.hello.rawValue, Self.protocolVersion] + commitment
        transcript += hello
        handshake = .awaitingResponse
        return hello
    }

    /// Handles one frame body from the peer; returns the frame bodies to send and an event.
    func receive(_ body: [UInt8]) throws(ExchangeError) -> (send: [[UInt8]], event: Event?) {
        guard let type = body.first.flatMap(Message.init(rawValue:)) else {
            throw .malformedFrame("unknown message type \(body.first ?? 0)")
        }
        if binding != nil {
            switch type {
            case .hello, .response, .reveal: throw .codeExpected
            case .sealed: return try receiveSealed(Array(body.dropFirst()))
            default: return try receivePAKE(type, body)
            }
        }
        switch (type, role) {
        case (.pakeHello, _), (.pakeReply, _), (.pakeFinish, _), (.pakeConfirm, _), (.pakeMismatch, _):
            throw .codeNotExpected
        case (.hello, .listener):
            guard case .idle = handshake else { throw .unexpectedMessage("second HELLO") }
            guard body.count >= 2 else { throw .malformedFrame("short HELLO") }
            guard body[1] == Self.protocolVersion else { throw .unsupportedVersion(body[1]) }
            guard body.count == 34 else { throw .malformedFrame("HELLO must be 34 bytes") }
            handshake = .awaitingReveal(commitment: Array(body[2...]))
            transcript += body
            let response = [Message.response.rawValue, Self.protocolVersion] + ephemeral.publicKey.rawRepresentation + nonce
            transcript += response
            codeRevealed = true
            return ([response], nil)
        case (.response, .dialer):
            guard case .awaitingResponse = handshake else { throw .unexpectedMessage("RESPONSE out of order") }
            guard body.count >= 2 else { throw .malformedFrame("short RESPONSE") }
            guard body[1] == Self.protocolVersion else { throw .unsupportedVersion(body[1]) }
            guard body.count == 66 else { throw .malformedFrame("RESPONSE must be 66 bytes") }
            transcript += body
            let reveal = [Message.reveal.rawValue] + ephemeral.publicKey.rawRepresentation + nonce
            transcript += reveal
            try finishHandshake(peerKey: Array(body[2..<34]))
            handshake = .done
            codeRevealed = true
            return ([reveal], .codeReady(code!))
        case (.reveal, .listener):
            guard case .awaitingReveal(let commitment) = handshake else { throw .unexpectedMessage("REVEAL out of order") }
            guard body.count == 65 else { throw .malformedFrame("REVEAL must be 65 bytes") }
            let peerKey = Array(body[1..<33]), peerNonce = Array(body[33..<65])
            guard SHA256.hash(Self.commitDomain + peerKey + peerNonce) == commitment else { throw .commitmentMismatch }
            transcript += body
            try finishHandshake(peerKey: peerKey)
            handshake = .done
            return ([], .codeReady(code!))
        case (.sealed, _):
            return try receiveSealed(Array(body.dropFirst()))
        default:
            throw .unexpectedMessage("\(type) is not expected by the \(role)")
        }
    }

    /// The CPace handshake (§5.6): D→L nonce_D; L→D nonce_L ‖ Yb; D→L Ya ‖ Ta; L checks Ta, then
    /// L→D Tb (or a MISMATCH, and nothing derived from the key); D checks Tb.
    private func receivePAKE(_ type: Message, _ body: [UInt8]) throws(ExchangeError) -> (send: [[UInt8]], event: Event?) {
        guard let binding else { throw .codeNotExpected }
        let password = SecureBytes(copying: Array(binding.code.password.utf8))
        switch (type, role) {
        case (.pakeHello, .listener):
            guard case .idle = handshake else { throw .unexpectedMessage("second PAKE HELLO") }
            guard body.count >= 2 else { throw .malformedFrame("short PAKE HELLO") }
            guard body[1] == Self.protocolVersion else { throw .unsupportedVersion(body[1]) }
            guard body.count == 2 + Self.pakeNonceByteCount else { throw .malformedFrame("PAKE HELLO must be 18 bytes") }
            peerNonce = Array(body[2...])
            transcript += body
            let r = pakeScalar.map { CPace.Responder(password: password, channelID: binding.channelID, sessionID: pakeSessionID(), associatedData: [], scalar: $0) }
                ?? CPace.Responder(password: password, channelID: binding.channelID, sessionID: pakeSessionID())
            handshake = .awaitingPAKEFinish(r)
            let reply = [Message.pakeReply.rawValue, Self.protocolVersion] + pakeNonce + r.message.encoded
            transcript += reply
            // Yb alone lets the peer test no code (CPace): a run abandoned here spends no guess.
            return ([reply], nil)
        case (.pakeReply, .dialer):
            guard case .awaitingPAKEReply = handshake else { throw .unexpectedMessage("PAKE REPLY out of order") }
            guard body.count >= 2 else { throw .malformedFrame("short PAKE REPLY") }
            guard body[1] == Self.protocolVersion else { throw .unsupportedVersion(body[1]) }
            guard body.count > 2 + Self.pakeNonceByteCount else { throw .malformedFrame("short PAKE REPLY") }
            peerNonce = Array(body[2..<2 + Self.pakeNonceByteCount])
            let responderMessage: CPace.Message
            do { responderMessage = try CPace.Message(encoded: body[(2 + Self.pakeNonceByteCount)...]) } catch {
                throw .malformedFrame("bad CPace share")
            }
            transcript += body
            let initiator = pakeScalar.map { CPace.Initiator(password: password, channelID: binding.channelID, sessionID: pakeSessionID(), associatedData: [], scalar: $0) }
                ?? CPace.Initiator(password: password, channelID: binding.channelID, sessionID: pakeSessionID())
            let session: CPace.Session
            do { session = try initiator.finish(responderMessage: responderMessage) } catch { throw .weakKey }
            handshake = .awaitingPAKEConfirm(session)
            let finish = [Message.pakeFinish.rawValue] + CPace.lengthValueConcatenation([initiator.message.encoded]) + session.confirmation.rawRepresentation
            transcript += finish
            // Ta is derived from the key: from here an abandoned run is a spent guess.
            codeRevealed = true
            return ([finish], nil)
        case (.pakeFinish, .listener):
            guard case .awaitingPAKEFinish(let responder) = handshake else { throw .unexpectedMessage("PAKE FINISH out of order") }
            guard body.count > 1 + CPace.ConfirmationTag.byteCount else { throw .malformedFrame("short PAKE FINISH") }
            let tagBytes = body.suffix(CPace.ConfirmationTag.byteCount)
            let framed = Array(body[1..<body.count - CPace.ConfirmationTag.byteCount])
            // lv_cat of one part: the initiator's message with its length before it.
            guard let message = Self.singlePart(framed), let initiatorMessage = try? CPace.Message(encoded: message),
                  let tag = try? CPace.ConfirmationTag(rawRepresentation: tagBytes) else {
                throw .malformedFrame("bad PAKE FINISH")
            }
            let session: CPace.ResponderSession
            do { session = try responder.finish(initiatorMessage: initiatorMessage) } catch { throw .weakKey }
            // Checking Ta tests the peer's guess of the code, and CONFIRM or MISMATCH tells the
            // outcome: a spent guess from here (the try is taken before either is sent).
            codeRevealed = true
            let ours: CPace.ConfirmationTag
            do { ours = try session.confirmation(afterVerifying: tag) } catch {
                // Nothing derived from the key goes back: only the news that the codes differ.
                throw .codesDoNotMatch
            }
            handshake = .done
            transcript += body
            let confirm = [Message.pakeConfirm.rawValue] + ours.rawRepresentation
            transcript += confirm
            finishPAKE(isk: session.intermediateSessionKey)
            return ([confirm], .codeConfirmed)
        case (.pakeConfirm, .dialer):
            guard case .awaitingPAKEConfirm(let session) = handshake else { throw .unexpectedMessage("PAKE CONFIRM out of order") }
            guard let tag = try? CPace.ConfirmationTag(rawRepresentation: body.dropFirst()) else { throw .malformedFrame("bad PAKE CONFIRM") }
            do { try session.verifyPeerConfirmation(tag) } catch { throw .codesDoNotMatch }
            handshake = .done
            transcript += body
            finishPAKE(isk: session.intermediateSessionKey)
            return ([], .codeConfirmed)
        case (.pakeMismatch, .dialer):
            throw .codesDoNotMatch
        default:
            throw .unexpectedMessage("\(type) is not expected by the \(role)")
        }
    }

    /// The frame a listener sends when the dialer's confirmation fails: plaintext, nothing derived from the key.
    static let mismatchFrame: [UInt8] = [Message.pakeMismatch.rawValue]

    /// `lv_cat(nonce_D, nonce_L)`: fresh randomness from both sides (§5.6).
    private func pakeSessionID() -> [UInt8] {
        let dialerNonce = role == .dialer ? pakeNonce : peerNonce!
        let listenerNonce = role == .listener ? pakeNonce : peerNonce!
        return CPace.lengthValueConcatenation([dialerNonce, listenerNonce])
    }

    /// The content of `lv_cat(part)` with exactly one part, else nil.
    static func singlePart(_ bytes: [UInt8]) -> [UInt8]? {
        guard let first = bytes.first else { return nil }
        // Messages are at most a few KiB: one or two LEB128 length bytes.
        if first < 0x80 { return bytes.count == 1 + Int(first) ? Array(bytes.dropFirst()) : nil }
        guard bytes.count >= 2, bytes[1] != 0, bytes[1] < 0x80 else { return nil }
        let length = Int(first & 0x7F) | Int(bytes[1]) << 7
        return bytes.count == 2 + length ? Array(bytes.dropFirst(2)) : nil
    }

    /// Keys from the PAKE's ISK and the transcript, as `finishHandshake` does for X25519.
    private func finishPAKE(isk: SecureBytes) {
        let hash = SHA256.hash(Self.transcriptDomain + transcript)
        transcriptHash = hash
        let master = BLAKE2b.hash(Self.keyDomain + hash, key: isk, length: 32)
        let dialerToListener = BLAKE2b.deriveKey(from: master, id: 1, context: Self.kdfContext)
        let listenerToDialer = BLAKE2b.deriveKey(from: master, id: 2, context: Self.kdfContext)
        sendKey = role == .dialer ? dialerToListener : listenerToDialer
        receiveKey = role == .dialer ? listenerToDialer : dialerToListener
        codeConfirmedByPAKE = true
        // The people agreed the code face to face: both sides count as confirmed.
        outgoing = .confirmed
        incoming = .confirmed
    }

    private func finishHandshake(peerKey: [UInt8]) throws(ExchangeError) {
        guard let pk = try? X25519.PublicKey(rawRepresentation: peerKey) else { throw .malformedFrame("bad key") }
        let shared: SecureBytes
        do { shared = try ephemeral.sharedSecret(with: pk) } catch { throw .weakKey }
        let hash = SHA256.hash(Self.transcriptDomain + transcript)
        transcriptHash = hash
        let master = BLAKE2b.hash(Self.keyDomain + hash, key: shared, length: 32)
        let dialerToListener = BLAKE2b.deriveKey(from: master, id: 1, context: Self.kdfContext)
        let listenerToDialer = BLAKE2b.deriveKey(from: master, id: 2, context: Self.kdfContext)
        let sasKey = BLAKE2b.deriveKey(from: master, id: 3, context: Self.kdfContext)
        sendKey = role == .dialer ? dialerToListener : listenerToDialer
        receiveKey = role == .dialer ? listenerToDialer : dialerToListener
        code = Self.shortCode(sasKey.exposedBytes())
    }

    /// Six digits from the first four bytes (big-endian) modulo 10^6, shown as "482 913".
    static func shortCode(_ material: [UInt8]) -> String {
        let n = material.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) } % 1_000_000
        let digits = String(n)
        let padded = String(repeating: "0", count: 6 - digits.count) + digits
        return String(padded.prefix(3)) + " " + String(padded.suffix(3))
    }

    // MARK: Sealed messages

    private func nonce(for counter: UInt64) -> [UInt8] {
        [UInt8](repeating: 0, count: 16) + (0..<8).map { UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64($0))) }
    }

    /// A sealed frame of `inner` type (internal, not private: tests that play a hostile peer send
    /// any inner type and content through `@testable import`).
    func seal(_ inner: Inner, _ content: [UInt8]) -> [UInt8] {
        seal(type: inner.rawValue, content)
    }

    /// A sealed frame of any inner type (hostile-peer tests send out-of-order post-card messages).
    func seal(type: UInt8, _ content: [UInt8]) -> [UInt8] {
        precondition(sendKey != nil, "seal before the handshake")
        let plaintext = [type] + content
        let ct = plaintext.withUnsafeBytes {
            XChaCha20Poly1305.seal($0, key: sendKey!, nonce: nonce(for: sendCounter), associatedData: [Message.sealed.rawValue])
        }
        sendCounter += 1
        return [Message.sealed.rawValue] + ct
    }

    private func receiveSealed(_ ciphertext: [UInt8]) throws(ExchangeError) -> (send: [[UInt8]], event: Event?) {
        guard let key = receiveKey else { throw .unexpectedMessage("sealed message before the handshake") }
        let plain: SecureBytes
        do {
            plain = try XChaCha20Poly1305.open(ciphertext, key: key, nonce: nonce(for: receiveCounter),
                                               associatedData: [Message.sealed.rawValue])
        } catch { throw .badAuthentication }
        receiveCounter += 1
        let bytes = plain.exposedBytes()
        if let type = bytes.first, type >= Self.firstPostCardType {
            guard isComplete else { throw .unexpectedMessage("post-card message \(type) before both acknowledgements") }
            return ([], .postCard(type: type, content: Array(bytes.dropFirst())))
        }
        guard let inner = bytes.first.flatMap(Inner.init(rawValue:)) else { throw .malformedFrame("unknown sealed message") }
        let content = Array(bytes.dropFirst())
        switch inner {
        case .confirm:
            guard case .undecided = incoming else { throw .unexpectedMessage("second CONFIRM") }
            incoming = .confirmed
            return ([], .peerConfirmed)
        case .decline:
            throw .declinedByPeer
        case .card:
            guard confirmedLocally, case .confirmed = incoming else { throw .unexpectedMessage("CARD before both confirmations") }
            let card = try acceptCard(content)
            incoming = .card(card)
            return ([], .cardReceived(card))
        case .ack:
            guard outgoing == .cardSent else { throw .unexpectedMessage("ACK out of order") }
            outgoing = .acknowledged
            return ([], .peerAcknowledged)
        case .reject:
            if content.elementsEqual(ExchangeError.peerDidNotAnswer.wireReason.utf8) { throw .peerDidNotAnswer }
            throw .rejectedByPeer(String(decoding: content.prefix(200), as: UTF8.self))
        }
    }

    private func acceptCard(_ content: [UInt8]) throws(ExchangeError) -> VerifiedCard {
        guard content.count > Ed25519.Signature.byteCount else { throw .malformedFrame("short CARD") }
        let binding = try! Ed25519.Signature(rawRepresentation: content.prefix(Ed25519.Signature.byteCount))
        let raw = Array(content.dropFirst(Ed25519.Signature.byteCount))
        let card: VerifiedCard
        do { card = try verifier.verify(raw) } catch { throw .invalidCard(error) }
        guard card.encoding == .json else { throw .invalidCard(.malformed("a CARD holds the JSON payload")) }
        guard card.payload.signPubKey.isValidSignature(binding, for: Self.bindingInput(transcriptHash: transcriptHash!, cardBytes: raw)) else {
            throw .bindingInvalid
        }
        return card
    }

    /// `"meishi-exchange-v1" || 0x00 || transcript hash || SHA-256(payload bytes as sent)`; the
    /// sender sends its canonical JSON, so this is SHA-256(JCS(payload)).
    static func bindingInput(transcriptHash: [UInt8], cardBytes: [UInt8]) -> [UInt8] {
        bindingDomain + transcriptHash + SHA256.hash(cardBytes)
    }

    // MARK: What this side sends (the steps `handle` takes)

    /// After the person compared the codes: CONFIRM when they match, DECLINE otherwise.
    func confirm(_ matches: Bool) -> [UInt8] {
        precondition(code != nil && outgoing == .undecided)
        if matches { outgoing = .confirmed }
        return seal(matches ? .confirm : .decline, [])
    }

    /// Our signed card with its binding signature. Only after both confirmations.
    func card(_ card: SignedCard, signedBy key: Ed25519.SigningKey) -> [UInt8] {
        precondition(outgoing == .confirmed && confirmedByPeer)
        precondition(key.publicKey == card.payload.signPubKey)
        outgoing = .cardSent
        let binding = key.signature(for: Self.bindingInput(transcriptHash: transcriptHash!, cardBytes: card.bytes))
        return seal(.card, binding.rawRepresentation + card.bytes)
    }

    /// Tells the peer we verified its card and will store it.
    func acknowledge() -> [UInt8] {
        guard case .card(let peer) = incoming else { preconditionFailure("acknowledge a verified card once") }
        incoming = .acknowledged(peer)
        return seal(.ack, [])
    }

    /// A sealed message of a post-card phase; only once both sides acknowledged the cards.
    func postCard(type: UInt8, content: [UInt8]) -> [UInt8] {
        precondition(isComplete && type >= Self.firstPostCardType)
        return seal(type: type, content)
    }

    /// Tells the peer why we refuse (before closing).
    func reject(_ reason: String) -> [UInt8]? {
        guard sendKey != nil else { return nil }
        return seal(.reject, Array(reason.utf8.prefix(200)))
    }
}
