import MeishiCrypto

/// The QR text form of a signed ProximityPayload v1 (docs/PROTOCOL.md section 4):
/// `MEISHI1:` followed by the Base45 of a compact binary encoding that holds everything needed
/// to rebuild the exact JSON payload and check its signature.
public enum CardQRText {
    public static let prefix = "MEISHI1:"
    static let formatVersion: UInt8 = 1
    /// Codes of the standard fields, in `FieldName.standard` order; custom fields use 0xFF.
    static let customFieldCode: UInt8 = 0xFF

    public static func encode(_ p: ProximityPayload) -> String {
        var out: [UInt8] = [formatVersion]
        out += ShareID.bytes(p.shareId)
        out += p.signPubKey.rawRepresentation
        out += p.pubKey.rawRepresentation
        appendVarint(UInt64(p.timestamp), to: &out)
        out.append(UInt8(DisclosureLevel.allCases.firstIndex(of: p.level)!))
        let fields = p.orderedFields
        appendVarint(UInt64(fields.count), to: &out)
        for f in fields {
            if let code = FieldName.standard.firstIndex(of: f.name.rawValue) {
                out.append(UInt8(code))
            } else {
                out.append(customFieldCode)
                appendBytes(Array(f.name.rawValue.dropFirst(2).utf8), to: &out)
            }
            if f.name.isMultiValued { appendVarint(UInt64(f.values.count), to: &out) }
            for v in f.values { appendBytes(Array(v.utf8), to: &out) }
        }
        out += p.payloadSignature.rawRepresentation
        return prefix + Base45.encode(out)
    }

    /// The payload a QR text holds. Shape errors are `.malformed`; the signature is not checked.
    public static func decode(_ text: String) throws(PayloadError) -> ProximityPayload {
        guard text.hasPrefix(prefix) else {
            if text.hasPrefix("MEISHI") { throw .unsupportedVersion(String(text.prefix(12))) }
            throw .malformed("not a meishi card QR")
        }
        let body = text.dropFirst(prefix.count)
        guard body.utf8.count <= ProximityPayload.maximumEncodedSize else { throw .tooLarge(bytes: body.utf8.count) }
        guard let bytes = Base45.decode(String(body)) else { throw .malformed("QR text is not Base45") }
        guard !bytes.isEmpty else { throw .malformed("empty card QR") }
        var r = Reader(bytes: bytes)
        guard let version = r.byte(), version == formatVersion else { throw .unsupportedVersion("card QR format \(bytes.first ?? 0)") }
        guard let share = r.take(16), let spk = r.take(32), let pk = r.take(32), let ts = r.varint(),
              ts <= 9_007_199_254_740_991, let lv = r.byte(), Int(lv) < DisclosureLevel.allCases.count,
              let count = r.varint(), count <= UInt64(Card.maximumValueCount) else {
            throw .malformed("truncated or invalid card QR header")
        }
        var fields: [FieldName: FieldValue] = [:]
        for _ in 0..<count {
            guard let code = r.byte() else { throw .malformed("truncated card QR") }
            let name: FieldName
            if code == customFieldCode {
                guard let raw = r.lengthPrefixed(), let word = String(validating: raw, as: UTF8.self),
                      let custom = try? FieldName("x-" + word) else { throw .malformed("bad custom field") }
                name = custom
            } else {
                guard Int(code) < FieldName.standard.count else { throw .malformed("unknown field code \(code)") }
                name = try! FieldName(FieldName.standard[Int(code)])
            }
            guard fields[name] == nil else { throw .malformed("field \(name) twice") }
            func value() throws(PayloadError) -> String {
                guard let raw = r.lengthPrefixed(), let s = String(validating: raw, as: UTF8.self) else { throw .malformed("bad value of \(name)") }
                return s
            }
            if name.isMultiValued {
                guard let n = r.varint(), n >= 1, n <= UInt64(Card.maximumValueCount) else { throw .malformed("bad value count") }
                var values: [String] = []
                for _ in 0..<n { values.append(try value()) }
                fields[name] = .multiple(values)
            } else {
                fields[name] = .single(try value())
            }
        }
        guard let sig = r.take(64), r.atEnd else { throw .malformed("card QR has a bad signature length") }
        let signKey = try! Ed25519.PublicKey(rawRepresentation: spk)
        let payload = ProximityPayload(shareId: ShareID.string(share), senderDID: DIDKey.did(for: signKey), signPubKey: signKey,
                                       pubKey: try! X25519.PublicKey(rawRepresentation: pk), timestamp: Int64(ts),
                                       level: DisclosureLevel.allCases[Int(lv)], cardFields: fields,
                                       payloadSignature: try! Ed25519.Signature(rawRepresentation: sig))
        // Through the JSON checks, so the limits and field rules are exactly those of a JSON payload.
        return try ProximityPayload.parse(payload.jsonValue())
    }

    static func appendVarint(_ v: UInt64, to out: inout [UInt8]) {
        var v = v
        while v >= 0x80 {
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    static func appendBytes(_ b: [UInt8], to out: inout [UInt8]) {
        appendVarint(UInt64(b.count), to: &out)
        out += b
    }

    struct Reader {
        let bytes: [UInt8]
        var i = 0
        var atEnd: Bool { i == bytes.count }
        mutating func byte() -> UInt8? {
            guard i < bytes.count else { return nil }
            defer { i += 1 }
            return bytes[i]
        }
        mutating func take(_ n: Int) -> [UInt8]? {
            guard n >= 0, i + n <= bytes.count else { return nil }
            defer { i += n }
            return Array(bytes[i..<i + n])
        }
        /// Unsigned LEB128, at most 9 bytes, minimal encoding only.
        mutating func varint() -> UInt64? {
            var v: UInt64 = 0
            for shift in stride(from: 0, to: 63, by: 7) {
                guard let b = byte() else { return nil }
                v |= UInt64(b & 0x7F) << UInt64(shift)
                if b & 0x80 == 0 { return (b == 0 && shift > 0) ? nil : v }
            }
            return nil
        }
        mutating func lengthPrefixed() -> [UInt8]? {
            guard let n = varint(), n <= UInt64(Card.maximumValueBytes) else { return nil }
            return take(Int(n))
        }
    }
}
