// swift-tools-version:6.1
import PackageDescription

// One target per concern. Only the target named next to a C module imports it:
//   CSodium   -> MeishiCrypto      (Ed25519, X25519, sealed boxes, Argon2id, AEAD, SHA-256/512,
//                                   HMAC-SHA512, ristretto255 and CPace on it)
//   GRDB      -> MeishiStore       (SQLite)
//   SwiftNIO  -> MeishiProximity   (Net/ only: sockets, discovery and its rules, and the driver:
//                                   one loop that performs the actions the session returns; its
//                                   Exchange/ holds the session, a state machine where every input
//                                   returns actions, and the post-card phases, without NIO)
//   CQREncode, CZBar, CPNG, CJPEG (through the CJPEGShim C target), CWebP -> MeishiQR
//   swift-crypto -> MeishiCrypto    (P-256 ECDSA for Solidarity's cards, nothing else; one backend file)
//   CKeyutils -> MeishiKeyring     (the kernel's session keyring: the passphrase agent)
// MeishiText (pure Swift, on nothing) owns text shown to people: terminal sanitising
// (TerminalText), display width (DisplayWidth), look-alike name keys (NameSkeleton) and the
// Unicode tables they read. MeishiCard (on MeishiCrypto and MeishiText) owns the card model, the
// payload format, its canonical bytes and its proof: it signs payloads and is the only maker of a
// VerifiedCard. MeishiKit composes the libraries into services and throws facts (MeishiError);
// the `meishi` executable parses, words the errors and prints, each command on an injected
// Context. Every target names in its dependencies each library it imports.

/// Where `make release` puts links to the static archives of the C libraries (see the meishi target).
let staticLibraries = Context.packageDirectory + "/.build/static-libs"

/// `make release` sets MEISHI_STATIC_LINK=1 and links the Swift runtime (--static-swift-stdlib) and
/// the archives in `staticLibraries` statically. A plain `swift build -c release` (what a packager
/// types first) leaves it unset and links everything shared: neither the archives' directory nor
/// the symbols below, which only the static runtime defines, reach its link.
let staticLink = Context.environment["MEISHI_STATIC_LINK"] == "1"

