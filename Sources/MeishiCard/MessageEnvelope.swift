import MeishiCrypto

/// Why a message envelope was refused. Cases carry no message text.
public enum MessageEnvelopeError: Error, Equatable, Sendable {
    /// The bytes are not an envelope of this version: what is wrong.
    case malformed(String)
    /// The envelope is larger than `MessageEnvelope.maximumSize`.
    case tooLarge(Int)
    /// The text is longer than `MessageEnvelope.maximumTextBytes` (UTF-8).
    case textTooLong(Int)
    case emptyText
    /// The text holds a NUL character.
    case nulCharacter
    /// expires − created is not within 1 s … `MessageEnvelope.maximumLifetime`.
    case badLifetime(Int64)
    /// The box did not open: not made by the claimed sender for this recipient, or tampered.
    case authenticationFailed
}

/// A short note from one contact to another (docs/PROTOCOL.md §9.1), deniable by design: the
/// text and every header field are in a libsodium `crypto_box` between the two parties' static
/// X25519 keys (the `pubKey` of their signed cards) and nothing is signed, so the recipient knows
/// who wrote it but could have made the same box itself.
///
///     "MSHM" | version 1 | flags (bit 0: once) | id (16) | created (u64 BE) | expires (u64 BE)
///     | len | sender DID | len | recipient DID | nonce (24) | crypto_box(header ‖ text)
///
/// The header is everything before the nonce; the box holds it again, and opening checks the two
/// copies are equal, so no field can be changed without the box failing.
public struct MessageEnvelope: Equatable, Sendable {
    public static let magic: [UInt8] = Array("MSHM".utf8)
    public static let version: UInt8 = 1
    public static let maximumTextBytes = 4096
    /// The longest lifetime a sender may ask for (`--ttl`): 7 days.
    public static let maximumLifetime: Int64 = 7 * 86_400
    public static let defaultLifetime: Int64 = 86_400
    public static let idByteCount = 16
    static let maximumDIDBytes = 64
    /// The largest envelope: the longest header twice (in clear and in the box), a nonce, a MAC, the longest text.
    public static let maximumSize = 2 * (4 + 1 + 1 + 16 + 8 + 8 + 2 * (1 + maximumDIDBytes)) + 24 + 16 + maximumTextBytes

    public let id: [UInt8]
    public let created: Int64
    public let expires: Int64
    public let senderDID: String
    public let recipientDID: String
    /// The recipient's inbox deletes the message once it has been shown.
    public let once: Bool
    public let nonce: [UInt8]
    public let box: [UInt8]

    /// The header as it appears before the nonce (and again inside the box).
    public var header: [UInt8] {
        Self.header(id: id, created: created, expires: expires, senderDID: senderDID, recipientDID: recipientDID, once: once)
    }

    public var encoded: [UInt8] { header + nonce + box }

    static func header(id: [UInt8], created: Int64, expires: Int64, senderDID: String, recipientDID: String, once: Bool) -> [UInt8] {
        let s = Array(senderDID.utf8), r = Array(recipientDID.utf8)
        return magic + [version, once ? 1 : 0] + id + bigEndian(created) + bigEndian(expires)
            + [UInt8(s.count)] + s + [UInt8(r.count)] + r
    }

