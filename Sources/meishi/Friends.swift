import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiProximity
import MeishiStore
import MeishiText

struct Friends: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "friends",
        abstract: "List contacts with how many friends each shares with you.",
        discussion: """
            Every 'meishi exchange' compares the two people's contacts privately (see --friends there) \
            and keeps, with the new contact, which of your contacts it also knows. A contact added by QR \
            or import was never compared. 'meishi friends common REF' lists the shared ones.

            Examples:
              meishi friends
              meishi friends common ken --json
            """,
        subcommands: [FriendsList.self, FriendsCommon.self], defaultSubcommand: FriendsList.self)
}

struct FriendsList: SynchronousCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List contacts with how many friends each shares with you.",
        discussion: """
            A contact added by QR or import was never compared: it says so rather than 0.

            Examples:
              meishi friends
              meishi friends list --json
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let rows = try global.session(ctx).contacts.commonFriendCounts()
        if json {
            ctx.out.json(.array(rows.map { r in
                .object(["id": .number(Double(r.contact.id ?? 0)), "name": r.contact.name.map(JSONValue.string) ?? .null,
                         "did": .string(r.contact.did), "compared": .bool(r.shared != nil),
                         "commonFriends": r.shared.map { .number(Double($0)) } ?? .null, "mode": r.mode.map(JSONValue.string) ?? .null,
                         "deletedSince": .number(Double(r.deletedSince)), "seenSinceComparison": .bool(r.seenSince)])
            }))
            return
        }
        guard !rows.isEmpty else { return ctx.out.note("no contacts yet") }
        var table = rows.map { r in
            ["#\(r.contact.id ?? 0)" + (ContactsList.isNewcomer(r.contact) ? "!" : ""), CardRendering.name(r.contact.name),
             r.shared.map { FriendsWording.count($0, mode: r.mode, deletedSince: r.deletedSince, seenSince: r.seenSince) }
                 ?? FriendsWording.neverComparedShort]
        }
        // On a narrow terminal the names give way, and the comparison column wraps at spaces.
        let width = ctx.terminal.standardOutputIsTerminal ? ctx.terminal.width : nil
        if let width { table = DisplayWidth.fitting(table, width: width, shrinking: 1) }
        for (line, row) in zip(DisplayWidth.table(table), table) { ctx.out.line(Self.wrappingLastCell(line, row.last ?? "", to: width)) }
        if rows.contains(where: { $0.shared == nil }) { ctx.out.note(FriendsWording.neverComparedLegend) }
        if rows.contains(where: { ContactsList.isNewcomer($0.contact) }) { ctx.out.note(ContactsList.flaggedLegend) }
    }
}

extension FriendsList {
    /// `line` (a table row ending with `last`) broken at the spaces of `last` when it is wider
    /// than `width`, continuation lines starting under that column: at 40 columns the terminal
    /// cut "(ecdh; may be out of date)" inside a word (a tester's finding).
    static func wrappingLastCell(_ line: String, _ last: String, to width: Int?) -> String {
        guard let width, DisplayWidth.of(line) > width, line.hasSuffix(last) else { return line }
        let start = DisplayWidth.of(line) - DisplayWidth.of(last)
        let parts = DisplayWidth.wrapped(last, to: max(12, width - start), indent: 0)
        return String(line.dropLast(last.count)) + parts.joined(separator: "\n" + String(repeating: " ", count: start))
    }
}

struct FriendsCommon: SynchronousCommand {
    static let configuration = CommandConfiguration(commandName: "common", abstract: "List the friends one contact shares with you.",
        discussion: """
            Your contacts that the last exchange with REF found it also knows, in your names for them, \
            with the mode and the time of that comparison.

            Examples:
              meishi friends common ken
              meishi friends common 4 --json
            """)

    @OptionGroup var global: GlobalOptions

    @OptionGroup var options: OneContactOptions

    func run(_ ctx: Context) throws {
        let (contact, found) = try global.session(ctx).contacts.commonFriends(of: options.ref)
        let seenSince = found.map { contact.lastSeen > $0.at } ?? false
        if options.json {
            // Every key is present either way; a contact never compared has nulls.
            ctx.out.json(.object([
                "contact": .object(["id": .number(Double(contact.id ?? 0)), "name": contact.name.map(JSONValue.string) ?? .null,
                                    "did": .string(contact.did)]),
                "compared": .bool(found != nil),
                "mode": found.map { .string($0.mode) } ?? .null,
                "at": found.map { .string(CardRendering.date($0.at)) } ?? .null,
                "peerSetSize": found.map { .number(Double($0.peerSetSize)) } ?? .null,
                "friends": found.map { .array($0.friends.map(FriendsWording.json)) } ?? .null,
                "deletedSince": found.map { .number(Double($0.deletedSince)) } ?? .null,
                "lastSeen": .string(CardRendering.date(contact.lastSeen)),
                "seenSinceComparison": .bool(seenSince),
            ]))
            return
        }
        guard let found else {
            return ctx.out.line("\(CardRendering.name(contact.name)): \(FriendsWording.neverCompared) (added by \(contact.source.rawValue))")
        }
        ctx.out.line(FriendsWording.list(found.friends))
        ctx.out.note("compared with \(CardRendering.name(contact.name)) by \(found.mode) on \(CardRendering.date(found.at))")
        if found.deletedSince > 0 { ctx.out.note(FriendsWording.deletedSince(found.deletedSince)) }
        if seenSince { ctx.out.note(FriendsWording.seenSince(contact.lastSeen)) }
    }
}

/// The words of the common-friends phase (`meishi exchange`) and of `meishi friends`.
enum FriendsWording {
    static let neverCompared = "never compared: no exchange with it ran a common-friends comparison"
    static let neverComparedShort = "never compared"
    static let neverComparedLegend = "never compared: added by QR, file or import, or no exchange with it compared contacts"

    /// "Common friends (2): Cleo Park, Dev Rao", or "Common friends: none", in my names for them.
    static func list(_ friends: [Contact]) -> String {
        guard !friends.isEmpty else { return "Common friends: none" }
        // Ids where two friends share a name (or one is a flagged look-alike), so they can be told apart.
        let names = friends.map { CardRendering.name($0.name) }
        return "Common friends (\(friends.count)): " + zip(friends, names).map { c, n in
            names.filter { $0 == n }.count > 1 || !CardRendering.lookAlikeMark(c).isEmpty
                ? "\(n) (#\(c.id ?? 0)\(CardRendering.lookAlikeMark(c)))" : n
        }.joined(separator: ", ")
    }

    static func json(_ c: Contact) -> JSONValue {
        .object(["id": .number(Double(c.id ?? 0)), "name": c.name.map(JSONValue.string) ?? .null, "did": .string(c.did)])
    }

    /// "2 common friends (ecdh; 1 deleted since; may be out of date)", a line of `meishi friends`.
    static func count(_ n: Int, mode: String?, deletedSince: Int, seenSince: Bool) -> String {
        "\(n) common friend\(n == 1 ? "" : "s") (\(mode ?? "?")" + (deletedSince > 0 ? "; \(deletedSince) deleted since" : "")
            + (seenSince ? "; may be out of date" : "") + ")"
    }

    /// Found by the comparison, deleted since: re-adding does not bring them back.
    static func deletedSince(_ n: Int) -> String {
        "\(n) more \(n == 1 ? "was" : "were") found then but deleted from your contacts since "
            + "(re-adding does not bring \(n == 1 ? "it" : "them") back: exchange again to compare anew)"
    }

    /// The last exchange with the contact skipped the comparison: the list is older than it.
    static func seenSince(_ lastSeen: Int64) -> String {
        "seen again on \(CardRendering.date(lastSeen)) without a comparison: this list may be out of date"
    }

    /// Why the comparison did not run; the other side says the mirror image.
    static func skipped(_ why: CommonFriendsSkip) -> String {
        switch why {
        case .offHere: "not compared: --friends off"
        case .offByPeer: "not compared: the other side uses --friends off"
        case .unauthenticatedHere:
            "not compared: nobody compared the code here (--yes); compare the code or use --code to compare contacts"
        case .unauthenticatedByPeer:
            "not compared: nobody compared the code on the other side (--yes there); compare it or use --code"
        case .ourSetTooLarge(let n, let limit):
            "not compared: your set of \(n) (contacts, and their emails and phones with --match) exceeds the other side's --max-set \(limit)"
        case .peerSetTooLarge(let n, let limit):
            "not compared: the other side's set of \(n) (contacts, and their emails and phones with --match) exceeds --max-set \(limit)"
        }
    }

    static func failed(_ e: CommonFriendsError) -> String {
        "not compared: \(ExchangeWording.describe(e)); the card exchange itself completed"
    }
}