/// libzbar's image scanner can broadcast every code it reads over D-Bus, but only after
/// zbar_image_scanner_request_dbus, which meishi never calls. Linked from the archive, those
/// calls name the static Swift runtime's trap for deleted methods (swift_deletedMethodError,
/// defined in libswiftCore.a only: a shared runtime does not export it) instead of pulling in
/// libdbus (and with it systemd, gcrypt, lz4, zstd, lzma and libcap): the branch never runs, and
/// would abort if it did. Used only in the static link; libzbar.so brings its own libdbus.
let zbarWithoutDBus = [
    "dbus_bus_get", "dbus_bus_release_name", "dbus_bus_request_name", "dbus_connection_flush",
    "dbus_connection_send", "dbus_error_free", "dbus_error_init", "dbus_error_is_set",
    "dbus_message_iter_append_basic", "dbus_message_iter_append_fixed_array", "dbus_message_iter_close_container",
    "dbus_message_iter_init_append", "dbus_message_iter_open_container", "dbus_message_new_signal", "dbus_message_unref",
].flatMap { ["-Xlinker", "--defsym=\($0)=swift_deletedMethodError"] }

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
        // `make release` points PKG_CONFIG_PATH at copies of these .pc files without their
        // -L/usr/lib/…, which would otherwise come first in the link and hide the static archives
        // the release build links (see the meishi target's linker settings).
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(name: "CZBar", pkgConfig: "zbar", providers: [.apt(["libzbar-dev"])]),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CJPEG", pkgConfig: "libjpeg", providers: [.apt(["libjpeg62-turbo-dev"])]),
        .systemLibrary(name: "CWebP", pkgConfig: "libwebp", providers: [.apt(["libwebp-dev"])]),
        .systemLibrary(name: "CKeyutils", pkgConfig: "libkeyutils", providers: [.apt(["libkeyutils-dev"])]),

        // The Swift runtime's hook for the global executor, which MeishiProximity points at the
        // event loop (`EventLoopExecutor`): the static runtime hides it from dlsym.
        .target(name: "CTaskHook"),
        // sqlite3_db_config is variadic, which Swift cannot call: MeishiStore's one use of it.
        .target(name: "CSQLiteShim", linkerSettings: [.linkedLibrary("sqlite3")]),
        // libjpeg's error handler calls exit(): this C shim wraps the decoder with setjmp.
        // A C target does not autolink its system library's module map: it names libjpeg itself.
        .target(name: "CJPEGShim", dependencies: ["CJPEG"], linkerSettings: [.linkedLibrary("jpeg")]),

        // MARK: Libraries
        // Unicode/Confusables.swift and Unicode/EastAsianWidth.swift are generated by
        // tools/gen-confusables.py and tools/gen-east-asian-width.py; their licence sits beside them.
        .target(name: "MeishiText", exclude: ["Unicode/LICENSE-Unicode.txt"]),
        .target(name: "MeishiCard", dependencies: ["MeishiCrypto", "MeishiText"]),
        .target(name: "MeishiCrypto", dependencies: ["CSodium", .product(name: "Crypto", package: "swift-crypto")]),
        .target(
            name: "MeishiStore",
            dependencies: [
                "MeishiCard", "MeishiCrypto", "MeishiText", "CSQLiteShim",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .target(name: "MeishiQR", dependencies: ["CQREncode", "CZBar", "CPNG", "CJPEGShim", "CWebP"]),
        // Keys kept by the kernel for a session (`--remember`): derived key-encryption keys only.
        .target(name: "MeishiKeyring", dependencies: ["CKeyutils", "MeishiCrypto"]),
        .target(
            name: "MeishiProximity",
            dependencies: [
                "MeishiCard", "MeishiCrypto", "MeishiText", "CTaskHook",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // The WebSocket client of magic-wormhole's mailbox protocol (--relay).
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]),
        .target(
            name: "MeishiKit",
            dependencies: [
                "MeishiCard", "MeishiCrypto", "MeishiStore", "MeishiQR", "MeishiProximity",
                .product(name: "Logging", package: "swift-log"),
            ]),

        // Every parser that reads input from strangers, as a function of bytes with its properties
        // checked: run by libFuzzer (`make fuzz`) and replayed over fixtures/fuzz by the tests.
        .target(name: "MeishiFuzz", dependencies: ["MeishiCard", "MeishiCrypto", "MeishiProximity", "MeishiQR"]),

        // MARK: Executables
        .executableTarget(
            name: "meishi",
            dependencies: [
                "MeishiKit", "MeishiCard", "MeishiText", "MeishiCrypto", "MeishiQR", "MeishiProximity", "MeishiStore",
                "MeishiKeyring", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // Start-up of the release build (make bench-startup): the toolchain's lld packs the
            // relative relocations (DT_RELR, glibc >= 2.36; gold cannot), and the executable
            // exports no symbols: the static Swift runtime asks for -export-dynamic, which put
            // 21,000 symbols in front of every lookup the loader makes for the shared libraries,
            // and nothing here looks a symbol up in the executable.
            // The C libraries Debian ships as archives are linked from them: `make release` links
            // them into .build/static-libs, searched before the system's directories, so a start
            // maps 10 shared objects instead of 30 and binds ~450 symbols instead of ~6,100
            // (libzbar.so alone drags in D-Bus, X11, systemd and gcrypt). glibc stays shared.
            // Without MEISHI_STATIC_LINK=1 (a plain `swift build -c release`) everything links shared.
            linkerSettings: [
                .unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                              "-Xlinker", "--no-export-dynamic"]
                             + (staticLink
                                ? ["-L", staticLibraries,
                                   // What the archives need: libpng zlib; libzbar's camera libv4l2
                                   // (no -dev symlink on Debian). Dropped when unused.
                                   "-Xlinker", "--as-needed", "-Xlinker", "-lz", "-Xlinker", "-l:libv4l2.so.0"]
                                  + zbarWithoutDBus
                                : []),
                             .when(platforms: [.linux], configuration: .release)),
            ]),

        // A corpus replayer normally; libFuzzer's target when built with -DFUZZING (make fuzz).
        .executableTarget(name: "meishi-fuzz", dependencies: ["MeishiFuzz"]),

        .executableTarget(
            name: "meishi-bench",
            dependencies: ["MeishiKit", "MeishiCard", "MeishiCrypto", "MeishiStore"]),

        // MARK: Tests
        .testTarget(name: "MeishiTextTests", dependencies: ["MeishiText"]),
        .testTarget(name: "MeishiCardTests", dependencies: ["MeishiCard", "MeishiText", "MeishiCrypto"]),
        .testTarget(name: "MeishiCryptoTests", dependencies: ["MeishiCrypto", "MeishiCard"]),
        .testTarget(name: "MeishiStoreTests", dependencies: ["MeishiStore", "MeishiCard", "MeishiText", "MeishiCrypto"]),
        .testTarget(name: "MeishiQRTests", dependencies: ["MeishiQR", "MeishiCard"]),
        .testTarget(name: "MeishiProximityTests", dependencies: [
            "MeishiProximity", "MeishiCard", "MeishiCrypto", .product(name: "NIOCore", package: "swift-nio"),
        ]),
        .testTarget(name: "MeishiKitTests", dependencies: ["MeishiKit", "MeishiCard", "MeishiText", "MeishiCrypto", "MeishiStore"]),
        .testTarget(name: "MeishiFuzzTests", dependencies: ["MeishiFuzz"]),
        // GRDB here only reads a store behind meishi's back (integrity after a SIGKILL).
        .testTarget(name: "MeishiEndToEndTests", dependencies: [
            "meishi", "MeishiKit", "MeishiCard", "MeishiText", "MeishiCrypto", "MeishiQR", "MeishiProximity", "MeishiKeyring",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
