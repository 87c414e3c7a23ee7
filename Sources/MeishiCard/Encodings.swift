import MeishiCrypto

/// Base64url without padding (RFC 4648 section 5), as the payload format uses.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let reverse: [Int16] = {
        var r = [Int16](repeating: -1, count: 256)
        for (n, c) in alphabet.enumerated() { r[Int(c)] = Int16(n) }
        return r
    }()

    public static func encode<D: Collection>(_ data: D) -> String where D.Element == UInt8 {
        let bytes = Array(data)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)])
            out.append(alphabet[Int(v & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let v = UInt32(bytes[i]) << 16
            out += [alphabet[Int(v >> 18 & 63)], alphabet[Int(v >> 12 & 63)]]
        } else if rest == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [alphabet[Int(v >> 18 & 63)], alphabet[Int(v >> 12 & 63)], alphabet[Int(v >> 6 & 63)]]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The decoded bytes, or nil for padding, foreign characters, an impossible length, or
    /// non-zero trailing bits (so every byte string has exactly one accepted encoding).
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in chars {
            let v = reverse[Int(c)]
            guard v >= 0 else { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
            }
        }
        guard acc & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }
}

/// Base58 with the Bitcoin alphabet, as multibase's `z` prefix (base58btc) uses.
public enum Base58 {
    private static let alphabet = Array("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz".utf8)

    public static func encode<D: Collection>(_ data: D) -> String where D.Element == UInt8 {
        let bytes = Array(data)
        let zeros = bytes.prefix { $0 == 0 }.count
        var digits: [UInt8] = []  // base-58 digits, least significant first
        for b in bytes {
            var carry = Int(b)
            for j in 0..<digits.count {
                carry += Int(digits[j]) << 8
                digits[j] = UInt8(carry % 58)
                carry /= 58
            }
            while carry > 0 { digits.append(UInt8(carry % 58)); carry /= 58 }
        }
        let out = [UInt8](repeating: alphabet[0], count: zeros) + digits.reversed().map { alphabet[Int($0)] }
        return String(decoding: out, as: UTF8.self)
    }

    private static let reverse: [Int] = {
        var r = [Int](repeating: -1, count: 256)
        for (n, c) in alphabet.enumerated() { r[Int(c)] = n }
        return r
    }()

    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        let zeros = chars.prefix { $0 == alphabet[0] }.count
        var bytes: [UInt8] = []  // least significant first
        for c in chars {
            var carry = reverse[Int(c)]
            guard carry >= 0 else { return nil }
            for j in 0..<bytes.count {
                carry += Int(bytes[j]) * 58
                bytes[j] = UInt8(carry & 0xFF)
                carry >>= 8
            }
            while carry > 0 { bytes.append(UInt8(carry & 0xFF)); carry >>= 8 }
        }
        return [UInt8](repeating: 0, count: zeros) + bytes.reversed()
    }
}

/// Lowercase hexadecimal.
public enum Hex {
    public static func encode<D: Collection>(_ data: D) -> String where D.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in data { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < chars.count {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// `did:key` identifiers for Ed25519 keys (W3C did:key method, multicodec `ed25519-pub` 0xed).
public enum DIDKey {
    public static let prefix = "did:key:z"
    /// The unsigned-varint multicodec prefix of `ed25519-pub` (0xed).
    public static let ed25519Multicodec: [UInt8] = [0xED, 0x01]

    /// `did:key:z6Mk…` for an Ed25519 public key.
    public static func did(for key: Ed25519.PublicKey) -> String {
        prefix + Base58.encode(ed25519Multicodec + key.rawRepresentation)
    }

    /// The Ed25519 key a `did:key` names, or nil when it is not an Ed25519 did:key.
    public static func ed25519PublicKey(from did: String) -> Ed25519.PublicKey? {
        guard did.hasPrefix(prefix), did.utf8.count <= 64 else { return nil }
        guard let bytes = Base58.decode(String(did.dropFirst(prefix.count))), bytes.count == 34,
              Array(bytes.prefix(2)) == ed25519Multicodec,
              let key = try? Ed25519.PublicKey(rawRepresentation: bytes.dropFirst(2)) else { return nil }
        // Only the canonical spelling is accepted, so one key has exactly one DID.
        guard self.did(for: key).utf8.elementsEqual(did.utf8) else { return nil }
        return key
    }
}
