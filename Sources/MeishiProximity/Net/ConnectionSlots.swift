import NIOConcurrencyHelpers

/// The listener's connection slots: at most `total` connections served at once and `perSource`
/// from one address, shared by the exchange's listener, a table's and `meishi listen`'s.
///
/// A connection that has not yet sent a hello with a known tag is idle. When all `total` slots are
/// taken, the oldest idle connection is cut to make room at once, so strangers holding idle
/// connections cannot keep a contact out. When an address's own `perSource` slots are taken, its
/// next connection cuts only one of its own that has been idle for `grace` seconds, and otherwise
/// waits: an honest sender says hello within milliseconds, and eight of them sending at once from
/// one address had their fresh connections cut (or refused) when one was accepted before a
/// finished one's slot was released. Waiting is bounded (`perSource` from one address, `total` in
/// all); past that a connection is refused, so a flood holds no more sockets than twice the slots.
final class ConnectionSlots: Sendable {
    private struct Holder {
        let id: Int
        let source: String
        var greeted = false
        let close: @Sendable () -> Void
        let since: Double
    }

    private struct State {
        var holders: [Holder] = []
        var nextID = 0
        var waiting: [String: Int] = [:]
        var waitingInAll = 0
    }

    /// How long a connection may stay idle before it can be cut to make room.
    static let grace = 1.0

    private let state = NIOLockedValueBox(State())
    private let now: @Sendable () -> Double
    let total: Int
    let perSource: Int
    let grace: Double

    init(total: Int, perSource: Int, grace: Double = ConnectionSlots.grace,
         now: @escaping @Sendable () -> Double = ExchangeTransport.now) {
        precondition(total > 0 && perSource > 0 && perSource <= total)
        self.total = total
        self.perSource = perSource
        self.grace = grace
        self.now = now
    }

    /// A slot for a connection from `source` (its id), once one is free or an idle connection can
    /// be cut for it (`close` closes this connection if it is cut later; `cut` hears the source of
    /// each idle connection cut for it); nil when too many wait already or the task is cancelled.
    func admit(_ source: String, close: @escaping @Sendable () -> Void, cut: (String) -> Void) async -> Int? {
        enum Step { case admitted(Int), wait, refused }
        var counted = false
        defer {
            if counted {
                state.withLockedValue { s in
                    s.waiting[source, default: 1] -= 1
                    if s.waiting[source] == 0 { s.waiting[source] = nil }
                    s.waitingInAll -= 1
                }
            }
        }
        while !Task.isCancelled {
            var victim: Holder?
            let time = self.now()
            let step: Step = state.withLockedValue { s in
                if s.holders.count(where: { $0.source == source }) >= perSource {
                    victim = s.holders.first { $0.source == source && !$0.greeted && time - $0.since >= self.grace }
                } else if s.holders.count >= total {
                    victim = s.holders.first { !$0.greeted }
                } else {
                    victim = nil
                    return admit(&s, at: time)
                }
                guard let victim else {
                    if counted { return .wait }
                    guard s.waiting[source, default: 0] < perSource, s.waitingInAll < total else { return .refused }
                    s.waiting[source, default: 0] += 1
                    s.waitingInAll += 1
                    counted = true
                    return .wait
                }
                s.holders.removeAll { $0.id == victim.id }
                return admit(&s, at: time)
            }
            if let victim {
                victim.close()
                // It may have sent part of a frame: what it lacks is a hello (trial 7, F11: "sent nothing" after 50 bytes).
                cut(victim.source)
            }
            switch step {
            case .admitted(let id): return id
            case .refused: return nil
            case .wait:
                // Until a connection ends or an idle one has waited past `grace`.
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        return nil

        func admit(_ s: inout State, at time: Double) -> Step {
            s.nextID += 1
            s.holders.append(Holder(id: s.nextID, source: source, close: close, since: time))
            return .admitted(s.nextID)
        }
    }

    /// How many connections wait for a slot.
    var waiting: Int { state.withLockedValue { $0.waitingInAll } }

    /// The connection of `id` sent a hello with a known tag: it is no longer cut to make room.
    func greeted(_ id: Int) {
        state.withLockedValue { s in
            if let i = s.holders.firstIndex(where: { $0.id == id }) { s.holders[i].greeted = true }
        }
    }

    /// The connection of `id` ended (a cut one was released already).
    func release(_ id: Int) {
        state.withLockedValue { s in s.holders.removeAll { $0.id == id } }
    }
}
