import Foundation

// The Solidarity phone app's QR formats (docs/PROTOCOL.md section 6): its signed "didSigned"
// card, a compact JWS (ES256) of a W3C credential; its unsigned plaintext envelope and contact
// links; and the kinds meishi recognises only to name them.

/// Why a Solidarity card is not valid. Each case maps to one verdict.
public enum SolidarityError: Error, Equatable, Sendable {
    /// The text is longer than `SolidarityCard.maximumTextBytes`.
    case tooLarge(bytes: Int)
    /// Not a well-formed card: segments, base64url, JSON, member types or limits.
    case malformed(String)
    /// The header's `alg` is not exactly `ES256` (`none` included), or it names `crit`
    /// extensions; the text says which, made safe for a terminal.
    case unsupportedAlgorithm(String)
    /// The embedded JWK, `kid` or `sub` does not name the key of `iss`.
    case keyMismatch(String)
    /// The ES256 signature does not verify under the key of `iss`.
    case badSignature
    /// `nbf` is later than now (beyond the allowed clock skew).
    case notYetValid(seconds: Int64)
    /// `exp` has passed.
    case expired(seconds: Int64)
    /// `iat` is later than now (beyond the allowed clock skew).
    case fromTheFuture(seconds: Int64)

    /// The stable verdict name `scan --json` prints and the vectors in fixtures/solidarity name.
    public var verdict: String {
        switch self {
        case .tooLarge, .malformed: "malformed"
        case .unsupportedAlgorithm: "unsupported-algorithm"
        case .keyMismatch: "key-mismatch"
        case .badSignature: "bad-signature"
        case .notYetValid: "not-yet-valid"
        case .expired: "expired"
        case .fromTheFuture: "from-the-future"
        }
    }

    /// One line for people; peer text in it is already made safe for a terminal.
    public var reason: String {
        switch self {
        case .tooLarge(let n): "Solidarity card is \(n) bytes, more than the \(SolidarityCard.maximumTextBytes)-byte limit"
        case .malformed(let why): "malformed Solidarity card: \(why)"
        case .unsupportedAlgorithm(let what): "Solidarity card uses \(what); only plain ES256 is accepted"
        case .keyMismatch(let why): "Solidarity card key mismatch: \(why)"
        case .badSignature: "Solidarity card has a bad signature"
        case .notYetValid(let s): "Solidarity card is not valid for another \(s) seconds (nbf)"
        case .expired(let s): "Solidarity card expired \(s) seconds ago (exp)"
        case .fromTheFuture(let s): "Solidarity card was issued \(s) seconds in the future (iat)"
        }
    }
}

/// A public key embedded in a card as a JWK (`kty` EC, `crv` P-256): its affine coordinates.
public struct SolidarityJWK: Equatable, Sendable {
    public let x: [UInt8]
    public let y: [UInt8]

    public init(x: [UInt8], y: [UInt8]) {
        self.x = x
        self.y = y
    }
}

/// A Solidarity didSigned card as parsed, before its signature is checked: the compact JWS
/// `header.payload.signature` and the claims meishi reads from it.
public struct SolidarityCard: Equatable, Sendable {
    /// Longest JWS text read. Solidarity's cards are about 2.3 KB; a QR holds at most 2953 bytes.
    public static let maximumTextBytes = 8192
    /// The only `alg` accepted.
    public static let algorithm = "ES256"
    /// Most integer seconds a time claim may hold (2^53 − 1, I-JSON's exact integers).
    static let maximumSeconds = 9_007_199_254_740_991.0

    /// The JWS text as received.
    public let text: String
    /// The bytes the signature covers: the ASCII `header.payload` as received.
    public let signingInput: [UInt8]
    /// The decoded third segment: r ‖ s (64 bytes) or DER.
    public let signature: [UInt8]
    /// The issuer's P-256 did:key (`iss`).
    public let issuer: String
    /// The SEC 1 compressed key `issuer` names.
    public let issuerKey: [UInt8]
    /// Every `publicKeyJwk` in the credential subject (at least one).
    public let embeddedKeys: [SolidarityJWK]
    /// `jti`, when present.
    public let id: String?
    /// `iat`, `nbf` and `exp` as Unix seconds.
    public let issuedAt: Int64
    public let notBefore: Int64?
    public let expires: Int64?
    /// The card mapped to meishi field names (`name`, `title`, `org`, `email`, `phone`, `url`,
    /// `note`, and `x-…` for other text members).
    public let fields: [FieldName: [String]]
    /// `sameAs` entries that are DIDs: identities the holder claims (not proven by them).
    public let linkedDIDs: [String]
    /// Values left out because they were empty, too long or over the value limit.
    public let droppedValues: Int

