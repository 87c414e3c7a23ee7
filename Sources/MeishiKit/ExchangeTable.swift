import Foundation
import MeishiCard
import MeishiCrypto
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

    /// Throws `tableCodeSpent` when a table of this home used `code` before (`table` checks it too).
    public func refuseSpent(tableCode code: ExchangeCode, clock: @escaping @Sendable () -> Int64) throws(MeishiError) {
        _ = try SpentCode(code, store: ContactsService(home: home).open(), clock: clock)
    }

    /// Runs a table with `request.code` until `expect` people (this one included) are in, the person
    /// stops it, or `request.timeoutSeconds` pass. With `--listen`/`--peer` it is a table of two:
    /// the one exchange of `run`.
    public func table(_ request: Request, expect: Int?, identity: Identity, card: Card, clock: @escaping @Sendable () -> Int64,
                      conversation: Conversation, table: TableConversation) async throws(MeishiError) -> TableReport {
        guard let code = request.code else { preconditionFailure("a table needs a code") }
        let spent = try SpentCode(code, store: ContactsService(home: home).open(), clock: clock)
        guard case .discover(let alias, let interface, _) = request.endpoint else {
            let outcome: Outcome
            do {
                outcome = try await run(request, identity: identity, card: card, clock: clock, conversation: conversation)
            } catch {
                // A wrong code tested it (or every try went): the code is spent all the same.
                if case .exchange(let f) = error, SpentCode.tested(f) { try spent.spend() }
                throw error
            }
            try spent.spend()
            table.joined(outcome)
            return TableReport(members: [outcome], failures: [], ended: .expected, triesUsed: 0)
        }
        let pairings = try Pairings(request, home: home, identity: identity, card: card, clock: clock, conversation: conversation, table: true)
        let members = Locked<[Outcome]>([])
        let storeFailure = Locked<MeishiError?>(nil)
        let ownCards = Locked<[TableFailure]>([])
        let outcome: TableOutcome
        do {
            outcome = try await Table.run(
                alias: alias, interface: interface, expect: expect, timeoutSeconds: request.timeoutSeconds, participant: pairings.participant,
                events: TableEvents(
                    joined: { result in
                        do throws(MeishiError) {
                            try spent.spend()
                            let stored = try pairings.store(result)
                            // One contact once: the same card from a second device of its owner is its latest meeting.
                            members.withLockedValue { m in
                                m.removeAll { $0.contact.id == stored.contact.id }
                                m.append(stored)
                            }
                            table.joined(stored)
                        } catch .ownCard {
                            // Another meishi of this identity at the table (a second device): nothing to
                            // store, and no reason to end the table for the others.
                            ownCards.withLockedValue {
                                $0.append(TableFailure(peer: result.peerAddress, failure: .ownCard,
                                                       usedATry: false))
                            }
                        } catch {
                            storeFailure.withLockedValue { $0 = $0 ?? error }
                        }
                    },
                    failed: { failure, used in
                        do throws(MeishiError) {
                            try spent.spend()
                        } catch {
                            storeFailure.withLockedValue { $0 = $0 ?? error }
                        }
                        table.failed(failure, used)
                    },
                    stop: table.stop))
        } catch {
            throw .exchange(error)
        }
        if let failure = storeFailure.withLockedValue({ $0 }) { throw failure }
        return TableReport(members: members.withLockedValue { $0 }, failures: outcome.failures + ownCards.withLockedValue { $0 }, ended: outcome.ended,
                           triesUsed: outcome.triesUsed)
    }
}

/// A table's code, refused if a table of this home used it before and recorded once this table
/// has used it (docs/PROTOCOL.md §5.7): at its first pairing that completed or failed after the
/// code was tested, as it happens, so a run killed afterwards has spent it too. A run that met
/// nobody has not: the same code may be read out again.
struct SpentCode: Sendable {
    let digest: [UInt8]
    let store: ContactStore
    let clock: @Sendable () -> Int64
    private let recorded = Locked(false)

    /// Throws `tableCodeSpent` when a table of this store used `code` before.
    init(_ code: ExchangeCode, store: ContactStore, clock: @escaping @Sendable () -> Int64) throws(MeishiError) {
        // Only a digest is kept: the words are the password of a table that may still be running.
        digest = BLAKE2b.hash(Array("meishi-spent-table-code-v1".utf8) + [0] + Array(code.description.utf8)).exposedBytes()
        self.store = store
        self.clock = clock
        let at: Int64?
        do { at = try store.spentAt(code: digest) } catch { throw .store(error) }
        if let at { throw .tableCodeSpent(code: code.description, at: at) }
    }

    func spend() throws(MeishiError) {
        guard recorded.withLockedValue({ r in defer { r = true }; return !r }) else { return }
        do { try store.spend(code: digest, at: clock()) } catch { throw .store(error) }
    }

    /// Whether a pairing that failed so had the code tested (a wrong code, or every try used).
    static func tested(_ f: ExchangeFailure) -> Bool {
        switch f {
        case .protocolFailure(.codesDoNotMatch), .tooManyGuesses: true
        default: false
        }
    }
}
