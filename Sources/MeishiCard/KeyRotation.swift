import MeishiCrypto

/// A supersession statement (docs/PROTOCOL.md §10): the holder of `oldDID` moved to `newDID` at
/// `time`, signed by the old key *and* the new one, so neither key alone can make one.
///
/// It travels as JCS JSON plus a newline, like a card:
/// `{"format":"meishi-rotation-v1","newDID":…,"newSignature":…,"oldDID":…,"oldSignature":…,"time":…}`.
/// Both signatures are over `"meishi-rotation-v1" || 0x00 || JCS({format, newDID, oldDID, time})`.
public struct RotationStatement: Equatable, Sendable {
    public static let format = "meishi-rotation-v1"
    /// Most bytes a statement may take as transmitted (one is about 330).
    public static let maximumEncodedSize = 1024
    public let oldDID: String
    public let newDID: String
    /// Unix seconds when the key was replaced.
    public let time: Int64
    public let oldSignature: Ed25519.Signature
    public let newSignature: Ed25519.Signature

    /// Signs a statement that `old`'s DID is replaced by `new`'s at `time`.
    public static func sign(old: Ed25519.SigningKey, new: Ed25519.SigningKey, time: Int64) -> RotationStatement {
        let oldDID = DIDKey.did(for: old.publicKey), newDID = DIDKey.did(for: new.publicKey)
        let input = signingInput(oldDID: oldDID, newDID: newDID, time: time)
        return RotationStatement(oldDID: oldDID, newDID: newDID, time: time, oldSignature: old.signature(for: input),
                                 newSignature: new.signature(for: input))
    }

    /// The bytes both keys sign.
    public static func signingInput(oldDID: String, newDID: String, time: Int64) -> [UInt8] {
        Array(format.utf8) + [0] + JCS.canonicalize(.object([
            "format": .string(format), "newDID": .string(newDID), "oldDID": .string(oldDID), "time": .number(Double(time)),
        ]))
    }

    /// The statement as sent and kept: JCS of every member, then a newline.
    public var bytes: [UInt8] {
        JCS.canonicalize(.object([
            "format": .string(Self.format), "newDID": .string(newDID), "oldDID": .string(oldDID), "time": .number(Double(time)),
            "oldSignature": .string(Base64URL.encode(oldSignature.rawRepresentation)),
            "newSignature": .string(Base64URL.encode(newSignature.rawRepresentation)),
        ])) + [0x0A]
    }

    /// Why a statement was refused.
    public enum Failure: Error, Equatable, Sendable {
        /// Not a statement: too long, not strict JSON, a member missing, unknown or of the wrong type.
        case malformed(String)
        /// The old and the new DID are the same key.
        case sameKey
        /// The signature of the old key does not verify.
        case badOldSignature
        /// The signature of the new key does not verify.
        case badNewSignature
    }

    /// Parses and checks `bytes`: shape, two Ed25519 did:keys that differ, and both signatures.
    public static func verify(_ bytes: [UInt8]) throws(Failure) -> RotationStatement {
        guard bytes.count <= maximumEncodedSize else { throw .malformed("longer than \(maximumEncodedSize) bytes") }
        guard let json = try? StrictJSONParser.parse(bytes), case .object(let members) = json else { throw .malformed("not a JSON object") }
        let known = ["format", "newDID", "newSignature", "oldDID", "oldSignature", "time"]
        for m in members where !known.contains(where: { JSONValue.sameName($0, m.key) }) { throw .malformed("unknown member") }
        guard members.count == known.count else { throw .malformed("a member is missing") }
        guard json["format"] == .string(format) else { throw .malformed("not \(format)") }
        guard case .string(let oldDID)? = json["oldDID"], let oldKey = DIDKey.ed25519PublicKey(from: oldDID),
              case .string(let newDID)? = json["newDID"], let newKey = DIDKey.ed25519PublicKey(from: newDID)
        else { throw .malformed("oldDID and newDID must be Ed25519 did:keys") }
        guard case .number(let t)? = json["time"], t >= 0, t <= 9_007_199_254_740_991, t == t.rounded() else {
            throw .malformed("time must be an integer number of seconds")
        }
        guard case .string(let o)? = json["oldSignature"], let oBytes = Base64URL.decode(o),
              let oldSignature = try? Ed25519.Signature(rawRepresentation: oBytes),
              case .string(let n)? = json["newSignature"], let nBytes = Base64URL.decode(n),
              let newSignature = try? Ed25519.Signature(rawRepresentation: nBytes)
        else { throw .malformed("the signatures must be 64 bytes of base64url") }
        guard oldKey != newKey else { throw .sameKey }
        let input = signingInput(oldDID: oldDID, newDID: newDID, time: Int64(t))
        guard oldKey.isValidSignature(oldSignature, for: input) else { throw .badOldSignature }
        guard newKey.isValidSignature(newSignature, for: input) else { throw .badNewSignature }
        return RotationStatement(oldDID: oldDID, newDID: newDID, time: Int64(t), oldSignature: oldSignature, newSignature: newSignature)
    }

    /// Several statements in one frame or file (a chain of rotations, oldest first): each one's
    /// bytes, newline-terminated, one after another.
    public static func verifyChain(_ bytes: [UInt8]) throws(Failure) -> [RotationStatement] {
        guard bytes.count <= 16 * maximumEncodedSize else { throw .malformed("more than 16 statements") }
        var out: [RotationStatement] = []
        for line in bytes.split(separator: 0x0A) {
            out.append(try verify(Array(line)))
        }
        guard !out.isEmpty else { throw .malformed("no statement") }
        for (a, b) in zip(out, out.dropFirst()) where a.newDID != b.oldDID || a.time >= b.time {
            throw .malformed("the statements are not a chain, oldest first")
        }
        return out
    }
}