    public var name: String? { fields[.name]?.first }

    /// True when `text` looks like a compact JWS (`eyJ…`, at least two dots, no spaces), so a
    /// scanner can tell "a Solidarity card, perhaps broken" from other text.
    public static func looksLikeJWS(_ text: String) -> Bool {
        // Lenient on purpose: a broken card should be reported as one, not as "not a card".
        text.hasPrefix("eyJ") && text.utf8.filter { $0 == UInt8(ascii: ".") }.count >= 2
            && !text.unicodeScalars.contains { $0.properties.isWhitespace }
    }

    static func isBase64URL(_ c: UInt8) -> Bool {
        (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || (0x30...0x39).contains(c) || c == 0x2D || c == 0x5F
    }

    /// Parses a compact JWS and checks everything but the signature and the clock, in the order
    /// of docs/PROTOCOL.md 6.2: segments, base64url and a strict JSON header; `alg` exactly ES256
    /// and no `crit`; a strict JSON payload with `iss` a P-256 did:key, integer times and a named
    /// business-card credential; then `sub`, `kid` and at least one embedded P-256 JWK naming
    /// `iss` (that each JWK is the same point is for the verifier, which has the curve).
    public static func parse(_ text: String) throws(SolidarityError) -> SolidarityCard {
        let bytes = Array(text.utf8)
        guard bytes.count <= maximumTextBytes else { throw .tooLarge(bytes: bytes.count) }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("a compact JWS has three segments, not \(parts.count)") }
        func decode(_ segment: ArraySlice<UInt8>, _ what: String) throws(SolidarityError) -> [UInt8] {
            guard !segment.isEmpty else { throw .malformed("the \(what) is empty") }
            guard segment.allSatisfy(isBase64URL), let b = Base64URL.decode(String(decoding: segment, as: UTF8.self)) else {
                throw .malformed("the \(what) is not base64url without padding")
            }
            return b
        }
        // The header decides whether anything else is worth reading: `alg` first, so a card
        // with `alg: none` (and so no signature) is named for what it is.
        let header = try json(try decode(parts[0], "header"), "header")
        guard case .string(let alg)? = header["alg"] else { throw .malformed("the header has no \"alg\"") }
        guard alg == algorithm else { throw .unsupportedAlgorithm("algorithm \"\(alg.prefix(32))\"") }
        if header["crit"] != nil { throw .unsupportedAlgorithm("critical header extensions (crit)") }
        let payloadBytes = try decode(parts[1], "payload")
        let signature = try decode(parts[2], "signature")
        guard signature.count <= 72 else { throw .malformed("the signature is \(signature.count) bytes") }

        let claims = try json(payloadBytes, "payload")
        guard case .string(let issuer)? = claims["iss"] else { throw .malformed("no \"iss\"") }
        guard let issuerKey = DIDKey.p256PublicKey(from: issuer) else { throw .malformed("\"iss\" is not a P-256 did:key") }
        func seconds(_ key: String) throws(SolidarityError) -> Int64? {
            guard let v = claims[key] else { return nil }
            guard case .number(let d) = v, d >= 0, d <= maximumSeconds, d.rounded(.towardZero) == d else {
                throw .malformed("\"\(key)\" is not integer Unix seconds")
            }
            return Int64(d)
        }
        guard let issuedAt = try seconds("iat") else { throw .malformed("no \"iat\"") }
        let notBefore = try seconds("nbf"), expires = try seconds("exp")
        var id: String?
        if let jti = claims["jti"] {
            guard case .string(let j) = jti else { throw .malformed("\"jti\" is not a string") }
            id = j
        }

        guard case .object? = claims["vc"], let vc = claims["vc"] else { throw .malformed("no \"vc\" credential") }
        if let types = vc["type"] {
            guard case .array(let items) = types, items.contains(.string("BusinessCardCredential")) else {
                throw .malformed("the credential is not a BusinessCardCredential")
            }
        }
        guard case .object? = vc["credentialSubject"], let subject = vc["credentialSubject"] else {
            throw .malformed("no \"credentialSubject\"")
        }
        let core = subject["subject_core"], contact = subject["verified_contact_claims"]
        var mapper = FieldMapper()
        mapper.add("name", core?["name"], subject["name"])
        guard mapper.fields["name"] != nil else { throw .malformed("the card has no name") }

        // The shape is sound; now every name for the key must be the key of `iss`.
        if let sub = claims["sub"], sub != .string(issuer) { throw .keyMismatch("\"sub\" is not the issuer") }
        if let kid = header["kid"] {
            guard case .string(let k) = kid, k.split(separator: "#", maxSplits: 1).first.map(String.init) == issuer else {
                throw .keyMismatch("the header's \"kid\" does not name the issuer")
            }
        }
        var keys: [SolidarityJWK] = []
        for holder in [core, subject] {
            guard let jwk = holder?["publicKeyJwk"] else { continue }
            keys.append(try parseJWK(jwk))
        }
        guard !keys.isEmpty else { throw .keyMismatch("the credential embeds no publicKeyJwk") }

        mapper.add("title", contact?["jobTitle"], subject["jobTitle"])
        mapper.add("org", contact?["worksFor"], subject["worksFor"])
        mapper.add("email", contact?["email"], subject["email"])
        mapper.add("phone", contact?["telephone"], subject["telephone"])
        mapper.add("url", contact?["url"], subject["url"])
        mapper.add("note", core?["summary"], subject["summary"])
        var linked: [String] = []
        if case .array(let same)? = subject["sameAs"] {
            for case .string(let s) in same {
                if s.hasPrefix("did:") { if s.utf8.count <= 128, !linked.contains(s) { linked.append(s) } } else { mapper.add("url", .string(s)) }
            }
        }
        let known: Set<String> = ["id", "type", "@context", "name", "jobTitle", "worksFor", "email", "telephone", "url", "summary",
                                  "sameAs", "publicKeyJwk", "subject_core", "verified_contact_claims", "credential_meta", "subscription"]
        for holder in [core, contact, subject] {
            guard case .object(let members)? = holder else { continue }
            for m in members where !known.contains(m.key) { mapper.addExtra(m.key, m.value) }
        }
        return SolidarityCard(text: text, signingInput: Array(bytes[0..<(parts[0].count + 1 + parts[1].count)]), signature: signature,
                              issuer: issuer, issuerKey: issuerKey, embeddedKeys: keys, id: id, issuedAt: issuedAt,
                              notBefore: notBefore, expires: expires, fields: mapper.fieldNames, linkedDIDs: linked,
                              droppedValues: mapper.dropped)
    }

