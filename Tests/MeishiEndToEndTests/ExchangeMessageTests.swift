import Foundation
import Testing

/// `exchange --message`: a note each way after the cards, stored sealed and read with `inbox`;
/// never sent, and refused when received, in an exchange nobody authenticated (issue 10).
@Suite(.serialized) struct ExchangeMessageTests {
    static func messages(_ json: [String: Any]) -> [String: Any] { json["messages"] as? [String: Any] ?? [:] }

    static func inboxTexts(_ cli: CLI) throws -> [String] {
        let r = try cli("inbox", "--json")
        #expect(r.status == 0, "\(r.stderr)")
        return (r.json["messages"] as? [[String: Any]] ?? []).compactMap { $0["text"] as? String }
    }

    @Test func aNoteEachWayInACodeExchange() throws {
        let w = try CommonFriendsEndToEndTests.World.make()
        let r = try CommonFriendsEndToEndTests.exchange(w, listener: ["--message", "great talk - slides at https://example.org/s"],
                                                       dialer: ["--message", "see you \u{1B}[31mat the demo", "--once"])
        #expect(Self.messages(r.listener)["sent"] as? String == "stored")
        #expect(Self.messages(r.listener)["received"] as? String == "stored")
        #expect(Self.messages(r.dialer)["sent"] as? String == "stored")
        #expect(Self.messages(r.dialer)["received"] as? String == "stored")
        #expect(try Self.inboxTexts(w.ken) == ["great talk - slides at https://example.org/s"])
        // Peer text is escaped in the inbox too; --once: gone after it was shown once.
        let shown = try w.mei("inbox")
        #expect(shown.stdout.contains("see you \\u{1B}[31mat the demo"), "\(shown.stdout)")
        #expect(!shown.stdout.contains("\u{1B}"))
        #expect(try Self.inboxTexts(w.mei).isEmpty)
        // The exchange still stored each card once.
        let listed = try w.mei("contacts", "list", "--json").json["contacts"] as? [[String: Any]] ?? []
        #expect(listed.filter { $0["name"] as? String == "Ken Sato" }.count == 1)
    }

    @Test func nothingIsSentWithoutAuthentication() throws {
        let w = try CommonFriendsEndToEndTests.World.make()
        let r = try CommonFriendsEndToEndTests.exchange(w, listener: ["--message", "hello"], dialer: ["--message", "hi"], code: false)
        #expect(Self.messages(r.listener)["sent"] as? String == "withheld")
        #expect(Self.messages(r.dialer)["sent"] as? String == "withheld")
        #expect(Self.messages(r.listener)["received"] is NSNull)
        #expect(try Self.inboxTexts(w.mei).isEmpty && (try Self.inboxTexts(w.ken)).isEmpty)
    }

    @Test func aNoteThatCannotBeSentFailsBeforeTheNetwork() throws {
        let mei = try CLI.withCard()
        let long = String(repeating: "x", count: 5000)
        let r = try mei("exchange", "--peer", "127.0.0.1:1", "--code", "7-tulip-anchor", "--message", long)
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderr.contains("4096-byte limit"))
        #expect(try mei("exchange", "--yes", "--once").status == 64)
        #expect(try mei("exchange", "--message", "-").status == 64)
    }
}
