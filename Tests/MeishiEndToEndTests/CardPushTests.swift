import Foundation
import Testing
import MeishiCard
import MeishiCrypto
import MeishiKit
import MeishiProximity
import MeishiStore

#if canImport(Glibc)
import Glibc
#endif

/// Issue 26: `card push` over the notes channel, and what `listen` accepts.
@Suite struct CardPushTests {
    /// Mei's card with `title`, signed at `level` and time `at`, as `card push` sends it.
    static func meisCard(_ mei: MessagePerson, title: String, at: Int64) throws -> [UInt8] {
        var card = Card()
        try card.set(.name, mei.name)
        try card.set(.title, title)
        try card.add(.phone, "+81 3 1234 5678", level: .public)
        return try CardService.sign(card, level: .public, only: nil, identity: mei.identity, now: at).bytes
    }

    /// The listener (in-process, loopback) stores a newer card of the contact the handshake
    /// authenticated, in its history; refuses the same push again, an older card, another DID's
    /// card and one that does not verify, each with its reason and nothing stored.
    @Test func aPushedCardIsCheckedAndStoredOnce() async throws {
        let mei = try MessagePerson("Mei"), ken = try MessagePerson("Ken"), eve = try MessagePerson("Eve")
        try ken.knows(mei)
        try ken.knows(eve)
        let now: Int64 = 1_800_000_300
        let listener = try await RunningListener.start(ken, now: now)
        let keys = try PairKeys(mine: mei.identity.boxKey, theirs: ken.identity.boxKey.publicKey, sending: true)
        func push(_ bytes: [UInt8]) async throws -> CardPushVerdict {
            try await MessageTransport.push(card: bytes, to: .peer(host: "127.0.0.1", port: listener.port), keys: keys,
                                            staticKey: mei.identity.boxKey, clock: { now }, seconds: 30, steps: { _ in }).0
        }
        let newer = try Self.meisCard(mei, title: "Lead", at: 1_800_000_200)
        // Pushed by hand, recorded, and replayed byte for byte on a new connection: no answer at all.
        let port = listener.port
        let (answer, replayAnswered) = try await offPool {
            var recorded = try HandshakeWire(from: mei, to: ken, port: port, now: now)
            try recorded.handshake()
            let sealed = [MessageFrame.sealed] + recorded.send!.seal([MessageFrame.card] + newer)
            recorded.wire.write(sealed)
            let answer = try recorded.readSealed()
            close(recorded.wire.fd)
            var replay = Wire(fd: Loopback.connect(to: port))
            defer { close(replay.fd) }
            replay.write(recorded.hello)
            replay.write(sealed)
            return (answer, (try? replay.read()) != nil)
        }
        #expect(answer == [MessageFrame.cardAck] + (0..<8).map { UInt8(truncatingIfNeeded: UInt64(1_800_000_200) >> (56 - 8 * UInt64($0))) })
        #expect(!replayAnswered, "a replayed push")
        #expect(try await push(newer) == .refused(.notNewer), "the same card pushed again")
        #expect(try await push(try Self.meisCard(mei, title: "Intern", at: 1_800_000_100)) == .refused(.notNewer), "an older card")
        #expect(try await push(try Self.meisCard(eve, title: "Spy", at: 1_800_000_250)) == .refused(.otherDID), "Eve's card from Mei")
        var forged = newer
        forged[forged.firstIndex(of: UInt8(ascii: "L"))!] = UInt8(ascii: "K")
        #expect(try await push(forged) == .refused(.invalidCard), "a card whose signature fails")
        let outcome = try await listener.stop()
        #expect(outcome.cards == 1 && outcome.refused == 4)
        #expect(listener.log.contains("a card: the card is another person's"), "\(listener.log.all)")
        #expect(listener.log.contains("replayed handshake"), "\(listener.log.all)")
        let store = try ken.store(now: now)
        let stored = try #require(try store.contact(did: mei.identity.did))
        #expect(stored.fields[.title] == ["Lead"] && stored.source == .push && stored.trust == .signed)
        #expect(try store.history(of: stored.id!).first?.cardTimestamp == 1_800_000_200)
        #expect(try store.contact(did: eve.identity.did)?.fields[.title] == nil)
    }
}

extension CardPushTests {
    /// A card edited and pushed again within the second of the last push is still newer there:
    /// it is signed a second after the last one given (both pushes stored, none "not newer").
    /// With the push signed at the clock's second, the second push was refused.
    @Test func twoPushesWithinOneSecondAreBothStored() async throws {
        let mei = try MessagePerson("Mei"), ken = try MessagePerson("Ken")
        try ken.knows(mei)
        try mei.knows(ken)
        let now: Int64 = 1_800_000_300
        let listener = try await RunningListener.start(ken, now: now)
        let store = try mei.store(now: now)
        var card = Card()
        try card.set(.name, "Mei")
        var stamps: [Int64] = []
        for title in ["Lead", "Head of Research"] {
            try card.set(.title, title)
            let targets = try CardPushService.targets(["Ken"], level: .public, fallback: .public, store: store)
            let results = try await CardPushService.push(card, to: targets, identity: mei.identity, store: store,
                                                         peer: ("127.0.0.1", listener.port), timeoutSeconds: 30, clock: { now },
                                                         steps: { _ in })
            guard case .delivered = try #require(results.first).outcome else {
                Issue.record("push of \(title): \(String(describing: results.first?.outcome))")
                continue
            }
            stamps.append(try #require(try ken.store(now: now).contact(did: mei.identity.did)).cardTimestamp)
        }
        let outcome = try await listener.stop()
        #expect(outcome.cards == 2 && outcome.refused == 0, "\(listener.log.all)")
        #expect(stamps == [now, now + 1])
        #expect(try ken.store(now: now).contact(did: mei.identity.did)?.fields[.title] == ["Head of Research"])
    }
}