    private static func json(_ bytes: [UInt8], _ what: String) throws(SolidarityError) -> JSONValue {
        let value: JSONValue
        do { value = try StrictJSONParser.parse(bytes) } catch { throw .malformed("the \(what) is not strict JSON (\(error.reason))") }
        guard case .object = value else { throw .malformed("the \(what) is not a JSON object") }
        return value
    }

    private static func parseJWK(_ jwk: JSONValue) throws(SolidarityError) -> SolidarityJWK {
        guard case .object = jwk else { throw .keyMismatch("publicKeyJwk is not an object") }
        guard jwk["kty"] == .string("EC"), jwk["crv"] == .string("P-256") else {
            throw .keyMismatch("publicKeyJwk is not an EC P-256 key")
        }
        guard case .string(let xs)? = jwk["x"], case .string(let ys)? = jwk["y"],
              let x = Base64URL.decode(xs), let y = Base64URL.decode(ys), x.count == 32, y.count == 32 else {
            throw .keyMismatch("publicKeyJwk x and y must be 32 bytes of base64url each")
        }
        return SolidarityJWK(x: x, y: y)
    }
}

/// Collects claim values under meishi field names, within a card's limits.
struct FieldMapper {
    var fields: [String: [String]] = [:]
    var dropped = 0
    private var count = 0

    /// Adds the text of the first present candidate (a string, an array of strings, or an object
    /// with a string `name`, as schema.org's `worksFor` may be) to `field`.
    mutating func add(_ field: String, _ candidates: JSONValue?...) {
        guard let value = candidates.first(where: { $0 != nil && $0 != .null }) ?? nil else { return }
        for text in Self.texts(value) { append(field, text) }
    }

