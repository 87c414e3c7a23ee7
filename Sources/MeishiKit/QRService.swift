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
    /// A Solidarity didSigned card that verified, or why it did not.
    case solidarityCard(VerifiedSolidarityCard)
    case invalidSolidarityCard(SolidarityError)
    /// A Solidarity kind meishi names but cannot read.
    case unsupported(SolidarityQR.Unsupported)
    case other
}

/// One QR code found in an image, with its text and what meishi made of it.
public struct ScannedCode: Sendable {
    public let text: String
    public let bytes: [UInt8]
    public let points: [(x: Int, y: Int)]
    public let content: ScannedContent
    /// The scanner's pass that found it ("first", "binarised", …), for --verbose.
    public var pass = "first"

    public var kind: String {
        switch content {
        case .card, .invalidCard: "meishi-card"
        case .contact(let c):
            switch c.format {
            case .mecard: "mecard"
            case .vcard: "vcard"
            case .solidarityEnvelope, .solidarityLink, .airmeishiLink: "solidarity-unsigned"
            }
        case .solidarityCard, .invalidSolidarityCard: "solidarity-card"
        case .unsupported(let u): u.rawValue
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
                               home: Home, passphrases: PassphraseSource, now: Int64) throws(MeishiError) -> (text: String, mode: QREncoder.Mode) {
        let identities = IdentityStore(home: home)
        if vcard {
            let pub = try identities.loadPublic()
            let disclosed = try CardService.share(card, level: level, only: only)
            return (VCard.make(fields: disclosed, did: pub.did, timestamp: now), .utf8)
        }
        let identity = try identities.load(passphrases: passphrases)
        let signed = try CardService.sign(card, level: level, only: only, identity: identity, now: now)
        return (CardQRText.encode(signed.payload), .alphanumeric)
    }

    public static func matrix(_ text: String, mode: QREncoder.Mode, correction: QRErrorCorrection) throws(MeishiError) -> QRMatrix {
        do { return try QREncoder.encode(text, mode: mode, correction: correction) } catch { throw .qr(error) }
    }

    /// Decodes an image file's bytes and classifies every QR code in it.
    public static func scan(_ bytes: [UInt8], verifier: CardVerifier) throws(MeishiError) -> [ScannedCode] {
        let image: GrayImage
        do { image = try ImageDecoder.decode(bytes) } catch { throw .qr(error) }
        return QRScanner.scan(image).map { classified($0, verifier: verifier) }
    }

    /// What a code found in an image is.
    static func classified(_ code: FoundCode, verifier: CardVerifier) -> ScannedCode {
        let text = TextDecoding.decode(code.bytes)
        var scanned = ScannedCode(text: text, bytes: code.bytes, points: code.points, content: classify(text, verifier: verifier))
        scanned.pass = code.pass
        return scanned
    }

    static func classify(_ text: String, verifier: CardVerifier) -> ScannedContent {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("MEISHI") || (trimmed.hasPrefix("{") && trimmed.contains("\"payloadSignature\"")) {
            do { return .card(try verifier.verify(Array(trimmed.utf8))) } catch { return .invalidCard(error) }
        }
        if SolidarityCard.looksLikeJWS(trimmed) {
            do { return .solidarityCard(try verifier.verify(solidarity: trimmed)) } catch { return .invalidSolidarityCard(error) }
        }
        if let u = SolidarityQR.unsupported(trimmed) { return .unsupported(u) }
        if let c = SolidarityQR.plaintextEnvelope(trimmed) ?? SolidarityQR.contactLink(trimmed) { return .contact(c) }
        if let v = VCard.parse(text) { return .contact(v) }
        if let m = VCard.parseMECARD(trimmed) { return .contact(m) }
        return .other
    }

    /// Stores an unsigned contact (vCard, MECARD, Solidarity plaintext envelope or link) as
    /// `contacts import` does: merged into the verified contact whose DID it carries, or into an
    /// unsigned one of the same name sharing an email or phone, else added under an `unsigned:` key
    /// (`ContactImport.key`), so it never lands on a verified DID.
    /// A contact that gained something records a `qr` meeting (with `event`).
    public static func importUnsigned(_ c: ImportedContact, raw: [UInt8], into store: ContactStore, now: Int64,
                                      event: String? = nil) throws(MeishiError) -> StoreOutcome {
        let outcome: ImportOutcome
        do {
            outcome = try store.importUnsigned([ContactImport.unsigned(c, raw: raw)], merge: true,
                                               source: .qr(c.format), seen: now, meeting: .qr, event: event, dryRun: false)[0]
        } catch { throw .store(error) }
        switch outcome {
        case .imported(let contact, let conflicts, _): return .added(contact, conflicts: conflicts)
        case .merged(let contact, _): return .updated(contact, conflicts: [])
        case .unchanged(let contact): return .unchanged(contact)
        }
    }
}
