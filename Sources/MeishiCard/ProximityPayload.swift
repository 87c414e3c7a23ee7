import MeishiCrypto
import MeishiText

/// The value of one field in a payload: a string, or an array for multi-valued fields.
public enum FieldValue: Equatable, Sendable {
    case single(String)
    case multiple([String])

    public var values: [String] {
        switch self {
        case .single(let s): [s]
        case .multiple(let a): a
        }
    }
}

/// Why a payload is not a valid meishi card. Each case maps to one verdict.
public enum PayloadError: Error, Equatable, Sendable {
    case tooLarge(bytes: Int)
    case malformed(String)
    case unsupportedVersion(String)
    case keyMismatch
    case badSignature
    case fromTheFuture(seconds: Int64)
    /// Older than an exchange's freshness window (cards swapped in person are signed just then).
    case tooOld(seconds: Int64)

    /// The stable verdict name used by `meishi verify --json` and the test vectors.
    public var verdict: String {
        switch self {
        case .tooLarge, .malformed: "malformed"
        case .unsupportedVersion: "unsupported-version"
        case .keyMismatch: "key-mismatch"
        case .badSignature: "bad-signature"
        case .fromTheFuture: "from-the-future"
        case .tooOld: "stale"
        }
    }

    public var reason: String {
        switch self {
        case .tooLarge(let n): "payload is \(n) bytes, more than the \(ProximityPayload.maximumEncodedSize)-byte limit"
        case .malformed(let why): "malformed payload: \(why)"
        case .unsupportedVersion(let v): "unsupported payload version \(v) (this meishi reads version \(ProximityPayload.currentVersion))"
        case .keyMismatch: "signPubKey does not match the key in senderDID"
        case .badSignature: "bad signature"
        case .fromTheFuture(let s): "timestamp is \(s) seconds in the future"
        case .tooOld(let s): "card was signed \(s) seconds ago, outside the exchange window"
        }
    }
}

/// A signed card as it travels: ProximityPayload version 1 (docs/PROTOCOL.md).
///
/// `payloadSignature` is Ed25519 over `"meishi-card-v1" || 0x00 || JCS(payload without payloadSignature)`.
/// A value of this type has the right shape but is not trusted: `CardVerifier` turns bytes into a
/// `VerifiedCard`, and `sign(with:)` (in PayloadSignature.swift) makes our own.
public struct ProximityPayload: Equatable, Sendable {
    public static let currentVersion = 1
    /// Largest payload accepted, in bytes of its JSON text.
    public static let maximumEncodedSize = 16 * 1024
    public static let signatureDomain = "meishi-card-v1"
    /// The members of version 1, as the UTF-8 bytes a member name must equal (never String `==`,
    /// under which `"pub\u212aey"` with KELVIN SIGN is `pubKey`).
    static let members: Set<[UInt8]> = Set(["version", "shareId", "senderDID", "signPubKey", "pubKey", "timestamp",
                                            "level", "cardFields", "payloadSignature"].map { Array($0.utf8) })

    public var shareId: String
    public var senderDID: String
    public var signPubKey: Ed25519.PublicKey
    /// The X25519 key for sealed messages.
    public var pubKey: X25519.PublicKey
    /// Unix seconds.
    public var timestamp: Int64
    public var level: DisclosureLevel
    public var cardFields: [FieldName: FieldValue]
    public var payloadSignature: Ed25519.Signature

    public init(shareId: String, senderDID: String, signPubKey: Ed25519.PublicKey, pubKey: X25519.PublicKey, timestamp: Int64,
                level: DisclosureLevel, cardFields: [FieldName: FieldValue], payloadSignature: Ed25519.Signature) {
        self.shareId = shareId
        self.senderDID = senderDID
        self.signPubKey = signPubKey
        self.pubKey = pubKey
        self.timestamp = timestamp
        self.level = level
        self.cardFields = cardFields
        self.payloadSignature = payloadSignature
    }

    /// The payload as a JSON object; without `payloadSignature` when `signed` is false.
    public func jsonValue(signed: Bool = true) -> JSONValue {
        var obj: [String: JSONValue] = [
            "version": .number(Double(Self.currentVersion)),
            "shareId": .string(shareId),
            "senderDID": .string(senderDID),
            "signPubKey": .string(Base64URL.encode(signPubKey.rawRepresentation)),
            "pubKey": .string(Base64URL.encode(pubKey.rawRepresentation)),
            "timestamp": .number(Double(timestamp)),
            "level": .string(level.rawValue),
            "cardFields": .object(Dictionary(uniqueKeysWithValues: cardFields.map { name, v in
                switch v {
                case .single(let s): (name.rawValue, JSONValue.string(s))
                case .multiple(let a): (name.rawValue, JSONValue.array(a.map { .string($0) }))
                }
            })),
        ]
        if signed { obj["payloadSignature"] = .string(Base64URL.encode(payloadSignature.rawRepresentation)) }
        return .object(obj)
    }

    /// The exact bytes the signature covers (one JCS run: compute it once per payload).
    public var signingInput: [UInt8] {
        Array(Self.signatureDomain.utf8) + [0] + JCS.canonicalize(jsonValue(signed: false))
    }

    /// The signed payload as canonical (JCS) JSON, the form meishi writes.
    public var canonicalJSON: [UInt8] { JCS.canonicalize(jsonValue()) }

