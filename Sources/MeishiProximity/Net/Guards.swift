import NIOConcurrencyHelpers

/// Says "N more connections failed" instead of a line per connection: at most `burst` lines a
/// second, the rest counted into the next line.
final class FailureSummary: Sendable {
    private let state = NIOLockedValueBox<(pending: Int, windowStart: Double, said: Int)>((0, -1e9, 0))
    private let log: @Sendable (String) -> Void
    private let burst: Int
    private let counting: String

    init(burst: Int = 1, counting: String = "failed connections", log: @escaping @Sendable (String) -> Void) {
        self.burst = burst
        self.counting = counting
        self.log = log
    }

    func record(_ line: String, now: Double) {
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
        log(line + (suppressed > 0 ? " (and \(suppressed) more \(counting))" : ""))
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
