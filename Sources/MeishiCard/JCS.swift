/// RFC 8785 JSON Canonicalization Scheme: the one byte sequence for a JSON value that both
/// signer and verifier compute.
public enum JCS {
    /// The canonical UTF-8 bytes of `value`. Numbers must be finite.
    public static func canonicalize(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, into: &out)
        return out
    }

    private static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let d):
            if d.rounded(.towardZero) == d, abs(d) < 1e21 {
                // Integers below 1e21 print as their digits in ECMAScript too: a fast path.
                out.append(contentsOf: String(Int64(d)).utf8)
            } else {
                out.append(contentsOf: serialize(number: d).utf8)
            }
        case .string(let s): writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (n, item) in items.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                write(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            // Members sorted by their names as arrays of UTF-16 code units (RFC 8785 section 3.2.3).
            let sorted = members.map { (utf16: Array($0.key.utf16), member: $0) }
                .sorted { $0.utf16.lexicographicallyPrecedes($1.utf16) }.map(\.member)
            out.append(UInt8(ascii: "{"))
            for (n, m) in sorted.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                writeString(m.key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(m.value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { writeEscaped($0, into: &out) }
        out.append(UInt8(ascii: "\""))
    }

    private static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        for b in bytes {
            switch b {
            case 0x22: out.append(contentsOf: [0x5C, 0x22])
            case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
            case 0x08: out.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0C: out.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0xF)])
            default: out.append(b)
            }
        }
    }

    /// ECMAScript `Number.prototype.toString` for a finite double (ECMA-262 section 7.1.12.1),
    /// which RFC 8785 section 3.2.2.3 requires.
    public static func serialize(number d: Double) -> String {
        precondition(d.isFinite, "JCS cannot represent NaN or Infinity")
        if d == 0 { return "0" }
        if d < 0 { return "-" + serialize(number: -d) }
        // Swift's description is the shortest digit string that round-trips, as ECMAScript's.
        let text = d.description
        var mantissa = Substring(text)
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = text[..<e]
            exponent = Int(text[text.index(after: e)...])!
        }
        var digits: [Character] = []
        var pointPosition = 0
        var seenPoint = false
        for ch in mantissa {
            if ch == "." { seenPoint = true; continue }
            digits.append(ch)
            if !seenPoint { pointPosition += 1 }
        }
        while digits.first == "0" { digits.removeFirst(); pointPosition -= 1 }
        while digits.last == "0" { digits.removeLast() }
        let k = digits.count
        let n = pointPosition + exponent
        let s = String(digits)
        if k <= n && n <= 21 {
            return s + String(repeating: "0", count: n - k)
        }
        if 0 < n && n <= 21 {
            return String(digits[0..<n]) + "." + String(digits[n...])
        }
        if -6 < n && n <= 0 {
            return "0." + String(repeating: "0", count: -n) + s
        }
        let e = n - 1
        let expText = e < 0 ? "e-\(-e)" : "e+\(e)"
        if k == 1 { return s + expText }
        return String(digits[0]) + "." + String(digits[1...]) + expText
    }
}
