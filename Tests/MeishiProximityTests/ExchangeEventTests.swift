import Testing
import MeishiCard
import NIOConcurrencyHelpers
import NIOCore
@testable import MeishiProximity

/// The exchange tells the application what happens as values (`ExchangeEvent`), never as
/// sentences: the executable words them (issue 23).
@Suite struct ExchangeEventTests {
    typealias S = ExchangeSessionTests

    /// Every event one side heard, in order.
    final class Heard: Sendable {
        private let events = NIOLockedValueBox<[ExchangeEvent]>([])
        func add(_ e: ExchangeEvent) { events.withLockedValue { $0.append(e) } }
        var all: [ExchangeEvent] { events.withLockedValue { $0 } }
        var steps: [ExchangeStep] { all.compactMap { if case .step(let s) = $0 { s } else { nil } } }
    }

    static func participant(_ name: String, person: S.Person, heard: Heard) throws -> ExchangeParticipant {
        var p = ExchangeParticipant(card: { (person.card(name), person.key) }, verifier: S.verifier,
                                    code: try ExchangeCode(parsing: "7-tulip-anchor"), confirmCode: { _ in true }, events: heard.add)
        p.phases = { [CardUpdateSkeletonPhase(shareID: name)] }
        return p
    }

    @Test func aPairingTellsEachStepAndTheCodesMatchingAsValues() async throws {
        let mei = S.Person(), ken = S.Person()
        let (heardByMei, heardByKen) = (Heard(), Heard())
        _ = try await PostCardPhaseTests.exchange(try Self.participant("Mei", person: mei, heard: heardByMei),
                                                  try Self.participant("Ken", person: ken, heard: heardByKen))
        for (heard, role) in [(heardByMei, ExchangeSession.Role.listener), (heardByKen, .dialer)] {
            let steps = heard.steps
            guard case .connected(_, let r, let withCode)? = steps.first else {
                Issue.record("the first step is not the connection: \(steps)")
                continue
            }
            #expect(r == role && withCode)
            #expect(steps.contains { if case .sealed = $0 { true } else { false } })
            #expect(steps.contains { if case .cardSent(let n) = $0 { n > 0 } else { false } })
            #expect(steps.contains { if case .cardReceived(let n) = $0 { n > 0 } else { false } })
            #expect(steps.contains { if case .bothAcknowledged = $0 { true } else { false } })
            // The phase itself, for the application to word by its type.
            #expect(steps.contains { if case .phaseEnded(let phase, _) = $0 { phase is CardUpdateSkeletonPhase } else { false } })
            #expect(heard.all.contains { if case .codesMatch = $0 { true } else { false } })
        }
    }

    @Test func aRefusedConnectionIsATypedFailure() async throws {
        let closed = try await ExchangeTransport.bind(host: "127.0.0.1", port: 0)
        let port = closed.port
        try await closed.close()
        let heard = Heard()
        let participant = try Self.participant("Ken", person: S.Person(), heard: heard)
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: port)
        do throws(ExchangeFailure) {
            _ = try await ExchangeTransport.dial(address, label: "127.0.0.1 port \(port)", stepTimeout: .seconds(30), participant: participant)
            Issue.record("a closed port was dialled")
        } catch {
            guard case .unreachable(.cannotConnect(let peer, .refused)) = error else {
                Issue.record("not a refused connection: \(error)")
                return
            }
            #expect(peer == "127.0.0.1 port \(port)")
        }
        #expect(heard.all.isEmpty)
    }
}
