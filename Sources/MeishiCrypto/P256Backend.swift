// The only file that imports swift-crypto: P-256 through BoringSSL. Everything it returns is
// plain bytes; P256.swift wraps them in meishi's own types.
internal import Crypto
import Foundation

enum P256Backend {
    typealias Point = (x: [UInt8], y: [UInt8])

    /// The affine point of a compressed key, or nil when BoringSSL refuses it.
    static func decompress(_ compressed: [UInt8]) -> Point? {
        guard let key = try? Crypto.P256.Signing.PublicKey(compressedRepresentation: compressed) else { return nil }
        return split(key.x963Representation)
    }

    /// The compressed form of the point (x, y), or nil when it is not on the curve.
    static func compress(x: [UInt8], y: [UInt8]) -> [UInt8]? {
        guard let key = try? Crypto.P256.Signing.PublicKey(x963Representation: [0x04] + x + y) else { return nil }
        return Array(key.compressedRepresentation)
    }

    private static func split(_ x963: Data) -> Point? {
        let bytes = Array(x963)
        guard bytes.count == 65, bytes[0] == 0x04 else { return nil }
        return (Array(bytes[1..<33]), Array(bytes[33..<65]))
    }

    static func isValidSignature(_ raw: [UInt8], for message: [UInt8], x: [UInt8], y: [UInt8]) -> Bool {
        guard let key = try? Crypto.P256.Signing.PublicKey(x963Representation: [0x04] + x + y),
              let signature = try? Crypto.P256.Signing.ECDSASignature(rawRepresentation: raw) else { return false }
        return key.isValidSignature(signature, for: message)
    }

    /// r ‖ s from a DER signature; nil unless it re-encodes to exactly the same bytes (strict DER).
    static func rawSignature(fromDER der: [UInt8]) -> [UInt8]? {
        guard der.count <= 72, let signature = try? Crypto.P256.Signing.ECDSASignature(derRepresentation: der),
              Array(signature.derRepresentation) == der else { return nil }
        return Array(signature.rawRepresentation)
    }

    static func derSignature(fromRaw raw: [UInt8]) -> [UInt8] {
        Array(try! Crypto.P256.Signing.ECDSASignature(rawRepresentation: raw).derRepresentation)
    }

    /// A fresh private scalar, straight into guarded memory.
    static func generate() -> SecureBytes {
        let key = Crypto.P256.Signing.PrivateKey()
        return key.rawRepresentation.withUnsafeBytes { SecureBytes(copying: $0) }
    }

    static func publicPoint(of scalar: SecureBytes) -> Point? {
        // swift-crypto takes the scalar as Data; that copy lives only for this call.
        let key = scalar.withUnsafeBytes { try? Crypto.P256.Signing.PrivateKey(rawRepresentation: Data($0)) }
        return key.flatMap { split($0.publicKey.x963Representation) }
    }

    static func sign(_ message: [UInt8], with scalar: SecureBytes) -> [UInt8] {
        let key = scalar.withUnsafeBytes { try! Crypto.P256.Signing.PrivateKey(rawRepresentation: Data($0)) }
        return Array(try! key.signature(for: message).rawRepresentation)
    }
}
