import Foundation
import MeishiCard
import MeishiCrypto
import MeishiStore

/// One card found in an import, and what storing it did (or would do).
public struct ImportedCard: Sendable {
    public let file: String
    public let line: Int
    public let contact: ImportedContact
    /// nil when the card was skipped (it is the user's own card).
    public let outcome: ImportOutcome?
}

/// A problem in one file, located by line (0 when the file could not be read at all).
public struct ImportProblem: Sendable {
    public let file: String
    public let line: Int
    public let error: MeishiError
    /// Whether a card was lost to it (counted as skipped).
    public let skipsCard: Bool
    /// Whether nothing of the file could be read (missing, too large, not a vCard).
    public let failsFile: Bool

    /// Whether it lost data: an error, where the rest is a warning (a property read leniently or skipped).
    public var isError: Bool { skipsCard || failsFile }
}

/// What `contacts import` did: every card and problem, and the counts of its summary.
public struct ImportReport: Sendable {
    public var cards: [ImportedCard] = []
    public var problems: [ImportProblem] = []

    public var imported: Int { cards.filter { if case .imported? = $0.outcome { true } else { false } }.count }
    public var merged: Int { cards.filter { if case .merged? = $0.outcome { true } else { false } }.count }
    /// Cards already held in full, the user's own card, and cards lost to a problem.
    public var skipped: Int {
        cards.filter { if case .imported? = $0.outcome { false } else if case .merged? = $0.outcome { false } else { true } }.count
            + problems.filter(\.skipsCard).count
    }
    /// Files nothing was taken from (unreadable, or not a vCard), in the order given, each once.
    public var filesLeftOut: [String] {
        problems.filter(\.failsFile).map(\.file).reduce(into: []) { names, f in if !names.contains(f) { names.append(f) } }
    }
}

/// Importing vCard files as unsigned contacts.
public enum ContactImport {
    /// Largest file read, in bytes.
    public static let maximumFileBytes = 64 << 20

    /// The store key of an unsigned card (see `UnsignedCard`): a digest of the card itself (its
    /// fields, the properties kept beside them, its UID and claimed DID; not its `REV`), so the
    /// same card imported again is found, and two different cards never share a key.
    public static func key(for c: ImportedContact) -> String {
        let basis = [FieldsColumn.encode(c.fields), c.extras.json ?? "", c.uid ?? "", c.did ?? ""].joined(separator: "\n")
        return "unsigned:card:" + Hex.encode(SHA256.hash(Array(basis.utf8)).prefix(16))
    }

    /// The key versions before this one stored a card under: a digest of its name, first email
    /// and first phone (or its claimed DID), which cards of different people shared.
    public static func formerKey(for c: ImportedContact) -> String {
        if let did = c.did { return "unsigned:" + did }
        let basis = [c.name ?? "", c.fields[.email]?.first ?? "", c.fields[.phone]?.first ?? ""].joined(separator: "\n")
        return "unsigned:" + Hex.encode(SHA256.hash(Array(basis.lowercased().utf8)).prefix(16))
    }

    /// The card to store for `c`.
    public static func unsigned(_ c: ImportedContact, raw: [UInt8]? = nil) -> UnsignedCard {
        UnsignedCard(c, key: key(for: c), formerKey: formerKey(for: c), raw: raw)
    }

    /// Reads (with `read`, which takes "-" for standard input) and parses `files`, then stores
    /// every card in one transaction (none when `dryRun`). A file that cannot be read or parsed
    /// is a problem, never the end of the import.
    public static func run(files: [String], merge: Bool, dryRun: Bool, home: Home, now: Int64,
                           read: (_ path: String, _ limit: Int) throws(MeishiError) -> [UInt8]) throws(MeishiError) -> ImportReport {
        var report = ImportReport()
        var found: [(file: String, line: Int, contact: ImportedContact)] = []
        for file in files {
            let bytes: [UInt8]
            do throws(MeishiError) {
                bytes = try read(file, maximumFileBytes)
                guard bytes.count <= maximumFileBytes else { throw MeishiError.fileTooLarge(path: displayName(file), limit: maximumFileBytes) }
            } catch {
                report.problems.append(ImportProblem(file: file, line: 0, error: error, skipsCard: false, failsFile: true))
                continue
            }
            let (contacts, problems) = VCard.read(bytes)
            for p in problems {
                report.problems.append(ImportProblem(file: file, line: p.line, error: .vcard(path: displayName(file), p),
                                                    skipsCard: p.skipsCard && p.reason != .noCard, failsFile: p.reason == .noCard))
            }
            for (line, c) in contacts { found.append((displayName(file), line, c)) }
        }
        let me = try? IdentityStore(home: home).loadPublic().did
        func isMine(_ c: ImportedContact) -> Bool { c.did != nil && c.did == me }
        let others = found.filter { !isMine($0.contact) }
        guard !found.isEmpty else { return report }
        var outcomes: [ImportOutcome] = []
        if !others.isEmpty {
            let store = try ContactsService(home: home).open()
            let source: ContactSource = files == ["-"] ? .stdin : .vcard
            do {
                outcomes = try store.importUnsigned(others.map { unsigned($0.contact) }, merge: merge,
                                                    source: source, seen: now, dryRun: dryRun)
            } catch { throw .store(error) }
        }
        var next = outcomes.makeIterator()
        for f in found {
            report.cards.append(ImportedCard(file: f.file, line: f.line, contact: f.contact, outcome: isMine(f.contact) ? nil : next.next()))
        }
        return report
    }

    static func displayName(_ file: String) -> String { file == "-" ? "<stdin>" : file }
}
