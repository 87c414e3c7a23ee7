import NIOConcurrencyHelpers
import Testing
@testable import MeishiProximity

/// The listener's connection slots, driven without sockets on a clock the test moves.
/// `make bench`'s messages part (eight senders at once from one address) had fresh honest
/// connections cut or refused whenever one was accepted before a finished one's slot was released.
@Suite struct ConnectionSlotsTests {
    final class World: Sendable {
        let clock = NIOLockedValueBox(0.0)
        let closed = NIOLockedValueBox<[String]>([])
        let cuts = NIOLockedValueBox<[String]>([])
        let slots: ConnectionSlots

        init(total: Int = 32, perSource: Int = 2) {
            let clock = clock
            slots = ConnectionSlots(total: total, perSource: perSource, grace: 1, now: { clock.withLockedValue { $0 } })
        }

        func admit(_ source: String, _ name: String) async -> Int? {
            await slots.admit(source, close: { self.closed.withLockedValue { $0.append(name) } },
                              cut: { from in self.cuts.withLockedValue { $0.append(from) } })
        }

        func advance(_ seconds: Double) { clock.withLockedValue { $0 += seconds } }

        /// Until `count` connections wait (they register at once; this only yields to them), or 10 s.
        func untilWaiting(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async {
            let start = ContinuousClock.now
            while slots.waiting < count {
                guard ContinuousClock.now - start < .seconds(10) else {
                    Issue.record("\(slots.waiting) connections wait, not \(count)", sourceLocation: sourceLocation)
                    return
                }
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
    }

    @Test func aFreshConnectionOfTheSameSenderWaitsInsteadOfCuttingAnother() async throws {
        let world = World()
        let first = try #require(await world.admit("10.0.0.1", "first"))
        _ = try #require(await world.admit("10.0.0.1", "second"))
        let third = Task { await world.admit("10.0.0.1", "third") }
        await world.untilWaiting(1)
        world.slots.release(first)
        #expect(await third.value != nil)
        #expect(world.closed.withLockedValue { $0 }.isEmpty, "a connection a few milliseconds old was cut")
        #expect(world.cuts.withLockedValue { $0 }.isEmpty)
    }

    @Test func aSenderWhoseConnectionsAllSaidHelloWaitsAndIsNotRefused() async throws {
        let world = World()
        let first = try #require(await world.admit("10.0.0.1", "first"))
        let second = try #require(await world.admit("10.0.0.1", "second"))
        world.slots.greeted(first)
        world.slots.greeted(second)
        let third = Task { await world.admit("10.0.0.1", "third") }
        await world.untilWaiting(1)
        world.slots.release(second)
        #expect(await third.value != nil, "a contact's next connection was refused")
    }

    @Test func aConnectionIdlePastTheGraceIsCutForTheNext() async throws {
        let world = World()
        _ = try #require(await world.admit("10.0.0.1", "first"))
        _ = try #require(await world.admit("10.0.0.1", "second"))
        world.advance(1.5)
        #expect(await world.admit("10.0.0.1", "third") != nil)
        #expect(world.closed.withLockedValue { $0 } == ["first"])
        #expect(world.cuts.withLockedValue { $0 } == ["10.0.0.1"])
    }

    @Test func aStrangerHoldingIdleConnectionsCannotKeepAContactOut() async throws {
        let world = World(total: 4, perSource: 2)
        for n in 1...4 { _ = try #require(await world.admit("10.0.0.\(60 + n % 2)", "idle \(n)")) }
        // At once: the slots are full of other addresses' idle connections, however young.
        let slot = try #require(await world.admit("10.0.0.2", "contact"))
        world.slots.greeted(slot)
        #expect(world.closed.withLockedValue { $0 } == ["idle 1"])
        #expect(world.cuts.withLockedValue { $0 } == ["10.0.0.61"])
        // A stranger's new connection cuts another idle one, never the contact's, which said hello.
        #expect(await world.admit("10.0.0.62", "idle 5") != nil)
        #expect(world.closed.withLockedValue { $0 } == ["idle 1", "idle 2"])
    }

    @Test func waitingIsBoundedSoAFloodHoldsNoMoreSockets() async throws {
        let world = World(total: 32, perSource: 2)
        let held = [try #require(await world.admit("10.0.0.66", "a")), try #require(await world.admit("10.0.0.66", "b"))]
        let waiters = (0..<2).map { n in Task { await world.admit("10.0.0.66", "waiting \(n)") } }
        await world.untilWaiting(2)
        #expect(await world.admit("10.0.0.66", "one too many") == nil, "a third waiting connection from one address was kept")
        // Another address still gets in at once.
        #expect(await world.admit("10.0.0.2", "contact") != nil)
        held.forEach(world.slots.release)
        for waiter in waiters { #expect(await waiter.value != nil) }
        #expect(world.slots.waiting == 0)
    }

    @Test func aWaitingConnectionEndsWhenTheListenerStops() async throws {
        let world = World()
        _ = try #require(await world.admit("10.0.0.1", "first"))
        _ = try #require(await world.admit("10.0.0.1", "second"))
        let third = Task { await world.admit("10.0.0.1", "third") }
        await world.untilWaiting(1)
        third.cancel()
        #expect(await third.value == nil)
        #expect(world.slots.waiting == 0)
    }
}