    static func bigEndian(_ v: Int64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: v) >> (56 - 8 * UInt64($0))) } }

    /// The text's UTF-8 bytes when it and the lifetime are within the limits (checked before a
    /// network step, so a note that cannot be sent fails first).
    @discardableResult
    public static func validate(text: String, lifetime: Int64) throws(MessageEnvelopeError) -> [UInt8] {
        let t = Array(text.utf8)
        guard !t.isEmpty else { throw .emptyText }
        guard t.count <= maximumTextBytes else { throw .textTooLong(t.count) }
        guard !t.contains(0) else { throw .nulCharacter }
        guard (1...maximumLifetime).contains(lifetime) else { throw .badLifetime(lifetime) }
        return t
    }

    /// Seals `text` from `senderKey` to `recipientKey`. `id` and `nonce` are random unless given
    /// (test vectors give them).
    public static func seal(text: String, created: Int64, lifetime: Int64, once: Bool, senderDID: String, recipientDID: String,
                            senderKey: X25519.SecretKey, recipientKey: X25519.PublicKey,
                            id: [UInt8]? = nil, nonce: [UInt8]? = nil) throws(MessageEnvelopeError) -> MessageEnvelope {
        let t = try validate(text: text, lifetime: lifetime)
        guard DIDKey.ed25519PublicKey(from: senderDID) != nil, DIDKey.ed25519PublicKey(from: recipientDID) != nil else {
            throw .malformed("sender and recipient must be Ed25519 did:key identifiers")
        }
        let id = id ?? SecureRandom.bytes(idByteCount)
        precondition(id.count == idByteCount)
        let nonce = nonce ?? SecureRandom.bytes(Box.nonceByteCount)
        let head = header(id: id, created: created, expires: created + lifetime, senderDID: senderDID, recipientDID: recipientDID,
                          once: once)
        var plain = head + t
        defer { wipe(&plain) }
        let box: [UInt8]
        do { box = try Box.seal(plain, nonce: nonce, to: recipientKey, from: senderKey) } catch { throw .authenticationFailed }
        return MessageEnvelope(id: id, created: created, expires: created + lifetime, senderDID: senderDID, recipientDID: recipientDID,
                               once: once, nonce: nonce, box: box)
    }

    private init(id: [UInt8], created: Int64, expires: Int64, senderDID: String, recipientDID: String, once: Bool,
                 nonce: [UInt8], box: [UInt8]) {
        self.id = id
        self.created = created
        self.expires = expires
        self.senderDID = senderDID
        self.recipientDID = recipientDID
        self.once = once
        self.nonce = nonce
        self.box = box
    }

    /// Parses an envelope as it arrived; checks its shape, not its box (see `open`).
    public init(parsing bytes: [UInt8]) throws(MessageEnvelopeError) {
        guard bytes.count <= Self.maximumSize else { throw .tooLarge(bytes.count) }
        var i = 0
        func take(_ n: Int) throws(MessageEnvelopeError) -> ArraySlice<UInt8> {
            guard n >= 0, bytes.count - i >= n else { throw .malformed("truncated") }
            defer { i += n }
            return bytes[i..<i + n]
        }
        func number() throws(MessageEnvelopeError) -> Int64 {
            Int64(bitPattern: try take(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        }
        func did() throws(MessageEnvelopeError) -> String {
            let n = Int(try take(1).first!)
            guard let s = String(validating: try take(n), as: UTF8.self), DIDKey.ed25519PublicKey(from: s) != nil else {
                throw .malformed("not an Ed25519 did:key")
            }
            return s
        }
        guard Array(try take(4)) == Self.magic else { throw .malformed("not a meishi message") }
        guard try take(1).first! == Self.version else { throw .malformed("unknown version") }
        let flags = try take(1).first!
        guard flags & ~1 == 0 else { throw .malformed("unknown flags") }
        let id = Array(try take(Self.idByteCount))
        let created = try number(), expires = try number()
        // `expires > created >= 0` first: a hostile `expires` near Int64.min must not overflow the difference.
        guard created >= 0, expires > created, expires - created <= Self.maximumLifetime else {
            throw .badLifetime(expires &- created)
        }
        let sender = try did(), recipient = try did()
        let nonce = Array(try take(Box.nonceByteCount))
        let box = Array(bytes[i...])
        guard box.count > Box.overhead else { throw .malformed("truncated") }
        self.init(id: id, created: created, expires: expires, senderDID: sender, recipientDID: recipient, once: flags & 1 != 0,
                  nonce: nonce, box: box)
    }

    /// The text, opened with the recipient's secret key and the sender's public key (from the
    /// sender's verified card); `.authenticationFailed` unless the box holds this very header.
    public func open(from senderKey: X25519.PublicKey, with recipientKey: X25519.SecretKey) throws(MessageEnvelopeError) -> String {
        let plain: SecureBytes
        do { plain = try Box.open(box, nonce: nonce, from: senderKey, to: recipientKey) } catch { throw .authenticationFailed }
        let head = header
        let opened: String?? = plain.withUnsafeBytes { p -> String?? in
            guard p.count > head.count, p.prefix(head.count).elementsEqual(head) else { return nil }
            guard let text = String(validating: p[head.count...], as: UTF8.self), !text.utf8.contains(0),
                  text.utf8.count <= Self.maximumTextBytes else { return .some(nil) }
            return text
        }
        guard let inner = opened else { throw .authenticationFailed }
        guard let text = inner else { throw .malformed("the text is not UTF-8") }
        return text
    }
}
