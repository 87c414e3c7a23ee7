import Foundation
import MeishiCard
import MeishiCrypto

/// Keeps the user's card on disk and turns it into signed payloads.
public struct CardService: Sendable {
    public let home: Home

    public init(home: Home) { self.home = home }

    // MARK: The user's card

    public func loadCard() throws(MeishiError) -> Card {
        guard SecureFile.exists(home.cardPath) else { return Card() }
        let bytes = try SecureFile.read(home.cardPath, limit: 1 << 20)
        do {
            return try JSONDecoder().decode(Card.self, from: Data(bytes))
        } catch let e as CardError {
            throw .cardFileRefused(path: home.cardPath, e)
        } catch let DecodingError.keyNotFound(key, _) {
            throw .cardFileDamaged(path: home.cardPath, reason: "no \"\(key.stringValue)\" member: not a card file")
        } catch DecodingError.typeMismatch, DecodingError.valueNotFound {
            throw .cardFileDamaged(path: home.cardPath, reason: "a member has the wrong type: not a card file")
        } catch {
            throw .cardFileDamaged(path: home.cardPath, reason: "not a card file (\(error.localizedDescription))")
        }
    }

    public func saveCard(_ card: Card) throws(MeishiError) {
        try home.ensureExists()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do { data = try encoder.encode(card) } catch { throw .cardFileDamaged(path: home.cardPath, reason: "cannot encode: \(error)") }
        try SecureFile.write(Array(data) + [0x0A], to: home.cardPath)
    }

    // MARK: Signing

    /// What a share discloses, refused (with the reason) when it would carry no name.
    public static func share(_ card: Card, level: DisclosureLevel, only: Set<FieldName>?) throws(MeishiError) -> [FieldName: [String]] {
        do { return try card.share(at: level, only: only) } catch { throw .card(error) }
    }

    /// The first share (by level, public first) of `card` that a signature would make too big to
    /// carry (over `ProximityPayload.maximumEncodedSize`) while that of `before` was not: the
    /// level and its size. Signed with a throwaway key, so no passphrase is asked: every key
    /// gives a signed card of the same size. A share without a name yet is left out.
    public static func shareNoLongerFitting(_ card: Card, before: Card, now: Int64) -> (level: DisclosureLevel, bytes: Int)? {
        let key = Identity(signingKey: Ed25519.SigningKey(), boxKey: X25519.SecretKey())
        func size(_ c: Card, _ level: DisclosureLevel) -> Int? {
            do { _ = try sign(c, level: level, only: nil, identity: key, now: now) } catch .shareTooLarge(let bytes) { return bytes } catch { return nil }
            return nil
        }
        for level in DisclosureLevel.allCases.sorted() where size(before, level) == nil {
            if let bytes = size(card, level) { return (level, bytes) }
        }
        return nil
    }

    /// The signed card of a share at `level`, limited to `only` fields when given.
    public static func sign(_ card: Card, level: DisclosureLevel, only: Set<FieldName>?, identity: Identity, now: Int64,
                            shareId: String = ShareID.random()) throws(MeishiError) -> SignedCard {
        let disclosed = try share(card, level: level, only: only)
        do {
            return try ProximityPayload.sign(disclosed: disclosed, level: level, signingKey: identity.signingKey,
                                             boxKey: identity.boxKey.publicKey, timestamp: now, shareId: shareId)
        } catch .tooLarge(let bytes) {
            throw .shareTooLarge(bytes: bytes)
        } catch {
            throw .payload(error)
        }
    }
}
