import Foundation
import MeishiText

/// How widely a value may be shared. A share at level L includes every value at a level <= L.
public enum DisclosureLevel: String, CaseIterable, Comparable, Codable, Sendable {
    case `public`, professional, personal

    private var rank: Int {
        switch self {
        case .public: 0
        case .professional: 1
        case .personal: 2
        }
    }

    public static func < (lhs: DisclosureLevel, rhs: DisclosureLevel) -> Bool { lhs.rank < rhs.rank }
}

/// A card field name: one of the standard fields or a custom `x-<word>`.
public struct FieldName: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The standard fields, in display and sort order.
    public static let standard = ["name", "title", "org", "email", "phone", "url", "address", "note"]
    /// Fields that hold several values.
    public static let multiValued: Set<String> = ["email", "phone", "url"]

    public let rawValue: String
    public var description: String { rawValue }

    public static let name = FieldName(unchecked: "name")
    public static let title = FieldName(unchecked: "title")
    public static let org = FieldName(unchecked: "org")
    public static let address = FieldName(unchecked: "address")
    public static let note = FieldName(unchecked: "note")
    public static let email = FieldName(unchecked: "email")
    public static let phone = FieldName(unchecked: "phone")
    public static let url = FieldName(unchecked: "url")
    /// Another identity of the card's holder (a Solidarity P-256 did:key), named by the signed
    /// card itself: with the other card naming this one back, the two are one person (PROTOCOL §6.5).
    public static let sameAs = FieldName(unchecked: "x-same-as")

    private init(unchecked raw: String) { rawValue = raw }

    /// A valid field name: a standard one, or `x-` followed by 1 to 32 of `a-z 0-9 -`.
    /// Compared as UTF-8 bytes (a name canonically equivalent to a valid one is not valid).
    public init(_ raw: String) throws(CardError) {
        if Self.standard.contains(where: { $0.utf8.elementsEqual(raw.utf8) }) { rawValue = raw; return }
        let word = raw.utf8.dropFirst(2)
        guard raw.utf8.starts(with: "x-".utf8), (1...32).contains(word.count),
              word.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }),
              word.first != 0x2D, word.last != 0x2D
        else { throw .invalidFieldName(raw) }
        rawValue = raw
    }

    public var isMultiValued: Bool { Self.multiValued.contains(rawValue) }
    /// Fields whose values may hold line breaks: a postal address, a note.
    public var allowsLineBreaks: Bool { rawValue == "address" || rawValue == "note" }

    /// The level a value gets when `card set`/`card add` is not told one.
    public var defaultLevel: DisclosureLevel {
        switch rawValue {
        case "name", "title", "org", "url": .public
        case "email", "phone": .professional
        default: .personal
        }
    }

    private var order: (Int, String) {
        (Self.standard.firstIndex(of: rawValue) ?? Self.standard.count, rawValue)
    }

    public static func < (lhs: FieldName, rhs: FieldName) -> Bool { lhs.order < rhs.order }
}

/// One value of a field, with its disclosure level.
public struct CardValue: Equatable, Codable, Sendable {
    public var value: String
    public var level: DisclosureLevel

    /// For phones: the E.164 form, when the number names its country (`+81 90…` → `+8190…`).
    public var e164: String?

    public init(value: String, level: DisclosureLevel, e164: String? = nil) {
        self.value = value
        self.level = level
        self.e164 = e164
    }

    static func make(_ field: FieldName, _ value: String, _ level: DisclosureLevel) -> CardValue {
        CardValue(value: value, level: level, e164: field == .phone ? CardText.e164(value) : nil)
    }
}

/// Everything that can be wrong with a card edit.
public enum CardError: Error, Equatable, Sendable {
    case invalidFieldName(String)
    case notMultiValued(FieldName)
    case empty(FieldName)
    case tooLong(FieldName, bytes: Int)
    case controlCharacter(FieldName)
    case tooManyValues(limit: Int)
    case invalidEmail(String)
    case invalidPhone(String)
    case invalidURL(String)
    /// A URL of another scheme than http or https (`javascript:`, `file:`, `mailto:`): a phone or
    /// address book would open it as a link.
    case notAWebAddress(String)
    case duplicateValue(FieldName)
    case noSuchField(FieldName)
    case noSuchValue(FieldName)
    /// Which of a field's several values is meant was not said.
    case severalValues(FieldName, [String])
    /// `card set` on a field of several values, without saying which one to replace.
    case severalValuesToReplace(FieldName, [String])
    /// A share needs a name and the card has none.
    case noName
    /// The name's level is above the level of the share.
    case nameNotShared(DisclosureLevel)
    /// The fields chosen for a share leave the name out.
    case nameNotSelected
}

/// The user's own card: each field holds one or more values, each with a disclosure level.
public struct Card: Equatable, Sendable {
    /// Longest value, in UTF-8 bytes.
    public static let maximumValueBytes = 256
    /// Most values on one card, all fields together.
    public static let maximumValueCount = 64

