import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiProximity

/// A phase added after the message phase, as the card-update phase will be (issue 26): this file
/// is all it takes (the phase, and its place in `phases`). Each side sends its card's share id in
/// 0x70 and echoes the peer's in 0x71; it is finished with the peer's id and the echo of its own.
final class CardUpdateSkeletonPhase: PostCardPhase, @unchecked Sendable {
    static let innerTypes: ClosedRange<UInt8> = 0x70...0x7F
    let name = "card update"
    let mine: [UInt8]
    private(set) var heard: [UInt8]?
    private(set) var echoed = false
    private(set) var interruption: PostCardInterruption?

    init(shareID: String) { mine = Array(shareID.utf8) }

    var isFinished: Bool { interruption != nil || (heard != nil && echoed) }
    var summary: String { "card update: \(isFinished && interruption == nil ? "done" : "broke off")" }

    func start(_ context: PostCardContext) -> [PostCardMessage] { [PostCardMessage(type: 0x70, content: mine)] }

    func receive(_ message: PostCardMessage) -> [PostCardMessage] {
        switch message.type {
        case 0x70 where heard == nil:
            heard = message.content
            return [PostCardMessage(type: 0x71, content: message.content)]
        case 0x71 where !echoed && message.content == mine:
            echoed = true
            return []
        default:
            return interrupted(.unexpected(.unexpectedMessage("card-update message \(message.type) out of order")))
        }
    }

    func interrupted(_ reason: PostCardInterruption) -> [PostCardMessage] {
        interruption = reason
        return []
    }
}

@Suite struct PostCardPhaseTests {
    typealias S = ExchangeSessionTests

    static func participant(_ name: String, person: S.Person, phases: @escaping @Sendable () -> [any PostCardPhase]) throws -> ExchangeParticipant {
        var p = ExchangeParticipant(card: { (person.card(name), person.key) }, verifier: S.verifier, code: try ExchangeCode(parsing: "7-tulip-anchor"),
                                    confirmCode: { _ in true }, events: { _ in })
        p.phases = phases
        return p
    }

    static func noMessage() -> ExchangeMessagePhase {
        ExchangeMessagePhase(ExchangeMessages(authenticated: true, outgoing: { _ in nil }, incoming: { _, _ in .refused(.malformed) }))
    }

    /// Both sides over loopback TCP: the listener's result and the dialer's. The limits are
    /// generous: under a full parallel `swift test` on two cores, blocking tests can hold every
    /// thread of the cooperative pool for minutes, while these limits run on NIO's own threads.
    static func exchange(_ listener: ExchangeParticipant, _ dialer: ExchangeParticipant) async throws -> (ExchangeResult, ExchangeResult) {
        let server = try await ExchangeTransport.bind(host: "127.0.0.1", port: 0)
        async let served = ExchangeTransport.serve(server, timeout: .seconds(900), stepTimeout: .seconds(600), participant: listener,
                                                   budget: GuessBudget(), onlySessions: nil)
        async let dialled = ExchangeTransport.dial(host: "127.0.0.1", port: server.port, stepTimeout: .seconds(600), participant: dialer)
        return (try await served, try await dialled)
    }

    @Test func aThirdPhaseRunsAfterTheMessagePhase() async throws {
        let mei = S.Person(), ken = S.Person()
        let (l, d) = try await Self.exchange(
            try Self.participant("Mei", person: mei) { [Self.noMessage(), CardUpdateSkeletonPhase(shareID: "mei-share")] },
            try Self.participant("Ken", person: ken) { [Self.noMessage(), CardUpdateSkeletonPhase(shareID: "ken-share")] })
        for (result, peer) in [(l, "ken-share"), (d, "mei-share")] {
            let messages = try #require(result.phase(ExchangeMessagePhase.self))
            #expect(messages.isFinished && messages.outcome.failure == nil && messages.outcome.received == nil)
            let update = try #require(result.phase(CardUpdateSkeletonPhase.self))
            #expect(update.interruption == nil && update.echoed && update.heard == Array(peer.utf8))
        }
        #expect(l.peerCard.payload.displayName == "Ken" && d.peerCard.payload.displayName == "Mei")
    }

    /// A peer that does not run the phase: its next frame belongs to another phase (or none
    /// comes), the phase ends with that as its outcome, and the cards are exchanged all the same.
    @Test func aPhaseThePeerDoesNotRunEndsWithoutUndoingTheCards() async throws {
        let mei = S.Person(), ken = S.Person()
        let (l, d) = try await Self.exchange(
            try Self.participant("Mei", person: mei) { [CardUpdateSkeletonPhase(shareID: "mei-share")] },
            try Self.participant("Ken", person: ken) { [Self.noMessage()] })
        let update = try #require(l.phase(CardUpdateSkeletonPhase.self))
        guard case .unexpected? = update.interruption else {
            Issue.record("the card-update phase was not interrupted by the message phase's NONE: \(String(describing: update.interruption))")
            return
        }
        let messages = try #require(d.phase(ExchangeMessagePhase.self))
        guard case .protocolViolation? = messages.outcome.failure else {
            Issue.record("the message phase did not fail on 0x70: \(String(describing: messages.outcome.failure))")
            return
        }
        #expect(l.peerCard.payload.displayName == "Ken" && d.peerCard.payload.displayName == "Mei")
    }
}
