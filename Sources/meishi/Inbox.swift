import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit

struct Inbox: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "inbox",
        abstract: "Read the notes your contacts sent you.",
        discussion: """
            Shows unexpired messages with their sender (as stored in your contacts), trust and age, and \
            marks them read; --all shows those read before too. A message sent with --once is deleted \
            once shown (--json counts as shown). Expired messages are deleted whenever meishi opens its \
            store, with SQLite secure_delete on and the write-ahead log checkpointed and truncated, so \
            their bytes are left in no file of the home; --purge does it now.

            Examples:
              meishi inbox
              meishi inbox --all --json
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Include messages already read.")
    var all = false

    @Flag(help: "Delete expired messages now and print how many.")
    var purge = false

    @Flag(help: "Print the messages as JSON.")
    var json = false

    func validate() throws {
        if purge && all { throw ValidationError("--purge deletes expired messages; it does not go with --all") }
    }

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        let service = MessageService(home: session.home, clock: ctx.unixClock)
        let out = ctx.out
        if purge {
            let n = try service.purge()
            if json { out.json(.object(["purged": .number(Double(n))])) } else { out.line("purged \(n) expired message\(n == 1 ? "" : "s")") }
            return
        }
        let identity = try session.loadIdentity()
        let messages = try service.inbox(identity: identity, includeShown: all)
        let now = ctx.unixNow
        if json {
            out.json(.object(["messages": .array(messages.map { m in
                .object([
                    "id": .number(Double(m.id)), "from": .string(m.senderDID),
                    "name": m.sender?.name.map(JSONValue.string) ?? .null,
                    "trust": m.sender.map { .string($0.trust.rawValue) } ?? .null,
                    "contact": m.sender.map { .number(Double($0.id ?? 0)) } ?? .null,
                    "possibleImpersonationOf": m.sender.map { c in .array(c.earlierLookAlikes.map { .number(Double($0)) }) }
                        ?? .null,
                    "created": .string(CardRendering.date(m.created)), "received": .string(CardRendering.date(m.received)),
                    "expires": .string(CardRendering.date(m.expires)), "once": .bool(m.once), "read": .bool(m.shownBefore),
                    // Shown now and sent --once: this listing was its only showing.
                    "deleted": .bool(m.once && m.text != nil),
                    "text": m.text.map(JSONValue.string) ?? .null,
                ])
            })]))
            return
        }
        guard !messages.isEmpty else {
            out.note(all ? "no messages" : "no new messages")
            return
        }
        for m in messages {
            let who = m.sender.map(CardRendering.who) ?? "\(Console.safe(m.senderDID)) (no longer a contact)"
            var head = "#\(m.id) from \(who), sent \(CardRendering.age(now - m.created)), expires in \(Self.span(m.expires - now))"
            if m.once { head += m.text != nil ? ", shown once: now deleted" : ", shown once" }
            if m.shownBefore { head += ", read" }
            let body = m.text.map { t in t.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + Console.safe(String($0)) } }
                ?? ["  (cannot be opened: the sender's card changed or was deleted)"]
            out.line(([head] + body).joined(separator: "\n"))
        }
    }

    /// "40 s", "12 min", "23 h", "6 days".
    static func span(_ seconds: Int64) -> String {
        if seconds < 90 { return "\(seconds) s" }
        if seconds < 5400 { return "\(seconds / 60) min" }
        if seconds < 129_600 { return "\(seconds / 3600) h" }
        return "\(seconds / 86400) days"
    }
}
