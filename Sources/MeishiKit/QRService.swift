import Foundation
import MeishiCard
import MeishiCrypto
import MeishiQR
import MeishiStore

/// What a QR code found by `meishi scan` turned out to be.
public enum ScannedContent: Sendable {
    case card(VerifiedCard)
    case invalidCard(PayloadError)
    case contact(ImportedContact)
    case other
}

/// One QR code found in an image, with its text and what meishi made of it.
public struct ScannedCode: Sendable {
    public let text: String
    public let bytes: [UInt8]
    public let points: [(x: Int, y: Int)]
    public let content: ScannedContent

    public var kind: String {
        switch content {
        case .card, .invalidCard: "meishi-card"
        case .contact(let c): c.format.hasPrefix("MECARD") ? "mecard" : "vcard"
        case .other: "text"
        }
    }
}

/// Making card QR codes and reading QR images.
public enum QRService {
    /// Largest image file read, in bytes.
    public static let maximumFileBytes = 256 << 20

    /// The QR text of a signed card, or of an unsigned vCard with `vcard`.
    public static func content(card: Card, level: DisclosureLevel, only: Set<FieldName>?, vcard: Bool,
                               home: Home, passphrases: PassphraseSource, now: Date) throws(MeishiFailure) -> (text: String, mode: QREncoder.Mode) {
        let identities = IdentityStore(home: home)
        if vcard {
            let pub = try identities.loadPublic()
            let disclosed = card.disclosed(at: level, only: only)
            guard disclosed[.name] != nil else {
                throw MeishiFailure("your name is not shared at level \(level.rawValue)", hint: "meishi card set name NAME", status: .dataError)
            }
            let fields = disclosed.keys.sorted().map { (name: $0.rawValue, values: disclosed[$0]!) }
            return (VCard.make(fields: fields, did: pub.did, timestamp: Int64(now.timeIntervalSince1970)), .utf8)
        }
        let identity = try identities.load(passphrases: passphrases)
        let payload = try CardService.signedPayload(card: card, level: level, only: only, identity: identity, now: now)
        return (CardQRText.encode(payload), .alphanumeric)
    }

    public static func matrix(_ text: String, mode: QREncoder.Mode, correction: QRErrorCorrection) throws(MeishiFailure) -> QRMatrix {
        do { return try QREncoder.encode(text, mode: mode, correction: correction) } catch {
            throw MeishiFailure(error)
        }
    }

    /// Decodes an image file's bytes and classifies every QR code in it.
    public static func scan(_ bytes: [UInt8], now: Date) throws(MeishiFailure) -> [ScannedCode] {
        let image: GrayImage
        do { image = try ImageDecoder.decode(bytes) } catch { throw MeishiFailure(error) }
        return QRScanner.scan(image).map { code in
            let text = TextDecoding.decode(code.bytes)
            return ScannedCode(text: text, bytes: code.bytes, points: code.points, content: classify(text, now: now))
        }
    }

    static func classify(_ text: String, now: Date) -> ScannedContent {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("MEISHI") || (trimmed.hasPrefix("{") && trimmed.contains("\"payloadSignature\"")) {
            do { return .card(try CardService.verify(Array(trimmed.utf8), now: now)) } catch { return .invalidCard(error) }
        }
        if let v = VCard.parse(text) { return .contact(v) }
        if let m = VCard.parseMECARD(trimmed) { return .contact(m) }
        return .other
    }

    /// Stores an unsigned contact (vCard or MECARD) as `contacts import` does: merged into the
    /// verified contact whose DID it carries, or into an unsigned one sharing an email or phone,
    /// else added under an `unsigned:` key, so it never lands on a verified DID.
    public static func importUnsigned(_ c: ImportedContact, raw: [UInt8], home: Home, now: Date) throws(MeishiFailure) -> StoreOutcome {
        let store = try ContactsService(home: home).open()
        let outcome: ImportOutcome
        do {
            outcome = try store.importUnsigned([UnsignedCard(c, key: ContactImport.key(for: c))], merge: true,
                                               source: "qr-" + c.format.split(separator: " ")[0].lowercased(),
                                               seen: Int64(now.timeIntervalSince1970), dryRun: false)[0]
        } catch { throw MeishiFailure(error) }
        switch outcome {
        case .imported(let contact, let conflicts): return .added(contact, conflicts: conflicts)
        case .merged(let contact, _): return .updated(contact, conflicts: [])
        case .unchanged(let contact): return .unchanged(contact)
        }
    }
}

extension MeishiFailure {
    /// An image or QR failure.
    public init(_ e: QRError) {
        switch e {
        case .contentTooLarge(let n):
            self.init("the card (\(n) characters) does not fit in a QR code at this error-correction level",
                      hint: "share fewer fields with --fields, or use --ecc L", status: .dataError)
        case .notAnImage: self.init("not an image meishi can read (PNG, JPEG, PGM or PPM)", status: .dataError)
        case .tooManyPixels(let w, let h, let limit):
            self.init("image is \(w)x\(h) pixels, more than the \(limit / 1_000_000)-megapixel limit", hint: "shrink the image first",
                      status: .dataError)
        case .corruptImage(let why): self.init("corrupt or truncated image: \(why)", status: .dataError)
        case .encoderFailed(let why): self.init("QR encoding failed: \(why)", status: .failure)
        }
    }
}
