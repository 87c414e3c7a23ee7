import Testing
import MeishiCard
import MeishiCrypto
import MeishiKit
import MeishiProximity
import MeishiQR
import MeishiStore
@testable import meishi

/// ErrorMessages/ words each MeishiKit failure in the file of its area, through one router
/// (`MeishiFailure.init(_: MeishiError)`): every case reaches an initialiser that words it (a case
/// routed to another area traps, which ends this test process), as one line without a final period.
@Suite struct ErrorMessagesTests {
    /// Every case of MeishiError that is worded here rather than by a library error's own initialiser.
    static let kitFailures: [MeishiError] = [
        // files
        .cannotRead(path: "a.json", reason: "No such file or directory", missing: true), .isDirectory(path: "d"),
        .cannotWrite(path: "d", reason: "Is a directory"), .alreadyExists(path: "a.json"), .fileTooLarge(path: "a.json", limit: 16 << 10),
        // home
        .homeNotDirectory(path: "h"), .cannotCreateHome(path: "h", reason: "Permission denied"), .homeNotOwned(path: "h", owner: 1000),
        .homeWritableByOthers(path: "h", mode: 0o777), .noHome, .notAHomeBackup(path: "b"), .homeBackupDamaged(path: "b"),
        .homeNotEmpty(path: "h", holds: ["a", "b", "c", "d", "e"]),
        // identity
        .noIdentity(home: "h"), .identityExists(home: "h"), .notABackup(path: "b"), .identityDamaged(path: "identity.json"),
        .identityDamaged(path: "identity.key"), .rotatedThisSecond, .rotationsDamaged(path: "r"), .keyExposed(path: "k", mode: 0o644),
        .keyLimitsTooHigh(path: "k", operations: 99, memoryBytes: 1 << 34), .passphraseNeeded, .emptyPassphrase, .passphraseCancelled, .passphrasesDiffer,
        .wrongPassphrase(path: "k"), .cannotDecrypt(path: "k", .invalidPublicKey), .cannotEncrypt(.invalidPublicKey),
        .cannotBackUp(path: "k", reason: "Read-only file system"), .solidarityKeyOfOtherIdentity(path: "s", owner: "did:key:z6Mk\u{1B}"),
        // cards
        .cardFileDamaged(path: "card.json", reason: "not JSON"), .cardFileRefused(path: "card.json", .controlCharacter(.title)), .shareTooLarge(bytes: 99_999), .ownCard, .ownSolidarityCard,
        .vcard(path: "a.vcf", VCardProblem(line: 3, reason: .noCard)), .notOneCard(path: "a.vcf", count: 2), .nothingToImport(path: "a.vcf"),
        .unsignedContact(id: 4, name: "Ken"), .storedCardInvalid(id: 4, .keyMismatch),
        // messages
        .cannotMessage(id: 4, name: "Ken", .unsigned), .cannotMessage(id: 4, name: "Ken", .noKey),
        .cannotMessage(id: 0, name: "did:key:z6Mk", .yourself),
        // scan --camera
        .camera(device: "/dev/video0", .noDevice), .camera(device: "/dev/video0", .noPermission),
        .camera(device: "/dev/null", .notAVideoDevice), .camera(device: "/dev/video0", .unusable("busy")),
        .camera(device: "/dev/video0", .ended), .noCardSeen(device: "/dev/video0", seconds: 30),
    ]

    @Test func everyKitFailureIsWordedByItsArea() {
        for e in Self.kitFailures {
            let f = MeishiFailure(e)
            #expect(!f.message.isEmpty && !f.message.contains("\n") && !f.message.hasSuffix("."), "\(e): \(f.message)")
            #expect(f.hint.map { !$0.isEmpty && !$0.contains("\n") && !$0.hasSuffix(".") } ?? true, "\(e): \(f.hint ?? "")")
            #expect(f.status != .ok, "\(e)")
        }
    }

    /// `--relay`: each failure of the mailbox server or the transit relay is one line with a hint,
    /// and the exit status says which kind it was.
    @Test func everyRelayFailureIsWordedWithAHintAndItsStatus() {
        let mailbox = MailboxURL("ws://a:1/v1")!, transit = TransitAddress("tcp:a:2")!
        let cases: [(RelayFailure, meishi.ExitStatus)] = [
            (.mailboxUnreachable(mailbox, .refused), .unavailable),
            (.notAMailbox(mailbox, nil), .unavailable), (.refusedByMailbox(.said("x\u{1B}")), .unavailable),
            (.mailboxLost(.closed(before: .otherSide)), .unavailable), (.nameplateTaken(7), .protocolError),
            (.peerNeverCame(7), .timedOut), (.peerNotMeishi, .protocolError), (.transitUnreachable(transit, .noRoute), .unavailable),
            (.transitRefused(.answered("impatient")), .unavailable),
        ]
        for (r, status) in cases {
            let f = MeishiFailure(ExchangeFailure.relay(r))
            #expect(!f.message.contains("\n") && !f.message.hasSuffix(".") && !f.message.contains("\u{1B}"), "\(r): \(f.message)")
            #expect(f.hint.map { !$0.isEmpty && !$0.contains("\n") } ?? false, "\(r)")
            #expect(f.status == status, "\(r)")
        }
    }
}