    public private(set) var fields: [FieldName: [CardValue]] = [:]

    public init() {}

    /// Field names in display order.
    public var fieldNames: [FieldName] { fields.keys.sorted() }
    public var valueCount: Int { fields.values.reduce(0) { $0 + $1.count } }
    public var name: String? { fields[.name]?.first?.value }

    /// Replaces every value of `field` with `value`.
    public mutating func set(_ field: FieldName, _ value: String, level: DisclosureLevel? = nil) throws(CardError) {
        let v = try CardText.validated(value, for: field)
        let old = fields[field]?.count ?? 0
        guard valueCount - old + 1 <= Self.maximumValueCount else { throw .tooManyValues(limit: Self.maximumValueCount) }
        fields[field] = [.make(field, v, level ?? field.defaultLevel)]
    }

    /// Replaces the value `old` of `field` with `value`, keeping its level unless `level` is given.
    public mutating func replace(_ field: FieldName, _ old: String, with value: String, level: DisclosureLevel? = nil) throws(CardError) {
        let normalized = old.precomposedStringWithCanonicalMapping
        guard let held = fields[field], let i = held.firstIndex(where: { $0.value == normalized }) else { throw .noSuchValue(field) }
        let v = try CardText.validated(value, for: field)
        guard !held.indices.contains(where: { $0 != i && held[$0].value == v }) else { throw .duplicateValue(field) }
        fields[field]![i] = .make(field, v, level ?? held[i].level)
    }

    /// Appends `value` to a multi-valued field.
    public mutating func add(_ field: FieldName, _ value: String, level: DisclosureLevel? = nil) throws(CardError) {
        guard field.isMultiValued else { throw .notMultiValued(field) }
        let v = try CardText.validated(value, for: field)
        guard !(fields[field] ?? []).contains(where: { $0.value == v }) else { throw .duplicateValue(field) }
        guard valueCount + 1 <= Self.maximumValueCount else { throw .tooManyValues(limit: Self.maximumValueCount) }
        fields[field, default: []].append(.make(field, v, level ?? field.defaultLevel))
    }

    /// Gives the value `value` of `field` the level `level`; returns the level it had.
    @discardableResult
    public mutating func relevel(_ field: FieldName, _ value: String, to level: DisclosureLevel) throws(CardError) -> DisclosureLevel {
        let normalized = value.precomposedStringWithCanonicalMapping
        guard let i = fields[field]?.firstIndex(where: { $0.value == normalized }) else { throw .noSuchValue(field) }
        let old = fields[field]![i].level
        fields[field]![i].level = level
        return old
    }

    /// Removes the field, or only `value` from it. Returns how many values were removed.
    @discardableResult
    public mutating func unset(_ field: FieldName, value: String? = nil) throws(CardError) -> Int {
        guard let values = fields[field] else { throw .noSuchField(field) }
        guard let value else {
            fields[field] = nil
            return values.count
        }
        let normalized = value.precomposedStringWithCanonicalMapping
        let kept = values.filter { $0.value != normalized }
        guard kept.count < values.count else { throw .noSuchValue(field) }
        fields[field] = kept.isEmpty ? nil : kept
        return values.count - kept.count
    }

    /// The values a share at `level` discloses, limited to `only` when given.
    public func disclosed(at level: DisclosureLevel, only: Set<FieldName>? = nil) -> [FieldName: [String]] {
        var out: [FieldName: [String]] = [:]
        for (field, values) in fields where only?.contains(field) ?? true {
            let shown = values.filter { $0.level <= level }.map(\.value)
            if !shown.isEmpty { out[field] = shown }
        }
        return out
    }

    /// What a share at `level` (limited to `only`) discloses; every share carries the name, so a
    /// share without one is refused, saying why.
    public func share(at level: DisclosureLevel, only: Set<FieldName>? = nil) throws(CardError) -> [FieldName: [String]] {
        let out = disclosed(at: level, only: only)
        guard out[.name] != nil else {
            if fields[.name] == nil { throw .noName }
            if let only, !only.contains(.name) { throw .nameNotSelected }
            throw .nameNotShared(level)
        }
        return out
    }
}

extension Card: Codable {
    private struct Stored: Codable {
        var version: Int
        var fields: [String: [CardValue]]
    }

    public init(from decoder: Decoder) throws {
        let stored = try Stored(from: decoder)
        var card = Card()
        // In name order, so that the same file always names the same refused value.
        for (name, values) in stored.fields.sorted(by: { $0.key < $1.key }) {
            let field = try FieldName(name)
            // A hand-edited card.json is held to what `card set` accepts: it is signed as it is.
            card.fields[field] = try values.map { v in
                var checked = v
                checked.value = try CardText.validated(v.value, for: field, stored: true)
                return checked
            }
        }
        self = card
    }

