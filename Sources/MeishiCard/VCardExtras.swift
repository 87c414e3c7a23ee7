import Foundation

/// What an imported vCard held beyond meishi's fields, so that exporting it again loses
/// nothing: properties meishi has no field for (as content lines), and the group and
/// parameters (`item1.`, `TYPE=work`) each email, phone and URL came with.
public struct VCardExtras: Equatable, Sendable {
    /// Most properties kept per contact, and most bytes in all.
    public static let maximumProperties = 500
    public static let maximumBytes = 256 * 1024

    /// The group and parameters of one value.
    public struct Decoration: Equatable, Sendable {
        public var group: String?
        /// As written after the name: `;TYPE=work,voice;PREF=1` (empty for none).
        public var parameters: String

        public init(group: String?, parameters: String) {
            self.group = group
            self.parameters = parameters
        }
    }

    /// Content lines, unfolded, UTF-8, vCard-escaped values: `item1.X-ABLabel:Work`; a binary
    /// value as base64 with `ENCODING=b` (the writer makes it a `data:` URI in 4.0).
    public var properties: [String] = []
    /// Keyed by `key(field, value)`.
    public var decorations: [String: Decoration] = [:]

    public init() {}

    public var isEmpty: Bool { properties.isEmpty && decorations.isEmpty }

    static func key(_ field: FieldName, _ value: String) -> String { field.rawValue + ":" + value }

    /// The group and parameters `value` of `field` came with, if any.
    public func decoration(_ field: FieldName, _ value: String) -> Decoration? { decorations[Self.key(field, value)] }

    /// Keeps `prop` as a content line, within the limits; a binary value as base64 with `ENCODING=b`.
    mutating func keep(_ prop: VCardProperty) {
        let parameters = prop.parameters + (prop.isBinary ? [VCardParameter(name: "ENCODING", values: ["b"])] : [])
        add(line: (prop.group.map { $0 + "." } ?? "") + prop.spelledName + VCard.parameterText(parameters) + ":" + prop.value)
    }

    mutating func add(line: String) {
        guard properties.count < Self.maximumProperties, !properties.contains(line),
              properties.reduce(0, { $0 + $1.utf8.count }) + line.utf8.count <= Self.maximumBytes else { return }
        properties.append(line)
    }

    /// A content line as `VCard.write` writes its value (a raw line break, kept by older versions
    /// from a quoted-printable value, as `\n`; other control characters left out): two lines of
    /// the same canonical form are one property.
    /// A binary value is the same property as base64 with `ENCODING=b` (3.0) or as a `data:` URI
    /// (4.0), whatever its parameters.
    /// An ORG with a bare comma (vCard 2.1) is the same property as with that comma escaped.
    public static func canonical(_ line: String) -> String {
        var line = line
        if let raw = VCardParser.RawProperty(Array(line.utf8)) {
            if raw.name == "ORG", line.utf8.reversed().starts(with: raw.value.reversed()) {
                line = String(decoding: line.utf8.dropLast(raw.value.count), as: UTF8.self)
                    + VCard.escapingBareCommas(String(decoding: raw.value, as: UTF8.self))
            }
            let head = (raw.group.map { $0 + "." } ?? "") + raw.name
            let value = String(decoding: raw.value, as: UTF8.self)
            let encoding = raw.parameters.last { $0.name == "ENCODING" }?.values.first?.uppercased()
            if encoding == "B" || encoding == "BASE64" { return "binary " + head + ":" + value }
            if value.hasPrefix("data:"), let comma = value.firstIndex(of: ","), value[..<comma].hasSuffix(";base64") {
                return "binary " + head + ":" + value[value.index(after: comma)...]
            }
        }
        guard line.unicodeScalars.contains(where: VCard.isControl) else { return line }
        let escaped = line.replacingOccurrences(of: "\r\n", with: "\\n").replacingOccurrences(of: "\r", with: "\\n")
            .replacingOccurrences(of: "\n", with: "\\n")
        return String(String.UnicodeScalarView(escaped.unicodeScalars.filter { !VCard.isControl($0) }))
    }

    /// Whether every property of `other` is one of these.
    public func holds(_ other: VCardExtras) -> Bool {
        let mine = Set(properties.map(Self.canonical))
        return other.properties.allSatisfy { mine.contains(Self.canonical($0)) }
    }

    /// `other`'s properties (those not held in another form: see `canonical`) and decorations
    /// added to these (these win).
    public mutating func merge(_ other: VCardExtras) {
        var have = Set(properties.map(Self.canonical))
        for line in other.properties where have.insert(Self.canonical(line)).inserted { add(line: line) }
        decorations.merge(other.decorations) { mine, _ in mine }
    }

    /// The names (uppercased, without group) of the kept properties.
    public var propertyNames: Set<String> { Set(properties.map(Self.propertyName)) }

    /// The name of a content line, uppercased, without its group.
    static func propertyName(_ line: String) -> String {
        let end = line.firstIndex { $0 == ";" || $0 == ":" } ?? line.endIndex
        let full = line[..<end]
        return String(full.split(separator: ".").last ?? full).uppercased()
    }

    // MARK: Stored form

    /// A JSON text for the store (nil when empty).
    public var json: String? {
        guard !isEmpty else { return nil }
        var decos: [String: JSONValue] = [:]
        for (k, d) in decorations {
            var o: [String: JSONValue] = ["parameters": .string(d.parameters)]
            if let g = d.group { o["group"] = .string(g) }
            decos[k] = .object(o)
        }
        let doc = JSONValue.object(["properties": .array(properties.map(JSONValue.string)), "decorations": .object(decos)])
        return String(decoding: JCS.canonicalize(doc), as: UTF8.self)
    }

    /// Reads the stored form; nil or damaged text gives empty extras.
    public init(json: String?) {
        guard let json, let doc = try? StrictJSONParser.parse(Array(json.utf8)) else { return }
        if case .array(let items)? = doc["properties"] {
            properties = items.compactMap { if case .string(let s) = $0 { s } else { nil } }
        }
        if case .object(let members)? = doc["decorations"] {
            for m in members {
                guard case .string(let p)? = m.value["parameters"] else { continue }
                var group: String?
                if case .string(let g)? = m.value["group"] { group = g }
                decorations[m.key] = Decoration(group: group, parameters: p)
            }
        }
    }
}

extension VCard {
    /// Parameters as written after a property name: `;TYPE=work,voice`, values quoted when
    /// they hold `:`, `;` or `,`, and `"`, newline and `^` escaped per RFC 6868.
    public static func parameterText(_ params: [VCardParameter]) -> String {
        var out = ""
        for p in params {
            out += ";" + p.name + "="
            out += p.values.map { v -> String in
                var e = ""
                for ch in v {
                    switch ch {
                    case "^": e += "^^"
                    case "\"": e += "^'"
                    case "\n", "\r\n", "\r": e += "^n"
                    default: e.append(ch)
                    }
                }
                return e.contains(where: { $0 == ":" || $0 == ";" || $0 == "," || $0 == " " }) ? "\"" + e + "\"" : e
            }.joined(separator: ",")
        }
        return out
    }
}
