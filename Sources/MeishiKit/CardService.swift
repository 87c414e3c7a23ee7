import Foundation
import MeishiCard
import MeishiCrypto

/// A payload whose signature, key binding and timestamp have been checked.
public struct VerifiedCard: Sendable {
    public let payload: ProximityPayload
    /// The input bytes exactly as read.
    public let raw: [UInt8]
    /// Seconds since the card was signed (negative for a clock slightly ahead).
    public let ageSeconds: Int64
}

/// Keeps the user's card on disk, turns it into signed payloads and verifies others' payloads.
public struct CardService: Sendable {
    /// How far in the future a timestamp may be before a card is refused.
    public static let defaultMaximumSkew: Int64 = 600

    public let home: Home

    public init(home: Home) { self.home = home }

    // MARK: The user's card

    public func loadCard() throws(MeishiFailure) -> Card {
        guard SecureFile.exists(home.cardPath) else { return Card() }
        let bytes = try SecureFile.read(home.cardPath, limit: 1 << 20)
        do {
            return try JSONDecoder().decode(Card.self, from: Data(bytes))
        } catch {
            throw MeishiFailure("\(home.cardPath) is damaged: \(error)", hint: "fix or remove the file", status: .dataError)
        }
    }

    public func saveCard(_ card: Card) throws(MeishiFailure) {
        try home.ensureExists()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do { data = try encoder.encode(card) } catch { throw MeishiFailure("cannot encode the card: \(error)") }
        try SecureFile.write(Array(data) + [0x0A], to: home.cardPath)
    }

    // MARK: Signing

    /// The signed payload of `card` at `level`, limited to `only` fields when given.
    public static func signedPayload(card: Card, level: DisclosureLevel, only: Set<FieldName>?, identity: Identity,
                                     now: Date, shareId: String = SecureRandom.uuidV4()) throws(MeishiFailure) -> ProximityPayload {
        let disclosed = card.disclosed(at: level, only: only)
        guard disclosed[.name] != nil else {
            if card.fields[.name] == nil {
                throw MeishiFailure("your card has no name", hint: "meishi card set name \"Your Name\"", status: .dataError)
            }
            throw MeishiFailure("your name is not shared at level \(level.rawValue)",
                                hint: "share at a higher --level, or: meishi card set name NAME --level public", status: .dataError)
        }
        var payload = ProximityPayload(disclosed: disclosed, level: level, shareId: shareId,
                                       signPubKey: identity.signingKey.publicKey.rawRepresentation,
                                       pubKey: identity.boxKey.publicKey.rawRepresentation,
                                       timestamp: Int64(now.timeIntervalSince1970))
        let input = payload.signingInput
        payload.payloadSignature = identity.signingKey.signature(for: input).rawRepresentation
        // JCS of the signed payload adds `,"payloadSignature":"<86 characters>"` to the signed JSON.
        let size = input.count - ProximityPayload.signatureDomain.utf8.count - 1 + 108
        guard size <= ProximityPayload.maximumEncodedSize else {
            throw MeishiFailure("the signed card would be \(size) bytes, over the \(ProximityPayload.maximumEncodedSize)-byte limit",
                                hint: "share fewer fields with --fields or a lower --level", status: .dataError)
        }
        return payload
    }

    // MARK: Verifying

    /// `verify` with its failure as the user sees it.
    public static func checked(_ data: [UInt8], now: Date, maximumSkew: Int64 = defaultMaximumSkew) throws(MeishiFailure) -> VerifiedCard {
        do { return try verify(data, now: now, maximumSkew: maximumSkew) } catch { throw MeishiFailure(error) }
    }

    /// Checks `data` as `meishi verify` does: size and shape, version, DID <-> key,
    /// signature, and a timestamp no more than `maximumSkew` seconds in the future.
    /// `data` is the JSON payload or its QR text form (`MEISHI1:…`, docs/PROTOCOL.md section 4);
    /// for the text form, `raw` of the result is the rebuilt canonical JSON.
    public static func verify(_ data: [UInt8], now: Date, maximumSkew: Int64 = defaultMaximumSkew) throws(PayloadError) -> VerifiedCard {
        let payload: ProximityPayload
        var raw = data
        if let text = qrText(data) {
            payload = try CardQRText.decode(text)
            raw = payload.canonicalJSON
        } else {
            payload = try ProximityPayload.parse(data)
        }
        guard let didKey = DIDKey.ed25519PublicKey(from: payload.senderDID), didKey == payload.signPubKey else {
            throw .keyMismatch
        }
        guard let key = try? Ed25519.PublicKey(rawRepresentation: payload.signPubKey),
              let signature = try? Ed25519.Signature(rawRepresentation: payload.payloadSignature),
              key.isValidSignature(signature, for: payload.signingInput) else {
            throw .badSignature
        }
        let nowSeconds = Int64(now.timeIntervalSince1970)
        if payload.timestamp > nowSeconds + maximumSkew { throw .fromTheFuture(seconds: payload.timestamp - nowSeconds) }
        return VerifiedCard(payload: payload, raw: raw, ageSeconds: nowSeconds - payload.timestamp)
    }

    /// The QR text in `data` (surrounding whitespace removed), if it is one.
    static func qrText(_ data: [UInt8]) -> String? {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        guard let first = data.firstIndex(where: { !isSpace($0) }), data[first...].starts(with: Array("MEISHI".utf8)),
              let last = data.lastIndex(where: { !isSpace($0) }) else { return nil }
        return String(decoding: data[first...last], as: UTF8.self)
    }
}
