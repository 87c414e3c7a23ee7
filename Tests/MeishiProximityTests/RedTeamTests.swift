import Foundation
import Testing
import MeishiCard
import MeishiCrypto
import NIOConcurrencyHelpers
import NIOCore
@testable import MeishiProximity

#if canImport(Glibc)
import Glibc
#endif

/// Attacks by a peer on the same network against the guess budget and discovery (red-team read
/// of issue #8). Each test is an attack that must fail.
@Suite struct RedTeamTests {
    typealias S = ExchangeSessionTests

    static func participant(_ code: String, events: @escaping @Sendable (ExchangeEvent) -> Void = { _ in }) throws -> ExchangeParticipant {
        let mei = S.Person()
        return ExchangeParticipant(card: { (mei.card("Mei"), mei.key) }, verifier: S.verifier, code: try ExchangeCode(parsing: code),
                                   confirmCode: { _ in true }, events: events)
    }

    /// Runs `body` on its own thread (blocking socket calls stay off the cooperative pool).
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in Thread.detachNewThread { c.resume(returning: body()) } }
    }

    /// With a code, discovery serves and dials at the same time with one budget
    /// (`Rendezvous.withCandidates`). An attacker that is at once a candidate this side dials and a
    /// peer that dials this side holds two PAKE runs open and resolves both after the second try:
    /// before the fix both were counted only when they ended, so the run allowed 4 guesses.
    /// A guess is now taken from the budget before the frame that reveals it is sent.
    @Test func concurrentServeAndDialCannotOverdrawTheBudget() async throws {
        let victim = try Self.participant("7-secret-words")
        let budget = GuessBudget()
        for _ in 0..<2 { _ = budget.reserve(); budget.settle(completed: false) }  // two tries already used: one is left
        let server = try await ExchangeTransport.bind(host: "127.0.0.1", port: 0)
        let (attackerListener, attackerPort) = Loopback.listen()
        defer { close(attackerListener) }

        async let served: ExchangeFailure? = {
            do { _ = try await ExchangeTransport.serve(server, timeout: .seconds(20), stepTimeout: .seconds(10), participant: victim,
                                                       budget: budget, onlySessions: nil); return nil } catch { return error as? ExchangeFailure ?? .io(.listenerFailed(error: "\(error)")) }
        }()
        async let dialled: ExchangeFailure? = {
            do { _ = try await ExchangeTransport.dial(try! SocketAddress(ipAddress: "127.0.0.1", port: attackerPort), label: "attacker",
                                                      stepTimeout: .seconds(10), budget: budget, participant: victim); return nil } catch { return error as? ExchangeFailure ?? .io(.listenerFailed(error: "\(error)")) }
        }()

        let victimPort = server.port
        let guessesResolved = await Self.onThread { () -> Int in
            var resolved = 0
            // The victim dials us: take its PAKE HELLO, answer later.
            let accepted = accept(attackerListener, nil, nil)
            var dialIn = Wire(fd: accepted)
            let asListener = ExchangeSession(role: .listener, verifier: S.verifier, binding: .init(code: try! ExchangeCode(parsing: "7-guess-one")))
            guard let hello = try? dialIn.read(), let reply = try? asListener.receive(hello).send else { return -1 }
            // We dial the victim: PAKE HELLO, REPLY.
            var dialOut = Wire(fd: Loopback.connect(to: victimPort))
            let asDialer = ExchangeSession(role: .dialer, verifier: S.verifier, binding: .init(code: try! ExchangeCode(parsing: "7-guess-two")))
            dialOut.write(asDialer.start()!)
            guard let victimReply = try? dialOut.read(), let finish = try? asDialer.receive(victimReply).send else { return -2 }
            // Guess 1: our REPLY for "guess-one"; a FINISH back lets us test it (Ta).
            reply.forEach { dialIn.write($0) }
            if let ta = try? dialIn.read(), ta.first == 0x06 { resolved += 1 }
            // Guess 2: our FINISH for "guess-two"; MISMATCH or CONFIRM back says whether it was right.
            finish.forEach { dialOut.write($0) }
            if let answer = try? dialOut.read(), answer.first == 0x07 || answer.first == 0x08 { resolved += 1 }
            close(dialIn.fd); close(dialOut.fd)
            return resolved
        }
        let (s, d) = await (served, dialled)
        #expect(guessesResolved >= 0, "the script broke at step \(guessesResolved)")
        #expect(guessesResolved <= 1, "one try was left, but the attacker tested \(guessesResolved) codes")
        #expect(budget.spent <= GuessBudget.allowed)
        #expect([s, d].contains { if case .tooManyGuesses? = $0 { true } else { false } }, "\(String(describing: s)) \(String(describing: d))")
    }

    static func address(_ ip: String) -> SocketAddress { try! SocketAddress(ipAddress: ip, port: 47824) }

    /// The honest peer's IPv4 announcement was lost (Wi-Fi drops multicast) and only its IPv6 one
    /// arrived; an attacker replays it from its own IPv4 address. The replay must not become the
    /// address dialled: the peer stays at the first address heard.
    @Test func aReplayInTheOtherFamilyDoesNotRedirectTheDial() {
        let honest = Announcement(sessionID: SecureRandom.bytes(16), port: 47823, nameplate: 7)
        var table: [String: DiscoveredPeer] = [:]
        Discovery.record(honest, from: Self.address("fe80::2"), now: 1, in: &table)
        Discovery.record(honest, from: Self.address("10.0.0.66"), now: 1.1, in: &table)
        #expect(table.values.first?.host == "fe80::2", "the dial would go to the replayer at \(table.values.first?.host ?? "?")")
        // Heard first over IPv4, the peer is dialled there, as before.
        var table2: [String: DiscoveredPeer] = [:]
        Discovery.record(honest, from: Self.address("10.0.0.2"), now: 1, in: &table2)
        Discovery.record(honest, from: Self.address("fe80::2"), now: 1, in: &table2)
        #expect(table2.values.first?.host == "10.0.0.2")
    }

    /// One sender announcing 64 fresh session ids, and repeating them within the expiry, filled
    /// the bounded peer table: the honest peer that arrived next was never stored, so it was
    /// never chosen (with or without a code) and the victim could not pair at all. One source
    /// address may now hold only a few entries.
    @Test func oneSenderCannotFillThePeerTable() {
        var table: [String: DiscoveredPeer] = [:]
        let forged = (0..<Discovery.maximumPeers).map { _ in Announcement(sessionID: SecureRandom.bytes(16), port: 9, nameplate: 7) }
        for t in 0..<3 {
            for a in forged { Discovery.record(a, from: Self.address("10.0.0.66"), now: Double(t), in: &table) }
        }
        let honest = Announcement(sessionID: SecureRandom.bytes(16), port: 47823, nameplate: 7)
        Discovery.record(honest, from: Self.address("10.0.0.2"), now: 2.5, in: &table)
        #expect(table[Hex.encode(honest.sessionID)] != nil, "the honest peer was not stored")
        #expect(table.count <= Discovery.maximumPeers)
        #expect(table.values.filter { $0.host == "10.0.0.66" }.count <= Discovery.maximumPeersPerAddress)
    }

    /// Forged session ids spread over many addresses, each at its limit, filled the table (64
    /// ids from 16 addresses): the honest peer was never stored. A full table now gives way to an
    /// address holding at least two entries fewer than the address holding most.
    @Test func aFullTableGivesWayToAnAddressHoldingLess() {
        var table: [String: DiscoveredPeer] = [:]
        let perAddress = Discovery.maximumPeersPerAddress
        for t in 0..<3 {
            for n in 0..<Discovery.maximumPeers {
                let a = Announcement(sessionID: Array(repeating: UInt8(n % 256), count: 15) + [UInt8(n / 256)], port: 9, nameplate: 7)
                Discovery.record(a, from: Self.address("10.1.\(n / perAddress / 250).\(n / perAddress % 250)"), now: Double(t), in: &table)
            }
        }
        #expect(table.count == Discovery.maximumPeers)
        let honest = Announcement(sessionID: SecureRandom.bytes(16), port: 47823, nameplate: 7)
        Discovery.record(honest, from: Self.address("10.0.0.2"), now: 2.5, in: &table)
        #expect(table[Hex.encode(honest.sessionID)] != nil, "the honest peer was not stored")
        #expect(table.count == Discovery.maximumPeers)
        // The forger's address that gave way cannot take the place back from the honest peer.
        for t in 3..<5 {
            for n in 0..<Discovery.maximumPeers {
                let a = Announcement(sessionID: Array(repeating: UInt8(n % 256), count: 15) + [UInt8(n / 256)], port: 9, nameplate: 7)
                Discovery.record(a, from: Self.address("10.1.\(n / perAddress / 250).\(n / perAddress % 250)"), now: Double(t) * 0.5 + 1, in: &table)
            }
            Discovery.record(honest, from: Self.address("10.0.0.2"), now: Double(t) * 0.5 + 1, in: &table)
        }
        #expect(table[Hex.encode(honest.sessionID)] != nil, "the honest peer was pushed out again")
    }

    /// Candidates are dialled each address's first-heard one before any address's second: ids
    /// forged from one address, heard first and sorting first, do not queue the honest peer.
    @Test func candidatesFromOneAddressDoNotQueueTheOthers() {
        let forged = (0..<8).map { n in
            DiscoveredPeer(announcement: Announcement(sessionID: [0] + Array(repeating: UInt8(n), count: 15), port: 9, nameplate: 7),
                           address: Self.address("10.0.0.66"), lastSeen: Double(n))
        }
        let honest = DiscoveredPeer(announcement: Announcement(sessionID: [0xFF] + SecureRandom.bytes(15), port: 47823, nameplate: 7),
                                    address: Self.address("10.0.0.2"), lastSeen: 20)
        let order = Rendezvous.order(forged + [honest], skipping: [])
        #expect(order.prefix(2).map(\.host) == ["10.0.0.66", "10.0.0.2"])
        #expect(Rendezvous.order(forged + [honest], skipping: [forged[0].announcement.sessionID]).first?.host == "10.0.0.2")
    }
    /// A dialer dials the moment it hears the listener's announcement, and the listener may hear
    /// the dialer's own (its answer) only after the connection's introduction: the listener asks
    /// discovery when the introduction arrives, and gives it a moment to hear that session. Before,
    /// the candidates were fixed when the connection was accepted: with a code, the honest dialer
    /// was refused as "not the peer chosen by discovery" (steeredDiscoveryStillPairsTheHonestPeers
    /// failed every run in which Mei dialled, since discovery rings rather than polls).
    @Test func aDialerHeardJustAfterItsConnectionIsServed() async throws {
        let ken = try Self.participant("7-secret-words"), mei = try Self.participant("7-secret-words")
        let kenID = SecureRandom.bytes(16), meiID = SecureRandom.bytes(16)
        let heard = NIOLockedValueBox<[[UInt8]]>([])
        let server = try await ExchangeTransport.bind(host: "127.0.0.1", port: 0)
        async let served: Result<ExchangeResult, ExchangeFailure> = {
            do throws(ExchangeFailure) {
                return .success(try await ExchangeTransport.serve(server, timeout: .seconds(30), stepTimeout: .seconds(10), participant: ken,
                                                                  budget: GuessBudget(), onlySessions: (kenID, { heard.withLockedValue { $0 } })))
            } catch { return .failure(error) }
        }()
        async let dialled: Result<ExchangeResult, ExchangeFailure> = {
            do throws(ExchangeFailure) {
                return .success(try await ExchangeTransport.dial(try! SocketAddress(ipAddress: "127.0.0.1", port: server.port), label: "ken",
                                                                 stepTimeout: .seconds(10), introduce: (meiID, kenID), budget: GuessBudget(),
                                                                 participant: mei))
            } catch { return .failure(error) }
        }()
        try await Task.sleep(for: .milliseconds(300))
        heard.withLockedValue { $0 = [meiID] }  // Mei's announcement, heard after its connection
        let (k, m) = await (served, dialled)
        #expect(throws: Never.self) { try k.get() }
        #expect(throws: Never.self) { try m.get() }
    }
    /// At a meetup, a listener serving the one session discovery chose is also dialled by meishis
    /// that chose someone else, and probed by those checking that it listens (a connection opened
    /// and closed): neither is a failure to show (a tester saw "peer unknown failed: protocol
    /// violation: not the peer chosen by discovery; still listening" on every screen of three).
    /// Each is a step (`--verbose`), and the chosen peer still pairs.
    @Test func connectionsForOtherSessionsAreNotFailures() async throws {
        let heard = ExchangeEventTests.Heard()
        let ken = try Self.participant("7-secret-words", events: { heard.add($0) }), mei = try Self.participant("7-secret-words")
        let kenID = SecureRandom.bytes(16), meiID = SecureRandom.bytes(16)
        let server = try await ExchangeTransport.bind(host: "127.0.0.1", port: 0)
        async let served: Result<ExchangeResult, ExchangeFailure> = {
            do throws(ExchangeFailure) {
                return .success(try await ExchangeTransport.serve(server, timeout: .seconds(30), stepTimeout: .seconds(10), participant: ken,
                                                                  budget: GuessBudget(), onlySessions: (kenID, { [meiID] })))
            } catch { return .failure(error) }
        }()
        await Self.onThread {
            let probe = Loopback.connect(to: server.port)
            close(probe)
            let other = Loopback.connect(to: server.port)
            Wire(fd: other).write([0x00] + SecureRandom.bytes(16))
            Thread.sleep(forTimeInterval: 0.3)
            close(other)
        }
        let dialled: Result<ExchangeResult, ExchangeFailure>
        do throws(ExchangeFailure) {
            dialled = .success(try await ExchangeTransport.dial(try! SocketAddress(ipAddress: "127.0.0.1", port: server.port), label: "ken",
                                                                stepTimeout: .seconds(10), introduce: (meiID, kenID), budget: GuessBudget(),
                                                                participant: mei))
        } catch { dialled = .failure(error) }
        let k = await served
        #expect(throws: Never.self) { try k.get() }
        #expect(throws: Never.self) { try dialled.get() }
        let events = heard.all
        let notChosen = events.filter { if case .step(.notChosen) = $0 { true } else { false } }
        // The wrong introduction at least; the probe may close before its connection is served.
        #expect(!notChosen.isEmpty && notChosen.count <= 2, "\(events)")
        #expect(!events.contains { if case .quietFailure = $0 { true } else { false } }, "\(events)")
    }
}

