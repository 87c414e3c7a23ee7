import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

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
        // On a narrow terminal the names give way.
        if ctx.terminal.standardOutputIsTerminal, let width = ctx.terminal.width {
            table = DisplayWidth.fitting(table, width: width, shrinking: 1)
        }
        for line in DisplayWidth.table(table) { ctx.out.line(line) }
        if rows.contains(where: { $0.shared == nil }) { ctx.out.note(FriendsWording.neverComparedLegend) }
        if rows.contains(where: { ContactsList.isNewcomer($0.contact) }) { ctx.out.note(MeishiFailure.flaggedLegend) }
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

    @Argument(help: ArgumentHelp("Contact id, DID or unique DID prefix, or unique name match.", valueName: "ref"),
              completion: .custom(ContactCompletion.refs))
    var ref: String

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let (contact, found) = try global.session(ctx).contacts.commonFriends(of: ref)
        let seenSince = found.map { contact.lastSeen > $0.at } ?? false
        if json {
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