/// Three hosts: Mei pushes her updated card; Ken listens, Ann does not. In the exchange's
/// namespace suite, so that the two never build namespaces at the same time.
extension NamespaceExchangeTests {
    @Test(.enabled(if: NamespaceExchangeTests.canRun, "skipped: needs root and iproute2 to create network namespaces (CI runs as root)"))
    func aPushReachesTheListenerAndTheAbsentGetItAtTheNextExchange() throws {
        let mei = try CLI.withCard()
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let ann = try CLI.withCard(name: "Ann Lee", email: "ann@example.org")
        // Mei meets both (loopback exchanges in this namespace): each gets her professional card.
        func meet(_ other: CLI) throws -> CLI.Result {
            let (listener, port, _, _) = try ExchangeCommandTests.startListener(other, ["--timeout", "60"])
            let dial = try mei.run(["exchange", "--peer", "127.0.0.1:\(port)", "--yes"])
            listener.waitUntilExit()
            #expect(dial.status == 0 && listener.terminationStatus == 0, "\(dial.stderr)")
            return dial
        }
        _ = try meet(ken)
        _ = try meet(ann)
        #expect(try mei("contacts", "note", "Ken", "owes me a coffee").status == 0)
        sleep(1)  // the pushed card must be signed a second later than the exchanged one
        #expect(try mei("card", "set", "title", "Lead").status == 0)
        #expect(try mei("card", "add", "phone", "+81 3 1234 5678").status == 0)

        let teardown = try NamespaceExchangeTests.hosts("mcp", 3)
        defer { teardown() }
        let kenHome = Home(path: ken.home), meiHome = Home(path: mei.home)
        let listening = try NamespaceExchangeTests.runMeishi("mcp2", kenHome, ["listen", "--for", "180"])
        // Generous times: the whole suite runs in parallel on a loaded machine.
        try #require(NamespaceExchangeTests.startedListening(listening).contains("listening for messages"))
        let pushing = try NamespaceExchangeTests.runMeishi("mcp1", meiHome, ["card", "push", "--json", "--timeout", "20"])
        let pushed = NamespaceExchangeTests.finishMeishi(pushing)
        kill(listening.processIdentifier, SIGINT)
        #expect(pushed.status == 0, "\(pushed.err)")
        let results = try #require((try JSONSerialization.jsonObject(with: Data(pushed.out.utf8)) as? [String: Any])?["results"] as? [[String: Any]])
        #expect(results.map { $0["name"] as? String } == ["Ann Lee", "Ken Sato"])
        #expect(results.map { $0["result"] as? String } == ["not reachable", "delivered"], "\(pushed.out)")
        #expect(results.map { $0["level"] as? String } == ["professional", "professional"])
        let k = NamespaceExchangeTests.finishMeishi(listening)
        #expect(k.status == 0, "\(k.err)")
        #expect(k.err.contains("Mei Tanaka (#1) updated their card: +title, +phone"), "\(k.err)")
        #expect(k.err.contains("1 newer card"), "\(k.err)")

        let changes = try #require(try ken("contacts", "changes", "--json").json["changes"] as? [[String: Any]])
        #expect(changes.count == 1 && changes.first?["source"] as? String == "push", "\(changes)")
        #expect(changes.first?["changes"] as? [String] == ["+title", "+phone"])
        #expect(try ken("contacts", "changes").stdout.contains("Mei Tanaka (#1, push) updated their card: +title, +phone"))
        let shown = try ken("contacts", "show", "Mei", "--json").stdout
        #expect(shown.contains("Lead") && !shown.contains("coffee"), "my note on Ken never travels: \(shown)")
        // First seen at the exchange: the push is the latest card's source, not the first sight's.
        let first = try ken("contacts", "show", "Mei", "--json").json
        #expect(first["firstSource"] as? String == "exchange" && first["source"] as? String == "push", "\(first)")
        #expect(!(try ann("contacts", "show", "Mei").stdout.contains("Lead")))

        // Ann gets it at the next exchange; a push to Ken, no longer listening, is not reachable (exit 75).
        _ = try meet(ann)
        #expect(try ann("contacts", "show", "Mei").stdout.contains("Lead"))
        let alone = try NamespaceExchangeTests.runMeishi("mcp1", meiHome, ["card", "push", "Ken", "--timeout", "2"])
        let r = NamespaceExchangeTests.finishMeishi(alone)
        #expect(r.status == 75 && r.out.contains("not reachable: Ken Sato (#1)"), "\(r.out) \(r.err)")
    }
}
