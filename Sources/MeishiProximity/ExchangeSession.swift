import MeishiCard
import MeishiCrypto

/// The exchange protocol between two peers, independent of the transport (docs/PROTOCOL.md §5).
///
/// The dialer commits to its ephemeral X25519 key before it sees the listener's, so a relay in
/// the middle cannot choose keys that make both screens show the same 6-digit code. Both sides
/// derive the code from the shared secret and the transcript; after both people confirm it,
/// everything is sealed with XChaCha20-Poly1305 under per-direction keys and counters.
public final class ExchangeSession {
    public enum Role: Sendable { case dialer, listener }

    /// What the application must react to after a frame.
    public enum Event: Sendable {
        /// The handshake is complete: show this code and ask the person to compare it.
        case codeReady(String)
        /// The peer's person confirmed the code.
        case peerConfirmed
        /// The peer's card arrived and verified, bound to this session.
        case cardReceived(VerifiedCard)
        /// The peer verified our card and will store it.
        case peerAcknowledged
    }

    public static let protocolVersion: UInt8 = 1
    static let transcriptDomain = Array("meishi-exchange-transcript-v1".utf8) + [0]
    static let commitDomain = Array("meishi-commit-v1".utf8) + [0]
    static let keyDomain = Array("meishi-exchange-keys-v1".utf8) + [0]
    static let bindingDomain = Array("meishi-exchange-v1".utf8) + [0]
    static let kdfContext = "meishiEX"

    enum Message: UInt8 {
        case hello = 0x01, response = 0x02, reveal = 0x03, sealed = 0x10
    }

    enum Inner: UInt8 {
        case confirm = 0x20, decline = 0x21, card = 0x30, ack = 0x40, reject = 0x41
    }

    public let role: Role
    /// Checks the peer's card (everything `meishi verify` checks, with the session's clock window).
    private let verifier: CardVerifier
    private let ephemeral: X25519.SecretKey
    private let nonce: [UInt8]
    private var transcript: [UInt8] = []
    private var peerCommitment: [UInt8]?
    private var sendKey: SecureBytes?
    private var receiveKey: SecureBytes?
    private var sendCounter: UInt64 = 0
    private var receiveCounter: UInt64 = 0

    /// SHA-256 of the handshake transcript, once the handshake is complete.
    public private(set) var transcriptHash: [UInt8]?
    /// The short authentication string, e.g. "482 913".
    public private(set) var code: String?
    public private(set) var confirmedLocally = false
    public private(set) var confirmedByPeer = false
    public private(set) var cardSent = false
    public private(set) var peerCard: VerifiedCard?
    public private(set) var acknowledgedByPeer = false
    public private(set) var acknowledgedLocally = false

    /// This side has sent what lets the peer compute the code (the listener's RESPONSE, the
    /// dialer's REVEAL). From here an abandoned session has shown the peer one code sample: a
    /// spent guess (docs/PROTOCOL.md §5.4).
    public private(set) var codeRevealed = false

    /// Both people confirmed, both cards verified, both acknowledged: safe to store.
    public var isComplete: Bool { peerCard != nil && acknowledgedByPeer && acknowledgedLocally }

    public init(role: Role, verifier: CardVerifier, ephemeral: X25519.SecretKey = X25519.SecretKey(),
                nonce: [UInt8] = SecureRandom.bytes(32)) {
        precondition(nonce.count == 32)
        self.role = role
        self.verifier = verifier
        self.ephemeral = ephemeral
        self.nonce = nonce
    }

    // MARK: Handshake

    /// The first frame body: the dialer's HELLO (nil for the listener, which waits).
    public func start() -> [UInt8]? {
        guard role == .dialer else { return nil }
        let commitment = SHA256.hash(Self.commitDomain + ephemeral.publicKey.rawRepresentation + nonce)
        let hello = [Message.hello.rawValue, Self.protocolVersion] + commitment
        transcript += hello
        return hello
    }