    /// The fields in display order (standard fields first, then custom ones).
    public var orderedFields: [(name: FieldName, values: [String])] {
        cardFields.keys.sorted().map { (name: $0, values: cardFields[$0]!.values) }
    }

    public var displayName: String? { cardFields[.name]?.values.first }

    /// Parses and checks the shape of a payload (size, JSON, version, members, limits).
    /// It does not check the signature or the DID: a verifier does that next.
    public static func parse<D: Collection>(_ data: D) throws(PayloadError) -> ProximityPayload where D.Element == UInt8 {
        guard data.count <= maximumEncodedSize else { throw .tooLarge(bytes: data.count) }
        let json: JSONValue
        do { json = try StrictJSONParser.parse(data) } catch { throw .malformed("not valid JSON (\(error))") }
        return try parse(json)
    }

    public static func parse(_ json: JSONValue) throws(PayloadError) -> ProximityPayload {
        guard case .object(let members) = json else { throw .malformed("not a JSON object") }
        // The version decides how the rest is read, so it is checked first.
        guard let version = json["version"] else { throw .malformed("missing member \"version\"") }
        guard case .number(let v) = version else { throw .malformed("\"version\" is not a number") }
        guard v == Double(currentVersion) else { throw .unsupportedVersion(JCS.serialize(number: v)) }
        for m in members where !Self.members.contains(Array(m.key.utf8)) {
            throw .malformed("unknown member \"\(m.key)\"")
        }
        func string(_ key: String) throws(PayloadError) -> String {
            guard let value = json[key] else { throw .malformed("missing member \"\(key)\"") }
            guard case .string(let s) = value else { throw .malformed("\"\(key)\" is not a string") }
            return s
        }
        func bytes(_ key: String, count: Int) throws(PayloadError) -> [UInt8] {
            guard let b = Base64URL.decode(try string(key)) else { throw .malformed("\"\(key)\" is not base64url without padding") }
            guard b.count == count else { throw .malformed("\"\(key)\" must be \(count) bytes, not \(b.count)") }
            return b
        }

        let shareId = try string("shareId")
        guard ShareID.isValid(shareId) else { throw .malformed("\"shareId\" is not a lowercase UUID v4") }
        let did = try string("senderDID")
        guard did.hasPrefix("did:key:z6Mk"), did.utf8.count <= 64, DIDKey.ed25519PublicKey(from: did) != nil else {
            throw .malformed("\"senderDID\" is not an Ed25519 did:key")
        }
        let signKeyBytes = try bytes("signPubKey", count: Ed25519.PublicKey.byteCount)
        let boxKeyBytes = try bytes("pubKey", count: X25519.PublicKey.byteCount)
        // The lengths were just checked, so these cannot fail.
        let signPubKey = try! Ed25519.PublicKey(rawRepresentation: signKeyBytes)
        let pubKey = try! X25519.PublicKey(rawRepresentation: boxKeyBytes)
        guard case .number(let ts)? = json["timestamp"] else { throw .malformed("\"timestamp\" is missing or not a number") }
        guard ts >= 0, ts <= 9_007_199_254_740_991, ts.rounded(.towardZero) == ts else {
            throw .malformed("\"timestamp\" is not a non-negative integer")
        }
        guard let level = DisclosureLevel(rawValue: try string("level")) else {
            throw .malformed("\"level\" must be public, professional or personal")
        }
        guard case .object(let rawFields)? = json["cardFields"] else { throw .malformed("\"cardFields\" is missing or not an object") }
        var fields: [FieldName: FieldValue] = [:]
        var valueCount = 0
        for (key, value) in rawFields {
            let name: FieldName
            do { name = try FieldName(key) } catch { throw .malformed("unknown card field \"\(key)\"") }
            var values: [String] = []
            switch (value, name.isMultiValued) {
            case (.string(let s), false):
                values = [s]
                fields[name] = .single(s)
            case (.array(let items), true):
                for item in items {
                    guard case .string(let s) = item else { throw .malformed("\"\(key)\" holds a value that is not a string") }
                    values.append(s)
                }
                guard !values.isEmpty else { throw .malformed("\"\(key)\" is an empty array") }
                fields[name] = .multiple(values)
            case (_, true): throw .malformed("\"\(key)\" must be an array of strings")
            case (_, false): throw .malformed("\"\(key)\" must be a string")
            }
            for s in values where s.utf8.count > Card.maximumValueBytes || s.isEmpty {
                throw .malformed("a value of \"\(key)\" is empty or longer than \(Card.maximumValueBytes) bytes")
            }
            // NUL cuts text short in C APIs and SQLite functions: no value may hold one.
            for s in values where TerminalText.containsNUL(s) {
                throw .malformed("a value of \"\(key)\" contains a NUL character")
            }
            valueCount += values.count
        }
        guard valueCount <= Card.maximumValueCount else { throw .malformed("more than \(Card.maximumValueCount) values") }
        let signatureBytes = try bytes("payloadSignature", count: Ed25519.Signature.byteCount)
        let signature = try! Ed25519.Signature(rawRepresentation: signatureBytes)
        return ProximityPayload(shareId: shareId, senderDID: did, signPubKey: signPubKey, pubKey: pubKey,
                                timestamp: Int64(ts), level: level, cardFields: fields, payloadSignature: signature)
    }
}
