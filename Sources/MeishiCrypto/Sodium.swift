internal import CSodium

/// Initialises libsodium exactly once, before any primitive is used.
enum Sodium {
    static let ready: Void = {
        // sodium_init returns 0 on success, 1 when already initialised, -1 on failure.
        precondition(sodium_init() >= 0, "libsodium failed to initialise")
    }()

    static func ensureReady() { _ = ready }
}

/// The libsodium version this process runs against, e.g. "1.0.18".
public var sodiumVersion: String {
    Sodium.ensureReady()
    return String(cString: sodium_version_string())
}

/// A one-shot libsodium hash of `data` into `count` bytes (`crypto_hash_sha256`, `…sha512`).
func oneShotHash<D: Collection>(_ data: D, count: Int, name: String,
                                _ function: (UnsafeMutablePointer<UInt8>, UnsafePointer<UInt8>?, UInt64) -> Int32) -> [UInt8]
where D.Element == UInt8 {
    Sodium.ensureReady()
    var out = [UInt8](repeating: 0, count: count)
    let input = Array(data)
    let rc = input.withUnsafeBufferPointer { inp in
        out.withUnsafeMutableBufferPointer { o in function(o.baseAddress!, inp.baseAddress, UInt64(inp.count)) }
    }
    precondition(rc == 0, "\(name) failed")
    return out
}