    /// Handles one frame body from the peer; returns the frame bodies to send and an event.
    public func receive(_ body: [UInt8]) throws(ExchangeError) -> (send: [[UInt8]], event: Event?) {
        guard let type = body.first.flatMap(Message.init(rawValue:)) else {
            throw .malformedFrame("unknown message type \(body.first ?? 0)")
        }
        switch (type, role) {
        case (.hello, .listener):
            guard transcript.isEmpty else { throw .unexpectedMessage("second HELLO") }
            guard body.count >= 2 else { throw .malformedFrame("short HELLO") }
            guard body[1] == Self.protocolVersion else { throw .unsupportedVersion(body[1]) }
            guard body.count == 34 else { throw .malformedFrame("HELLO must be 34 bytes") }
            peerCommitment = Array(body[2...])
            transcript += body
            let response = [Message.response.rawValue, Self.protocolVersion] + ephemeral.publicKey.rawRepresentation + nonce
            transcript += response
            codeRevealed = true
            return ([response], nil)
        case (.response, .dialer):
            guard transcript.count == 34, sendKey == nil else { throw .unexpectedMessage("RESPONSE out of order") }
            guard body.count >= 2 else { throw .malformedFrame("short RESPONSE") }
            guard body[1] == Self.protocolVersion else { throw .unsupportedVersion(body[1]) }
            guard body.count == 66 else { throw .malformedFrame("RESPONSE must be 66 bytes") }
            transcript += body
            let reveal = [Message.reveal.rawValue] + ephemeral.publicKey.rawRepresentation + nonce
            transcript += reveal
            try finishHandshake(peerKey: Array(body[2..<34]))
            codeRevealed = true
            return ([reveal], .codeReady(code!))
        case (.reveal, .listener):
            guard let commitment = peerCommitment, sendKey == nil else { throw .unexpectedMessage("REVEAL out of order") }
            guard body.count == 65 else { throw .malformedFrame("REVEAL must be 65 bytes") }
            let peerKey = Array(body[1..<33]), peerNonce = Array(body[33..<65])
            guard SHA256.hash(Self.commitDomain + peerKey + peerNonce) == commitment else { throw .commitmentMismatch }
            transcript += body
            try finishHandshake(peerKey: peerKey)
            return ([], .codeReady(code!))
        case (.sealed, _):
            return try receiveSealed(Array(body.dropFirst()))
        default:
            throw .unexpectedMessage("\(type) is not expected by the \(role)")
        }
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
        precondition(sendKey != nil, "seal before the handshake")
        let plaintext = [inner.rawValue] + content
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
        guard let inner = bytes.first.flatMap(Inner.init(rawValue:)) else { throw .malformedFrame("unknown sealed message") }
        let content = Array(bytes.dropFirst())
        switch inner {
        case .confirm:
            guard !confirmedByPeer else { throw .unexpectedMessage("second CONFIRM") }
            confirmedByPeer = true
            return ([], .peerConfirmed)
        case .decline:
            throw .declinedByPeer
        case .card:
            guard confirmedLocally, confirmedByPeer, peerCard == nil else { throw .unexpectedMessage("CARD before both confirmations") }
            return ([], .cardReceived(try acceptCard(content)))
        case .ack:
            guard cardSent, !acknowledgedByPeer else { throw .unexpectedMessage("ACK out of order") }
            acknowledgedByPeer = true
            return ([], .peerAcknowledged)
        case .reject:
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
        peerCard = card
        return card
    }

    /// `"meishi-exchange-v1" || 0x00 || transcript hash || SHA-256(payload bytes as sent)`; the
    /// sender sends its canonical JSON, so this is SHA-256(JCS(payload)).
    static func bindingInput(transcriptHash: [UInt8], cardBytes: [UInt8]) -> [UInt8] {
        bindingDomain + transcriptHash + SHA256.hash(cardBytes)
    }

    // MARK: What the application sends

    /// After the person compared the codes: CONFIRM when they match, DECLINE otherwise.
    public func confirm(_ matches: Bool) -> [UInt8] {
        precondition(code != nil && !confirmedLocally)
        if matches { confirmedLocally = true }
        return seal(matches ? .confirm : .decline, [])
    }

    /// Our signed card with its binding signature. Only after both confirmations.
    public func card(_ card: SignedCard, signedBy key: Ed25519.SigningKey) -> [UInt8] {
        precondition(confirmedLocally && confirmedByPeer && !cardSent)
        precondition(key.publicKey == card.payload.signPubKey)
        cardSent = true
        let binding = key.signature(for: Self.bindingInput(transcriptHash: transcriptHash!, cardBytes: card.bytes))
        return seal(.card, binding.rawRepresentation + card.bytes)
    }

    /// Tells the peer we verified its card and will store it.
    public func acknowledge() -> [UInt8] {
        precondition(peerCard != nil && !acknowledgedLocally)
        acknowledgedLocally = true
        return seal(.ack, [])
    }

    /// Tells the peer why we refuse (before closing).
    public func reject(_ reason: String) -> [UInt8]? {
        guard sendKey != nil else { return nil }
        return seal(.reject, Array(reason.utf8.prefix(200)))
    }
}