    /// Keeps a text member with no meishi field as `x-<its name>`, when the name fits.
    mutating func addExtra(_ key: String, _ value: JSONValue) {
        var word = ""
        for s in key.unicodeScalars {
            if (0x41...0x5A).contains(s.value), !word.isEmpty { word += "-" }
            let c = Character(s).lowercased()
            word += c.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) ? c : "-"
        }
        guard let name = try? FieldName("x-" + word) else { return }
        for text in Self.texts(value) where !(fields[name.rawValue]?.isEmpty == false) { append(name.rawValue, text) }
    }

    /// The fields under typed names (every name added is valid).
    var fieldNames: [FieldName: [String]] {
        Dictionary(uniqueKeysWithValues: fields.compactMap { k, v in (try? FieldName(k)).map { ($0, v) } })
    }

    private static func texts(_ value: JSONValue) -> [String] {
        switch value {
        case .string(let s): return [s]
        case .array(let items): return items.flatMap { item -> [String] in
            if case .string(let s) = item { return [s] }
            if case .string(let s)? = item["value"] { return [s] }
            return []
        }
        case .object:
            if case .string(let s)? = value["name"] { return [s] }
            return []
        default: return []
        }
    }

    private mutating func append(_ field: String, _ raw: String) {
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty, text.utf8.count <= Card.maximumValueBytes, count < Card.maximumValueCount else {
            dropped += 1
            return
        }
        if FieldName.multiValued.contains(field) {
            guard !(fields[field] ?? []).contains(text) else { return }
            fields[field, default: []].append(text)
        } else {
            guard fields[field] == nil else { return }
            fields[field] = [text]
        }
        count += 1
    }
}

/// What else a Solidarity QR can be, apart from a signed card.
public enum SolidarityQR {
    /// The kinds meishi recognises but cannot use: named, with why, rather than "not a card".
    public enum Unsupported: String, Sendable {
        case zkProof = "solidarity-zkproof"
        case chunk = "solidarity-chunk"
        case openID = "openid4vp"
    }

    /// The unsupported kind `text` is, if any.
    public static func unsupported(_ text: String) -> Unsupported? {
        if text.hasPrefix("sqc1.") { return .chunk }
        if text.lowercased().hasPrefix("openid4vp://") { return .openID }
        if text.hasPrefix("sce1:") { return .zkProof }
        guard text.hasPrefix("{"), let json = try? StrictJSONParser.parse(Array(text.utf8)), case .object(let members) = json,
              json["version"] == .number(2), json["snapshot"] == nil else { return nil }
        let zk = members.contains { m in
            let k = m.key.lowercased()
            return k.contains("encrypted") || k.contains("zkproof") || (m.value == .string("zkProof"))
        }
        return zk ? .zkProof : nil
    }

    /// The unsigned plaintext envelope (JSON with `version` 2 and a `snapshot`), as a contact.
    public static func plaintextEnvelope(_ text: String) -> ImportedContact? {
        guard text.hasPrefix("{"), text.utf8.count <= SolidarityCard.maximumTextBytes,
              let json = try? StrictJSONParser.parse(Array(text.utf8)), json["version"] == .number(2),
              case .object(let members)? = json["snapshot"], let snapshot = json["snapshot"] else { return nil }
        var mapper = FieldMapper()
        mapper.add("name", snapshot["name"])
        mapper.add("title", snapshot["title"], snapshot["jobTitle"])
        mapper.add("org", snapshot["company"], snapshot["organization"])
        mapper.add("email", snapshot["emails"], snapshot["email"])
        mapper.add("phone", snapshot["phones"], snapshot["phone"])
        mapper.add("url", snapshot["urls"], snapshot["url"], snapshot["website"])
        let known: Set<String> = ["name", "title", "jobTitle", "company", "organization", "emails", "email", "phones", "phone",
                                  "urls", "url", "website", "cardId", "did"]
        for m in members where !known.contains(m.key) { mapper.addExtra(m.key, m.value) }
        var contact = ImportedContact(fields: mapper.fieldNames, format: .solidarityEnvelope)
        if case .string(let did)? = snapshot["did"], isKeyDID(did) { contact.did = did }
        return contact
    }

