import MeishiCard
import MeishiCrypto
import MeishiProximity
import MeishiQR

/// The parsers meishi runs on input from strangers, each as a function of arbitrary bytes.
///
/// `meishi-fuzz` runs one under libFuzzer (`make fuzz`), and the test suite replays every saved
/// corpus file and regression input through the same function (`FuzzCorpusTests`). A target
/// returns normally for any input; it traps (a crash libFuzzer reports) only when a parser
/// breaks one of the properties checked here, e.g. a card that verifies but does not survive
/// its own QR text form, or a session that accepts a card nobody in it signed.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// Payload JSON: decode and verify (docs/PROTOCOL.md §2.3).
    case payload
    /// The QR text form `MEISHI1:` (§4).
    case qrText = "qr-text"
    /// Length-prefixed frames reassembled from a stream cut at arbitrary points (§5.1).
    case frames
    /// A whole exchange, both sessions and both post-card phases driven through `handle` with
    /// no sockets, the honest peer's frames cut, altered, replayed or replaced (§5.2–5.6, §8, §9.5).
    case session
    /// Discovery datagrams (§5.5).
    case announcement
    /// The vCard parser and reader (§7).
    case vcard
    /// PNG, JPEG and PNM loaders (through libpng, libjpeg-turbo's setjmp shim and meishi's own
    /// PNM reader), and the scanner on small pictures.
    case image
    /// Solidarity's signed card (JWS) parser and verifier (§6).
    case solidarity
    /// The common-friends phase against an honest peer whose messages are altered (§8).
    case friends
    /// Message envelopes as a recipient parses and opens them (§9.1).
    case envelope

    /// Runs the target on one input.
    public func run(_ data: [UInt8]) {
        switch self {
        case .payload: PayloadFuzz.run(data)
        case .qrText: PayloadFuzz.runQRText(data)
        case .frames: FrameFuzz.run(data)
        case .session: _ = SessionFuzz.run(data)
        case .announcement: AnnouncementFuzz.run(data)
        case .vcard: VCardFuzz.run(data)
        case .image: ImageFuzz.run(data)
        case .solidarity: SolidarityFuzz.run(data)
        case .friends: FriendsFuzz.run(data)
        case .envelope: EnvelopeFuzz.run(data)
        }
    }

    /// The fixed clock every target verifies against, so a run is repeatable: the `now` of the
    /// payload vectors in fixtures/vectors, so their valid cards seed deep paths.
    public static let now: Int64 = 1_795_000_000
}

/// A property that must hold for every input; a broken one is a finding (libFuzzer reports the
/// trap with the input that caused it).
@inline(never)
func require(_ condition: @autoclosure () -> Bool, _ what: @autoclosure () -> String) {
    if !condition() { fatalError("fuzz property broken: \(what())") }
}

/// Reads the fuzzer's bytes as a sequence of small decisions.
struct FuzzInput {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index >= bytes.count }

    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func take(_ n: Int) -> [UInt8] {
        let end = min(bytes.count, index + n)
        defer { index = end }
        return Array(bytes[index..<end])
    }

    mutating func rest() -> [UInt8] { take(bytes.count - index) }
}

extension FuzzTarget {
    /// meishi's verdict on a payload file (`valid` or the verdict name of `meishi verify --json`),
    /// for the differential check against an independent verifier.
    public static func payloadVerdict(_ bytes: [UInt8]) -> String {
        do {
            _ = try PayloadFuzz.verifier.verify(bytes)
            return "valid"
        } catch {
            return error.verdict
        }
    }
}

extension FuzzTarget {
    /// Valid envelopes sealed with the envelope target's fixed keys: seeds for its corpus.
    public static func envelopeSeeds() -> [(name: String, bytes: [UInt8])] {
        [("short", EnvelopeFuzz.seed("great talk", once: false)),
         ("once", EnvelopeFuzz.seed("the door code is 4711", once: true)),
         ("unicode", EnvelopeFuzz.seed("名刺をありがとう \u{1F4C7}", once: false)),
         ("long", EnvelopeFuzz.seed(String(repeating: "x", count: 4096), once: false))]
    }
}
