import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsImport: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import vCard files (2.1, 3.0, 4.0) as 'unsigned' contacts.",
        discussion: """
            Reads every card in each file, whatever the address book that wrote it (folded lines, \
            quoted-printable, CHARSET=, Shift_JIS or Latin-1 files, groups; photos are skipped). A card \
            merges into an unsigned contact of the same person only: the same name (compared as the \
            impersonation check compares names) and a shared email or phone, or the same name and \
            UID; it adds only what is missing, a second title or note too (--no-merge keeps every card \
            apart; 'meishi contacts split' undoes a merge). The same card imported again is unchanged: \
            a card is known by a digest of its values, kept properties, UID and claimed DID (not REV), \
            and meishi's own export by its UID. A card sharing an email or phone with a contact of \
            another name is kept apart, and the import says so. It merges into a verified contact only \
            when it carries that contact's DID in X-MEISHI-DID and the same name, and then only as \
            unsigned information; under another name it is kept apart, with a warning. A card matching \
            a verified contact's name, email or phone under another or no DID is kept apart and flagged \
            as a possible impersonation. Problems are reported as FILE:LINE and the rest of the file \
            still imports; exit 65 when any card was lost to one.

            Examples:
              meishi contacts import --dry-run phone-export.vcf
              meishi contacts import ~/.contacts/*.vcf
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("vCard files, or - for standard input.", valueName: "file"), completion: .file())
    var files: [String]

    @Flag(help: "Show what would be imported, merged or skipped, and why; store nothing.")
    var dryRun = false

    @Flag(help: "Never merge into a contact of the same name that shares an email or phone.")
    var noMerge = false

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws { try validateInputFiles(files, kind: "vCard") }

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        let report = try ContactImport.run(files: files, merge: !noMerge, dryRun: dryRun, home: session.home, now: ctx.unixNow,
                                           read: ctx.read)
        let out = ctx.out
        var shown: [String: Int] = [:]
        for p in report.problems {
            shown[p.file, default: 0] += 1
            guard shown[p.file]! <= Self.problemsShownPerFile else { continue }
            let failure = MeishiFailure(p.error)
            if p.isError { out.report(failure) } else { out.warn(failure.message) }
        }
        for (file, n) in shown.sorted(by: { $0.key < $1.key }) where n > Self.problemsShownPerFile {
            out.warn("\(file): \(n - Self.problemsShownPerFile) more problems not shown")
        }
        let would = dryRun ? "would be " : ""
        var cards: [JSONValue] = []
        for card in report.cards {
            // A nameless card is "(no name)", as list and show say, with its first email or phone.
            let who = CardRendering.name(card.contact.name)
                + (card.contact.name != nil ? "" : [FieldName.email, .phone].lazy.compactMap { card.contact.fields[$0]?.first }.first
                    .map { " <" + Console.safe($0) + ">" } ?? "")
            var obj: [String: JSONValue] = ["file": .string(card.file), "line": .number(Double(card.line))]
            guard let outcome = card.outcome else {
                obj["result"] = .string("skipped")
                obj["reason"] = .string("your own card")
                cards.append(.object(obj))
                if !json { out.line("skipped \(who): your own card (\(card.file):\(card.line))") }
                continue
            }
            obj["result"] = .string(outcome.name)
            obj["contact"] = CardRendering.json(outcome.contact)
            let c = outcome.contact
            if case .imported(_, let conflicts, let sharing) = outcome, c.id != nil {
                // A value shared with an unsigned contact of another name is said once, as sharing;
                // the DID of a verified contact under another name, once, as that.
                let shared = Set(sharing.map(\.contactID))
                let claimed = conflicts.first { $0.trust > .unsigned && $0.did == card.contact.did }
                if let v = claimed {
                    out.warn("\(who) carries the DID of #\(v.id ?? 0) \(CardRendering.name(v.name)) (\(v.trust.rawValue)) under another "
                             + "name: kept apart as #\(c.id ?? 0), nothing added to #\(v.id ?? 0)")
                    obj["claimsDIDOf"] = .number(Double(v.id ?? 0))
                }
                out.warnConflicts(c, who: who, conflicts.filter { $0.id != claimed?.id && ($0.trust > .unsigned || !shared.contains($0.id ?? 0)) },
                                  sharing: "name, email or phone")
                if !sharing.isEmpty { obj["sharesWith"] = .array(sharing.map(Self.json)) }
            }
            cards.append(.object(obj))
            guard !json else { continue }
            switch outcome {
            case .imported(_, _, let sharing):
                out.line("\(dryRun ? "would import" : "imported") \(who) as #\(c.id ?? 0) (unsigned)" + Self.sharingText(sharing))
            case .merged(_, let added):
                let what = added.keys.sorted().map { "\($0) +\(added[$0]!.count)" }.joined(separator: ", ")
                let into = c.trust > .unsigned ? " as unsigned information" : ""
                let why = c.trust > .unsigned ? "" : ": the same name and a shared email or phone"
                out.line("\(dryRun ? "would merge" : "merged") \(who) into #\(c.id ?? 0) \(Console.safe(c.name ?? ""))\(into)"
                         + (what.isEmpty ? " (other properties)" : " (\(what))") + why)
            case .unchanged:
                out.line("skipped \(who): #\(c.id ?? 0) already holds everything")
            }
        }
        // Trial 7, F11: a directory's `*` with one file that is no vCard exits 65, and the summary
        // said so only through the error lines above it.
        let leftOut = report.filesLeftOut
        let summary = "\(report.imported) \(would)imported, \(report.merged) \(would)merged, \(report.skipped) skipped"
            + (leftOut.isEmpty ? "" : "; \(leftOut.count) file\(leftOut.count == 1 ? "" : "s") left out: " + leftOut.map(Console.safe).joined(separator: ", "))
        if json {
            out.json(.object([
                "cards": .array(cards),
                "problems": .array(report.problems.map { .object(["file": .string($0.file), "line": .number(Double($0.line)),
                                                                  "message": .string(MeishiFailure($0.error).message)]) }),
                "imported": .number(Double(report.imported)), "merged": .number(Double(report.merged)),
                "skipped": .number(Double(report.skipped)), "dryRun": .bool(dryRun), "filesLeftOut": .array(leftOut.map(JSONValue.string)),
            ]))
        } else {
            out.line(summary + (dryRun ? " (dry run: nothing stored)" : ""))
        }
        if let worst = report.problems.filter(\.isError).map({ MeishiFailure($0.error).status.rawValue }).max() { throw ExitCode(worst) }
    }

    /// ": kept apart: shares phone +1 555 0100 with #1 Alice Smith", or "" when it shares nothing.
    static func sharingText(_ sharing: [SharedValue]) -> String {
        guard !sharing.isEmpty else { return "" }
        return ": kept apart (another name): shares " + sharing.map {
            "\($0.field.rawValue) \(Console.safe($0.value)) with #\($0.contactID) \(CardRendering.name($0.contactName))"
        }.joined(separator: ", ")
    }

    static func json(_ s: SharedValue) -> JSONValue {
        var o: [String: JSONValue] = ["field": .string(s.field.rawValue), "value": .string(s.value), "id": .number(Double(s.contactID))]
        if let n = s.contactName { o["name"] = .string(n) }
        return .object(o)
    }

    /// A broken file should not flood the terminal.
    static let problemsShownPerFile = 20
}
