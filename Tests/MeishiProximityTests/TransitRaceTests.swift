import Foundation
import MeishiCard
import Testing
@testable import MeishiProximity

#if canImport(Glibc)
import Glibc
#endif

/// Transit v2's race at the dialer (docs/PROTOCOL.md §5.8) against a scripted other side on
/// loopback: its direct connection to our listener and its end of the transit relay (a script
/// that answers `ok` as magic-wormhole's relay does and passes on what the other side says), so
/// the test decides which connection opens and which finishes its role lines first.
@Suite struct TransitRaceTests {
    static let token = "8208458b4eca08b4b338339c93be9f5e53674b205636967dd7b1ff4277555b7f"
    static let dialerLine = "meishi-transit-v2 dialer \(token)\n"
    static let listenerLine = "meishi-transit-v2 listener \(token)\n"

    /// This side met the other on the mailbox (the vector's sides and nonces: this side sorts
    /// first, so it dials); the other offered no hints, so every direct connection is its.
    static func mailbox() throws -> MailboxSession {
        var s = MailboxSession(nameplate: 7, side: [1, 1, 1, 1, 1, 1, 1, 1], nonce: [UInt8](repeating: 0x11, count: 32), hints: [])
        _ = try s.receive(Array(#"{"type":"claimed","mailbox":"mb1"}"#.utf8))
        let hints = Hex.encode(MailboxSession.hintsBody([]))
        _ = try s.receive(Array(#"{"type":"message","side":"0202020202020202","phase":"meishi-hints-v1","body":"\#(hints)"}"#.utf8))
        let met = try s.receive(Array(#"{"type":"message","side":"0202020202020202","phase":"meishi-transit-v1","body":"\#(String(repeating: "22", count: 32))"}"#.utf8))
        guard case .met(token, true)? = met.last else { throw CocoaError(.featureUnsupported) }
        return s
    }

    /// One line from a blocking socket (10 s of silence or the end give what came so far).
    static func line(_ fd: Int32) -> String {
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var bytes: [UInt8] = []
        var b: UInt8 = 0
        while bytes.last != UInt8(ascii: "\n"), read(fd, &b, 1) == 1 { bytes.append(b) }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func send(_ fd: Int32, _ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// The race as the dialer runs it, with our listener up and the relay at `relayPort`; `held`
    /// hears each time the relay's connection is held for a direct one, and ends with the race.
    struct Dialer {
        let race: TransitRace
        let directPort: Int
        let winner: Task<TransitRace.Entry, any Error>
        let held: AsyncStream<Void>

        init(relayPort: Int, directGrace: Double) async throws {
            let (held, heard) = AsyncStream.makeStream(of: Void.self)
            race = TransitRace(relayHeadStart: 0, directGrace: directGrace, onHold: { heard.yield() })
            _ = await Relay.listenDirect(race)
            directPort = try #require(race.listeningPort)
            let servers = RelayServers(mailbox: try #require(MailboxURL("ws://127.0.0.1:9/v1")),
                                       transit: try #require(TransitAddress("tcp:127.0.0.1:\(relayPort)")))
            let (race, mailbox, participant) = (race, try TransitRaceTests.mailbox(), try RedTeamTests.participant("7-tulip-anchor"))
            winner = Task {
                try await Relay.race(race, mailbox: mailbox, token: TransitRaceTests.token, dialer: true, servers: servers,
                                     until: ExchangeTransport.now() + 120, participant: participant)
            }
            self.held = held
            let winner = winner
            Task {
                _ = await winner.result
                heard.finish()
            }
        }

        /// Whether the relay's connection was held (false: the race ended without holding it).
        func wasHeld() async -> Bool {
            for await _ in held { return true }
            return false
        }

        /// The connection that carried the session; it is closed.
        func chosen() async throws -> RelayPath {
            let entry = try await winner.value
            try? await entry.connection.executeThenClose { _, _ in }
            return entry.path
        }
    }

    /// The relay dialled at once (nothing direct is open), then the other side's direct connection
    /// opens; the relay pairs us and its role line checks first. Returns both sockets of the other
    /// side: the relay's, the direct one.
    static func relayPairsWhileDirectIsOpen(_ relayFD: Int32, _ dialer: Dialer) async -> (relay: Int32, direct: Int32, request: String, roles: [String]) {
        let port = dialer.directPort
        return await RedTeamTests.onThread {
            let relay = accept(relayFD, nil, nil)
            let request = line(relay)
            let direct = Loopback.connect(to: port)
            // The dialer speaks on the direct connection once it took it in: it is open.
            let directRole = line(direct)
            send(relay, "ok\n" + listenerLine)
            return (relay, direct, request, [directRole, line(relay)])
        }
    }

    /// A LAN where the relay pairs us a moment before the direct connection has finished: the
    /// dialer holds the relay's connection, and the direct one carries the session once its
    /// role line checks (the relay's gets no `go` and is closed).
    @Test func aRelayThatPairsFirstWaitsForAnOpenDirectConnection() async throws {
        let (relayFD, relayPort) = Loopback.listen()
        defer { close(relayFD) }
        let dialer = try await Dialer(relayPort: relayPort, directGrace: 600)
        let (relay, direct, request, roles) = await Self.relayPairsWhileDirectIsOpen(relayFD, dialer)
        defer { close(relay); close(direct) }
        #expect(request == "please relay \(Self.token) for side 0101010101010101\n")
        #expect(roles == [Self.dialerLine, Self.dialerLine])
        #expect(await dialer.wasHeld(), "the dialer took the relay although a direct connection was open")
        let (go, relayRest) = await RedTeamTests.onThread { () -> (String, String) in
            Self.send(direct, Self.listenerLine)
            return (Self.line(direct), Self.line(relay))
        }
        #expect(go == "go\n")
        #expect(relayRest == "", "the held relay connection got '\(relayRest)'")
        #expect(try await dialer.chosen() == .direct)
    }

    /// The direct connection the relay was held for closes without finishing: the relay carries
    /// the session at once (not after the grace, 600 s here).
    @Test func aHeldRelayTakesTheSessionWhenTheDirectConnectionCloses() async throws {
        let (relayFD, relayPort) = Loopback.listen()
        defer { close(relayFD) }
        let dialer = try await Dialer(relayPort: relayPort, directGrace: 600)
        let (relay, direct, _, _) = await Self.relayPairsWhileDirectIsOpen(relayFD, dialer)
        defer { close(relay) }
        #expect(await dialer.wasHeld())
        let go = await RedTeamTests.onThread { () -> String in
            close(direct)
            return Self.line(relay)
        }
        #expect(go == "go\n")
        #expect(try await dialer.chosen() == .relay)
    }

    /// A direct connection that opens but never says its role line (another machine answering
    /// at that address) holds the relay back only for the grace.
    @Test func aDirectConnectionThatNeverFinishesIsWaitedForOnlyTheGrace() async throws {
        let (relayFD, relayPort) = Loopback.listen()
        defer { close(relayFD) }
        let dialer = try await Dialer(relayPort: relayPort, directGrace: 0.2)
        let (relay, direct, _, _) = await Self.relayPairsWhileDirectIsOpen(relayFD, dialer)
        defer { close(relay); close(direct) }
        #expect(await dialer.wasHeld())
        #expect(await RedTeamTests.onThread { Self.line(relay) } == "go\n")
        #expect(try await dialer.chosen() == .relay)
        // The direct connection is closed, without `go`.
        #expect(await RedTeamTests.onThread { Self.line(direct) } == "")
    }
}
