import NIOConcurrencyHelpers

/// Says "N more connections failed" instead of a line per connection: at most `burst` a second
/// are reported, the rest counted into the next report (`alsoFailed`).
final class QuietFailures<Failure: Sendable>: Sendable {
    private let state = NIOLockedValueBox<(pending: Int, windowStart: Double, said: Int)>((0, -1e9, 0))
    private let report: @Sendable (Failure, _ alsoFailed: Int) -> Void
    private let burst: Int

    init(burst: Int = 1, report: @escaping @Sendable (Failure, _ alsoFailed: Int) -> Void) {
        self.burst = burst
        self.report = report
    }

    func record(_ failure: Failure, now: Double) {
        let suppressed: Int? = state.withLockedValue { s in
            if now - s.windowStart >= 1 { (s.windowStart, s.said) = (now, 0) }
            guard s.said < burst else {
                s.pending += 1
                return nil
            }
            s.said += 1
            defer { s.pending = 0 }
            return s.pending
        }
        guard let suppressed else { return }
        report(failure, suppressed)
    }
}

/// A note listener's failures (its connections, probes and mailboxes), told as events.
typealias FailureSummary = QuietFailures<ListenerEvent.Summarised>

/// The exchange's quiet failures, told as events.
extension QuietFailures where Failure == ExchangeEvent.QuietFailure {
    convenience init(_ participant: ExchangeParticipant) {
        self.init { failure, more in participant.events(.quietFailure(failure, alsoFailed: more)) }
    }
}

/// Tracks peers that fail: 5 failures in 10 minutes bans an address for 10 minutes.
final class PeerGuard: Sendable {
    static let maximumFailures = 5
    static let window: Double = 600
    private let failures = NIOLockedValueBox<[String: [Double]]>([:])

    func isBanned(_ address: String, now: Double) -> Bool {
        failures.withLockedValue { f in
            let recent = (f[address] ?? []).filter { now - $0 < Self.window }
            f[address] = recent
            return recent.count >= Self.maximumFailures
        }
    }

    func recordFailure(_ address: String, now: Double) {
        failures.withLockedValue { $0[address, default: []].append(now) }
    }
}

/// The one session of a listener allowed past its handshake at a time (sessions are served at
/// once): the first to ask the person about its code (digits) or to sign its card (`--code`)
/// holds it until it ends; another asking meanwhile waits (digits) or is refused (`--code`).
final class SessionClaim: Sendable {
    private let state = NIOLockedValueBox<Int?>(nil)

    /// The session holding the claim, if any.
    var holder: Int? { state.withLockedValue { $0 } }

    /// Takes the claim for `id` unless another session holds it.
    func tryTake(_ id: Int) -> Bool {
        state.withLockedValue { h in
            guard h == nil || h == id else { return false }
            h = id
            return true
        }
    }

    /// Waits for the claim; false when the task is cancelled first (its connection closed).
    func take(_ id: Int) async -> Bool {
        while !tryTake(id) {
            if Task.isCancelled { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    func release(_ id: Int) {
        state.withLockedValue { h in if h == id { h = nil } }
    }

    /// `participant` for the session of `id`: it takes the claim before the person is asked and
    /// before its card is signed, and `claimed` hears that it did.
    func participant(_ participant: ExchangeParticipant, slot id: Int, claimed: @escaping @Sendable () -> Void) -> ExchangeParticipant {
        var claiming = participant
        claiming.confirmCode = { code in
            guard await self.take(id) else { return false }
            claimed()
            return await participant.confirmCode(code)
        }
        claiming.card = {
            guard self.tryTake(id) else { throw ExchangeFailure.unreachable(.anotherPairingPastHandshake) }
            claimed()
            return try await participant.card()
        }
        return claiming
    }
}
