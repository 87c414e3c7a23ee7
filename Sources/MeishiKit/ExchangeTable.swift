import Foundation
import MeishiCard
import MeishiProximity
import MeishiStore

/// `meishi exchange --table`: everyone holding one code swaps cards with everyone else
/// (docs/PROTOCOL.md §5.7). Each pair is one exchange; each member is stored as it joins.
extension ExchangeService {
    /// How a table run ended, with everyone stored and every pairing that failed.
    public struct TableReport: Sendable {
        public let members: [Outcome]
        public let failures: [TableFailure]
        public let ended: TableEnd
        /// Failed pairings that used a try, of `allowedFailures`.
        public let triesUsed: Int
        public static let allowedFailures = GuessBudget.allowed
    }

    /// What the person hears while a table runs: each member as it is stored, each failed pairing
    /// that used a try, and when the person ends the table (Enter, Ctrl-D).
    public struct TableConversation: Sendable {
        public var joined: @Sendable (Outcome) -> Void
        public var failed: @Sendable (TableFailure, _ triesUsed: Int) -> Void
        public var stop: @Sendable () async -> Void

        public init(joined: @escaping @Sendable (Outcome) -> Void, failed: @escaping @Sendable (TableFailure, Int) -> Void,
                    stop: @escaping @Sendable () async -> Void) {
            self.joined = joined
            self.failed = failed
            self.stop = stop
        }
    }

    /// Runs a table with `request.code` until `expect` people (this one included) are in, the person
    /// stops it, or `request.timeoutSeconds` pass. With `--listen`/`--peer` it is a table of two:
    /// the one exchange of `run`.
    public func table(_ request: Request, expect: Int?, identity: Identity, card: Card, clock: @escaping @Sendable () -> Int64,
                      conversation: Conversation, table: TableConversation) async throws(MeishiError) -> TableReport {
        precondition(request.code != nil, "a table needs a code")
        guard case .discover(let alias, let interface, _) = request.endpoint else {
            let outcome = try await run(request, identity: identity, card: card, clock: clock, conversation: conversation)
            table.joined(outcome)
            return TableReport(members: [outcome], failures: [], ended: .expected, triesUsed: 0)
        }
        let pairings = try Pairings(request, home: home, identity: identity, card: card, clock: clock, conversation: conversation, table: true)
        let members = Locked<[Outcome]>([])
        let storeFailure = Locked<MeishiError?>(nil)
        let outcome: TableOutcome
        do {
            outcome = try await Table.run(
                alias: alias, interface: interface, expect: expect, timeoutSeconds: request.timeoutSeconds, participant: pairings.participant,
                events: TableEvents(
                    joined: { result in
                        do throws(MeishiError) {
                            let stored = try pairings.store(result)
                            members.withLockedValue { $0.append(stored) }
                            table.joined(stored)
                        } catch {
                            storeFailure.withLockedValue { $0 = $0 ?? error }
                        }
                    },
                    failed: table.failed,
                    stop: table.stop))
        } catch {
            throw .exchange(error)
        }
        if let failure = storeFailure.withLockedValue({ $0 }) { throw failure }
        return TableReport(members: members.withLockedValue { $0 }, failures: outcome.failures, ended: outcome.ended,
                           triesUsed: outcome.triesUsed)
    }
}

