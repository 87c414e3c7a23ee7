internal import CSodium

/// Secret bytes in memory that libsodium guards and wipes.
///
/// The storage comes from `sodium_malloc` (guard pages, locked when possible) and is zeroed by
/// `sodium_free` when the value is released. Equality is constant time.
public final class SecureBytes: @unchecked Sendable, Equatable {
    private let pointer: UnsafeMutableRawPointer
    /// Number of secret bytes.
    public let count: Int

    /// Fresh random secret bytes.
    public init(randomCount count: Int) {
        Sodium.ensureReady()
        precondition(count > 0)
        guard let p = sodium_malloc(count) else { fatalError("sodium_malloc failed") }
        pointer = p
        self.count = count
        randombytes_buf(p, count)
    }

    /// Copies `bytes` into guarded memory. The caller should wipe its own copy.
    public init<Bytes: Collection>(copying bytes: Bytes) where Bytes.Element == UInt8 {
        Sodium.ensureReady()
        count = bytes.count
        guard let p = sodium_malloc(Swift.max(count, 1)) else { fatalError("sodium_malloc failed") }
        pointer = p
        let dst = p.bindMemory(to: UInt8.self, capacity: Swift.max(count, 1))
        var i = 0
        for b in bytes { dst[i] = b; i += 1 }
    }

    /// Allocates `count` bytes and lets `body` fill them.
    init(count: Int, filling body: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        Sodium.ensureReady()
        guard let p = sodium_malloc(Swift.max(count, 1)) else { fatalError("sodium_malloc failed") }
        pointer = p
        self.count = count
        do {
            try body(UnsafeMutableRawBufferPointer(start: p, count: count))
        } catch {
            sodium_free(p)
            throw error
        }
    }

    /// The bytes of `parts` one after another, copied from guarded memory to guarded memory.
    public convenience init(concatenating parts: [SecureBytes]) {
        self.init(count: parts.reduce(0) { $0 + $1.count }) { out in
            var offset = 0
            for part in parts {
                part.withUnsafeBytes { src in
                    if let base = src.baseAddress { (out.baseAddress! + offset).copyMemory(from: base, byteCount: src.count) }
                }
                offset += part.count
            }
        }
    }

    /// The bytes in `range`, copied into new guarded memory without passing through an array.
    public func subrange(_ range: Range<Int>) -> SecureBytes {
        precondition(range.lowerBound >= 0 && range.upperBound <= count)
        return SecureBytes(count: range.count) { out in
            if range.count > 0 { out.baseAddress!.copyMemory(from: pointer + range.lowerBound, byteCount: range.count) }
        }
    }

    deinit { sodium_free(pointer) }

    /// Gives `body` read access to the secret bytes; do not let the pointer escape.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// A plain copy of the secret, for writing it to a file the caller protects.
    public func exposedBytes() -> [UInt8] {
        withUnsafeBytes { Array($0) }
    }

    public static func == (lhs: SecureBytes, rhs: SecureBytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return sodium_memcmp(lhs.pointer, rhs.pointer, lhs.count) == 0
    }
}

/// Overwrites `bytes` with zeros in a way the optimiser cannot remove.
///
/// It wipes the buffer `bytes` holds only when no other array shares it: an array copied
/// before (`var copy = bytes`) would be duplicated by this mutation and the original kept. Call it
/// on the variable that owns the secret.
public func wipe(_ bytes: inout [UInt8]) {
    Sodium.ensureReady()
    bytes.withUnsafeMutableBytes { buf in
        if let base = buf.baseAddress { sodium_memzero(base, buf.count) }
    }
}

/// Overwrites the UTF-8 storage of `text` (base64 of a secret, say) with zeros, then empties it.
///
/// Unlike arrays this zeroes storage that copies of the string share: that is the point, since a
/// JSON value or a parser may still hold the same text.
public func wipe(_ text: inout String) {
    Sodium.ensureReady()
    text.withUTF8 { buf in
        if let base = buf.baseAddress { sodium_memzero(UnsafeMutableRawPointer(mutating: base), buf.count) }
    }
    text = ""
}
