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