    /// A `solidarity://contact?name=&job=&did=` or `airmeishi://…` link, as a contact.
    public static func contactLink(_ text: String) -> ImportedContact? {
        let lower = text.lowercased()
        guard lower.hasPrefix("solidarity://contact") || lower.hasPrefix("airmeishi://"), text.utf8.count <= 4096,
              let items = URLComponents(string: text)?.queryItems else { return nil }
        var mapper = FieldMapper()
        func value(_ names: String...) -> JSONValue? {
            items.first { names.contains($0.name) && $0.value != nil }.map { .string($0.value!) }
        }
        mapper.add("name", value("name"))
        mapper.add("title", value("job", "title"))
        mapper.add("org", value("company", "org"))
        mapper.add("email", value("email"))
        mapper.add("phone", value("phone", "tel"))
        var contact = ImportedContact(fields: mapper.fieldNames, format: lower.hasPrefix("airmeishi") ? .airmeishiLink : .solidarityLink)
        if case .string(let did)? = value("did"), isKeyDID(did) { contact.did = did }
        return contact
    }

    static func isKeyDID(_ did: String) -> Bool {
        DIDKey.p256PublicKey(from: did) != nil || DIDKey.ed25519PublicKey(from: did) != nil
    }
}

extension SolidarityCard {
    /// The unsigned `header.payload` of a didSigned card, as Solidarity writes them: header
    /// `{alg ES256, typ JWT, cty application/vc+jwt, kid <did>#keys-1}`; claims `jti`, `iss` =
    /// `sub`, `iat` = `nbf`, and a BusinessCardCredential whose subject carries `subject_core`,
    /// `verified_contact_claims`, `credential_meta` and the older flat members. Both segments
    /// are JCS (RFC 8785), so the same inputs give the same bytes.
    ///
    /// - Parameters:
    ///   - fields: what the card discloses, by meishi field name (`name` required).
    ///   - issuer: the P-256 did:key; `jwk` its coordinates.
    ///   - sameAs: identities to link (meishi's Ed25519 did:key), before any URLs.
    public static func unsignedToken(fields: [FieldName: [String]], issuer: String, jwk: SolidarityJWK, sameAs: [String],
                                     issuedAt: Int64, id: String) -> String {
        precondition(fields[.name] != nil)
        let key: JSONValue = .object([
            "kty": .string("EC"), "crv": .string("P-256"),
            "x": .string(Base64URL.encode(jwk.x)), "y": .string(Base64URL.encode(jwk.y)),
        ])
        func one(_ name: FieldName) -> JSONValue? { fields[name]?.first.map(JSONValue.string) }
        func all(_ name: FieldName) -> JSONValue? { fields[name].map { .array($0.map(JSONValue.string)) } }
        let name = one(.name)!
        var contact: [String: JSONValue] = [:]
        var flat: [String: JSONValue] = ["id": .string(issuer), "name": name, "publicKeyJwk": key]
        for (member, value) in [("jobTitle", one(.title)), ("worksFor", one(.org)), ("email", all(.email)), ("telephone", all(.phone))] {
            guard let value else { continue }
            contact[member] = value
            flat[member] = value
        }
        if let note = one(.note) { flat["summary"] = note }
        if let address = one(.address) { flat["address"] = address }
        flat["sameAs"] = .array((sameAs + (fields[.url] ?? [])).map(JSONValue.string))
        let updated = JSONValue.string(UTCTime.rfc3339(issuedAt))
        flat["subject_core"] = .object(["name": name, "publicKeyJwk": key])
        flat["verified_contact_claims"] = .object(contact)
        flat["credential_meta"] = .object(["schemaVersion": .number(2), "updatedAt": updated])
        let claims: JSONValue = .object([
            "jti": .string("urn:uuid:" + id),
            "iss": .string(issuer), "sub": .string(issuer),
            "iat": .number(Double(issuedAt)), "nbf": .number(Double(issuedAt)),
            "vc": .object([
                "@context": .array([.string("https://www.w3.org/2018/credentials/v1")]),
                "type": .array([.string("VerifiableCredential"), .string("BusinessCardCredential")]),
                "issuer": .string(issuer),
                "issuanceDate": updated,
                "credentialSubject": .object(flat),
            ]),
        ])
        let header: JSONValue = .object([
            "alg": .string(algorithm), "typ": .string("JWT"), "cty": .string("application/vc+jwt"),
            "kid": .string(issuer + "#keys-1"),
        ])
        return Base64URL.encode(JCS.canonicalize(header)) + "." + Base64URL.encode(JCS.canonicalize(claims))
    }
}
