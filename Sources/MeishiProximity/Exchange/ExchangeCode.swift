import Foundation
import MeishiCrypto

/// Why a typed exchange code is refused.
public enum ExchangeCodeError: Error, Equatable, Sendable {
    /// Not `N-word…`: the text as typed.
    case badShape(String)
    /// N outside 1…999.
    case nameplateOutOfRange(String)
    /// More than `ExchangeCode.maximumBytes` bytes.
    case tooLong(Int)
    /// Fewer than `ExchangeCode.minimumPasswordCharacters` characters after `N-`: a nearby
    /// attacker's three tries would stand a real chance.
    case tooShort(Int)
}

/// A code two people agree on, such as `7-tulip-anchor` (docs/PROTOCOL.md §5.6).
///
/// `N` (1…999) is a rendezvous hint, the only part that appears in announcements; the text after
/// `N-` is the password. Generated codes take two words from the PGP word list (16 bits); typed
/// codes may use any words.
public struct ExchangeCode: Equatable, Sendable, CustomStringConvertible {
    public static let maximumBytes = 64
    /// The shortest password after `N-` (a generated one has at least 9: two PGP words).
    public static let minimumPasswordCharacters = 6

    /// The rendezvous number, 1…999.
    public let nameplate: Int
    /// The words after `N-`, as compared: trimmed, NFC, lowercased.
    public let password: String

    public var description: String { "\(nameplate)-\(password)" }

    /// Parses a typed code. Surrounding spaces, case and Unicode normalisation do not matter.
    public init(parsing text: String) throws(ExchangeCodeError) {
        let t = text.trimmingCharacters(in: .whitespacesAndNewlines).precomposedStringWithCanonicalMapping.lowercased()
        guard t.utf8.count <= Self.maximumBytes else { throw .tooLong(t.utf8.count) }
        guard let dash = t.firstIndex(of: "-") else { throw .badShape(text) }
        let number = t[..<dash], words = t[t.index(after: dash)...]
        guard !number.isEmpty, number.count <= 4, number.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(number) else {
            throw .badShape(text)
        }
        guard (1...999).contains(n), number.first != "0" else { throw .nameplateOutOfRange(text) }
        guard !words.isEmpty, !words.hasPrefix("-"), !words.hasSuffix("-"),
              words.unicodeScalars.allSatisfy({ !$0.properties.isWhitespace && $0.value >= 0x20 && $0.value != 0x7F }) else {
            throw .badShape(text)
        }
        guard words.count >= Self.minimumPasswordCharacters else { throw .tooShort(words.count) }
        nameplate = n
        password = String(words)
    }

    /// A fresh random code: N from 1 to 999, then an even and an odd PGP word (16 bits).
    public static func random() -> ExchangeCode {
        let b = SecureRandom.bytes(4)
        let n = Int(UInt16(b[0]) << 8 | UInt16(b[1])) % 999 + 1
        return try! ExchangeCode(parsing: "\(n)-\(CodeWords.even[Int(b[2])])-\(CodeWords.odd[Int(b[3])])")
    }
}