    public func encode(to encoder: Encoder) throws {
        try Stored(version: 1, fields: Dictionary(uniqueKeysWithValues: fields.map { ($0.key.rawValue, $0.value) }))
            .encode(to: encoder)
    }
}

/// The text rules every card value follows.
public enum CardText {
    /// `value` NFC-normalised and checked for `field`, or the reason it is refused. A value
    /// `stored` in card.json by an earlier version is not held to rules added since (a URL must be
    /// a web address), so that the card still loads and the value can be unset.
    public static func validated(_ value: String, for field: FieldName, stored: Bool = false) throws(CardError) -> String {
        var v = value.precomposedStringWithCanonicalMapping
        // An address or a note may run over several lines (U+000A; CR LF and CR become LF);
        // every other control character is still refused.
        let multiline = field.allowsLineBreaks
        if multiline, v.contains("\r") { v = v.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n") }
        guard !v.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { throw .empty(field) }
        guard v.utf8.count <= Card.maximumValueBytes else { throw .tooLong(field, bytes: v.utf8.count) }
        guard !v.unicodeScalars.contains(where: { TerminalText.isUnsafe($0) && !(multiline && $0 == "\n") }) else {
            throw .controlCharacter(field)
        }
        switch field.rawValue {
        case "email": guard isEmailShaped(v) else { throw .invalidEmail(v) }
        case "phone": guard isPhoneShaped(v) else { throw .invalidPhone(v) }
        case "url":
            guard isURLShaped(v) else { throw .invalidURL(v) }
            guard stored || isWebAddress(v) else { throw .notAWebAddress(v) }
        default: break
        }
        return v
    }

    /// `local@domain.tld`: one `@`, no spaces, a dotted domain with non-empty labels.
    public static func isEmailShaped(_ s: String) -> Bool {
        let parts = s.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64,
              !s.contains(where: { $0.isWhitespace }) else { return false }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && labels.allSatisfy { !$0.isEmpty && !$0.hasPrefix("-") && !$0.hasSuffix("-") }
    }

    /// Digits with optional leading `+` and the separators people type: space ( ) - . /, and an
    /// optional extension at the end (`ext 12`, `ext. 12`, `x12`, `#12`).
    public static func isPhoneShaped(_ s: String) -> Bool {
        let allowed = Set("0123456789 ()-./")
        var body = Substring(withoutExtension(s))
        if body.hasPrefix("+") { body = body.dropFirst() }
        return body.allSatisfy { allowed.contains($0) } && body.filter(\.isASCIIDigit).count >= 3
    }

    /// The number without a trailing extension (`+1 (555) 010-9999 ext 12` → `+1 (555) 010-9999`).
    public static func withoutExtension(_ phone: String) -> String {
        guard let m = phone.firstMatch(of: /(?i)\s*(?:ext\.?|extension|x|#)\s*[0-9]{1,6}$/), m.range.lowerBound > phone.startIndex else {
            return phone
        }
        return String(phone[..<m.range.lowerBound])
    }

    /// A scheme (`https:`, `mailto:` …) followed by text without spaces.
    public static func isURLShaped(_ s: String) -> Bool {
        guard let colon = s.firstIndex(of: ":"), colon != s.startIndex else { return false }
        let scheme = s[..<colon]
        guard scheme.first!.isASCIILetter,
              scheme.allSatisfy({ $0.isASCIILetter || $0.isASCIIDigit || "+.-".contains($0) }) else { return false }
        let rest = s[s.index(after: colon)...]
        return !rest.isEmpty && !s.contains(where: { $0.isWhitespace })
    }

    /// An http or https URL with something after `//` (scheme in any case): the only URLs meishi
    /// puts on your card or writes as a vCard URL (trial 7, F17: `javascript:alert(1)` went out
    /// as a link for a phone to open).
    public static func isWebAddress(_ s: String) -> Bool {
        guard isURLShaped(s), let colon = s.firstIndex(of: ":") else { return false }
        let rest = s[s.index(after: colon)...]
        return ["http", "https"].contains(s[..<colon].lowercased()) && rest.hasPrefix("//") && rest.count > 2
    }

    /// The E.164 form (`+` and 8 to 15 digits) of a phone number that names its country with
    /// `+` or `00`; nil for national numbers, whose country meishi cannot know.
    public static func e164(_ phone: String) -> String? {
        var s = withoutExtension(phone).trimmingCharacters(in: .whitespaces)
        if s.hasPrefix("00") { s = "+" + s.dropFirst(2) }
        guard s.hasPrefix("+") else { return nil }
        let digits = s.dropFirst().filter(\.isASCIIDigit)
        guard CardText.isPhoneShaped(phone), (8...15).contains(digits.count), digits.first != "0" else { return nil }
        return "+" + digits
    }

    /// The lowercase form of an email used to compare addresses (local part kept as typed
    /// apart from case, domain lowercased).
    public static func normalizedEmail(_ email: String) -> String {
        email.lowercased()
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
    var isASCIILetter: Bool { isASCII && isLetter }
}
