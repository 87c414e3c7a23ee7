// swift-tools-version:6.1
import PackageDescription

// One target per concern. Only the target named next to a C module imports it:
//   CSodium   -> MeishiCrypto      (Ed25519, X25519, sealed boxes, Argon2id, AEAD, SHA-256)
//   GRDB      -> MeishiStore       (SQLite)
//   SwiftNIO  -> MeishiProximity   (sockets, discovery and its rules)
//   CQREncode, CZBar, CPNG, CJPEG (through the CJPEGShim C target) -> MeishiQR
//   swift-crypto -> MeishiCrypto    (P-256 ECDSA for Solidarity's cards, nothing else; one backend file)
// MeishiCard (on MeishiCrypto) owns the card model, the payload format, its canonical bytes and
// its proof: it signs payloads and is the only maker of a VerifiedCard. MeishiKit composes the
// libraries into services and throws facts (MeishiError); the `meishi` executable parses,
// words the errors and prints, each command on an injected Context.

let package = Package(
    name: "meishi",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "meishi", targets: ["meishi"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // P-256 only, for Solidarity's cards (ES256); imported by MeishiCrypto's P256 backend alone.
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        // MARK: C libraries (pkg-config names as in Debian's -dev packages)
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(name: "CZBar", pkgConfig: "zbar", providers: [.apt(["libzbar-dev"])]),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CJPEG", pkgConfig: "libjpeg", providers: [.apt(["libjpeg62-turbo-dev"])]),

        // libjpeg's error handler calls exit(): this C shim wraps the decoder with setjmp.
        .target(name: "CJPEGShim", dependencies: ["CJPEG"]),

        // MARK: Libraries
        .target(name: "MeishiCard", dependencies: ["MeishiCrypto"]),
        .target(name: "MeishiCrypto", dependencies: ["CSodium", .product(name: "Crypto", package: "swift-crypto")]),
        .target(
            name: "MeishiStore",
            dependencies: [
                "MeishiCard", "MeishiCrypto",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .target(name: "MeishiQR", dependencies: ["CQREncode", "CZBar", "CPNG", "CJPEGShim"]),
        .target(
            name: "MeishiProximity",
            dependencies: [
                "MeishiCard", "MeishiCrypto",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),
        .target(
            name: "MeishiKit",
            dependencies: [
                "MeishiCard", "MeishiCrypto", "MeishiStore", "MeishiQR", "MeishiProximity",
                .product(name: "Logging", package: "swift-log"),
            ]),

        // MARK: Executables
        .executableTarget(
            name: "meishi",
            dependencies: [
                "MeishiKit", "MeishiCard", "MeishiQR", "MeishiProximity",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),

        .executableTarget(
            name: "meishi-bench",
            dependencies: ["MeishiKit", "MeishiCard", "MeishiCrypto", "MeishiStore"]),

        // MARK: Tests
        .testTarget(name: "MeishiCardTests", dependencies: ["MeishiCard", "MeishiCrypto"]),
        .testTarget(name: "MeishiCryptoTests", dependencies: ["MeishiCrypto", "MeishiCard"]),
        .testTarget(name: "MeishiStoreTests", dependencies: ["MeishiStore", "MeishiCard", "MeishiCrypto"]),
        .testTarget(name: "MeishiQRTests", dependencies: ["MeishiQR", "MeishiCard"]),
        .testTarget(name: "MeishiProximityTests", dependencies: [
            "MeishiProximity", "MeishiCard", "MeishiCrypto", .product(name: "NIOCore", package: "swift-nio"),
        ]),
        .testTarget(name: "MeishiKitTests", dependencies: ["MeishiKit", "MeishiCard", "MeishiCrypto", "MeishiStore"]),
        .testTarget(name: "MeishiEndToEndTests", dependencies: ["meishi", "MeishiKit", "MeishiCard", "MeishiCrypto", "MeishiQR", "MeishiProximity"]),
    ],
    swiftLanguageModes: [.v6]
)
