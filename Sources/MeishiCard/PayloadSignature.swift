import MeishiCrypto

/// Our own card, signed: the payload and the canonical JSON bytes that go out, computed once.
public struct SignedCard: Sendable {
    public let payload: ProximityPayload
    /// JCS of the signed payload: what `card export` writes and an exchange sends.
    public let bytes: [UInt8]

    fileprivate init(payload: ProximityPayload, bytes: [UInt8]) {
        self.payload = payload
        self.bytes = bytes
    }
}

/// A payload that passed `CardVerifier`: signature, DID <-> key, size and shape, timestamp.
///
/// There is no other way to make one, so a value of this type is proof of verification.
public struct VerifiedCard: Sendable {
    /// How the card arrived.
    public enum Encoding: String, Sendable {
        /// The JSON payload (a file, standard input, an exchange).
        case json
        /// The QR text form, `MEISHI1:` + Base45 (docs/PROTOCOL.md section 4).
        case qrText = "qr-text"
    }

    public let payload: ProximityPayload
    /// The bytes exactly as received (JSON or QR text, surrounding whitespace removed for the latter).
    public let bytes: [UInt8]
    public let encoding: Encoding
    /// Seconds between signing and verification (negative for a clock slightly ahead).
    public let ageSeconds: Int64

    fileprivate init(payload: ProximityPayload, bytes: [UInt8], encoding: Encoding, ageSeconds: Int64) {
        self.payload = payload
        self.bytes = bytes
        self.encoding = encoding
        self.ageSeconds = ageSeconds
    }
}

extension ProximityPayload {
    /// Signs the values a share discloses. `disclosed` must hold a name (see `Card.share`).
    public static func sign(disclosed: [FieldName: [String]], level: DisclosureLevel, signingKey: Ed25519.SigningKey,
                            boxKey: X25519.PublicKey, timestamp: Int64,
                            shareId: String = ShareID.random()) throws(PayloadError) -> SignedCard {
        var fields: [FieldName: FieldValue] = [:]
        for (name, values) in disclosed {
            fields[name] = name.isMultiValued ? .multiple(values) : .single(values[0])
        }
        let unsigned = ProximityPayload(
            shareId: shareId, senderDID: DIDKey.did(for: signingKey.publicKey), signPubKey: signingKey.publicKey,
            pubKey: boxKey, timestamp: timestamp, level: level, cardFields: fields,
            payloadSignature: try! Ed25519.Signature(rawRepresentation: [UInt8](repeating: 0, count: Ed25519.Signature.byteCount)))
        let card = unsigned.signed(with: signingKey)
        guard card.bytes.count <= maximumEncodedSize else { throw .tooLarge(bytes: card.bytes.count) }
        return card
    }

    /// This payload with its signature made by `key` (whatever `signPubKey` and `senderDID` say:
    /// tests use it, through `@testable import`, to forge payloads that must then fail verification).
    func signed(with key: Ed25519.SigningKey) -> SignedCard {
        var p = self
        p.payloadSignature = key.signature(for: signingInput)
        return SignedCard(payload: p, bytes: p.canonicalJSON)
    }
}

/// Checks payloads as `meishi verify` and an exchange do.
public struct CardVerifier: Sendable {
    /// How far in the future a timestamp may be before a card is refused (10 minutes).
    public static let defaultMaximumSkew: Int64 = 600

    /// Seconds a timestamp may lie in the future.
    public var maximumSkew: Int64
    /// When set, a card older than this is refused (`stale`): an exchanged card is signed for the meeting.
    public var maximumAge: Int64?
    /// The current time in Unix seconds.
    public var clock: @Sendable () -> Int64

    public init(maximumSkew: Int64 = defaultMaximumSkew, maximumAge: Int64? = nil, clock: @escaping @Sendable () -> Int64) {
        self.maximumSkew = maximumSkew
        self.maximumAge = maximumAge
        self.clock = clock
    }

    /// Checks `bytes`: size and shape, version, DID <-> key, signature, and a timestamp no more
    /// than `maximumSkew` seconds ahead (and no older than `maximumAge` when set). `bytes` is the
    /// JSON payload or its QR text form (`MEISHI1:…`).
    public func verify(_ bytes: [UInt8]) throws(PayloadError) -> VerifiedCard {
        let payload: ProximityPayload
        let kept: [UInt8]
        let encoding: VerifiedCard.Encoding
        if let text = Self.qrText(bytes) {
            payload = try CardQRText.decode(text)
            kept = Array(text.utf8)
            encoding = .qrText
        } else {
            payload = try ProximityPayload.parse(bytes)
            kept = bytes
            encoding = .json
        }
        guard DIDKey.ed25519PublicKey(from: payload.senderDID) == payload.signPubKey else { throw .keyMismatch }
        guard payload.signPubKey.isValidSignature(payload.payloadSignature, for: payload.signingInput) else {
            throw .badSignature
        }
        let now = clock()
        if payload.timestamp > now + maximumSkew { throw .fromTheFuture(seconds: payload.timestamp - now) }
        let age = now - payload.timestamp
        if let maximumAge, age > maximumAge { throw .tooOld(seconds: age) }
        return VerifiedCard(payload: payload, bytes: kept, encoding: encoding, ageSeconds: age)
    }

    /// The QR text in `data` (surrounding whitespace removed), if it is one.
    static func qrText(_ data: [UInt8]) -> String? {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        guard let first = data.firstIndex(where: { !isSpace($0) }), data[first...].starts(with: Array("MEISHI".utf8)),
              let last = data.lastIndex(where: { !isSpace($0) }) else { return nil }
        return String(decoding: data[first...last], as: UTF8.self)
    }
}

/// The random share id of a payload: a lowercase RFC 9562 version-4 UUID.
public enum ShareID {
    /// A fresh random share id.
    public static func random() -> String {
        var b = SecureRandom.bytes(16)
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        return string(b)
    }

    /// The canonical text of 16 UUID bytes.
    public static func string(_ b: [UInt8]) -> String {
        precondition(b.count == 16)
        let h = Array(Hex.encode(b))
        return String(h[0..<8]) + "-" + String(h[8..<12]) + "-" + String(h[12..<16]) + "-" + String(h[16..<20]) + "-" + String(h[20..<32])
    }

    /// The 16 bytes of a share id (which must be valid).
    static func bytes(_ s: String) -> [UInt8] { Hex.decode(s.replacingOccurrences(of: "-", with: ""))! }

    /// True for a lowercase RFC 9562 version-4 UUID.
    public static func isValid(_ s: String) -> Bool {
        let c = Array(s.utf8)
        guard c.count == 36 else { return false }
        for (n, ch) in c.enumerated() {
            if [8, 13, 18, 23].contains(n) { if ch != UInt8(ascii: "-") { return false }; continue }
            guard (0x30...0x39).contains(ch) || (0x61...0x66).contains(ch) else { return false }
        }
        return c[14] == UInt8(ascii: "4") && [UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "a"), UInt8(ascii: "b")].contains(c[19])
    }
}

extension Ed25519.PublicKey {
    /// The fingerprint people read aloud to each other: 30 digits in six groups of five, from
    /// SHA-256("meishi-fingerprint-v1" || 0x00 || key) (docs/PROTOCOL.md).
    public var fingerprint: String {
        let digest = SHA256.hash(Array("meishi-fingerprint-v1".utf8) + [0] + rawRepresentation)
        return (0..<6).map { group in
            let chunk = digest[group * 5..<group * 5 + 5].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let digits = String(chunk % 100_000)
            return String(repeating: "0", count: 5 - digits.count) + digits
        }.joined(separator: " ")
    }
}
