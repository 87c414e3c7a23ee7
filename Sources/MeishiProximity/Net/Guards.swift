import NIOConcurrencyHelpers

/// Says "N more connections failed" at most once a second instead of a line per connection.
final class FailureSummary: Sendable {
    private let state = NIOLockedValueBox<(pending: Int, last: Double)>((0, -1e9))
    private let log: @Sendable (String) -> Void

    init(log: @escaping @Sendable (String) -> Void) { self.log = log }

    func record(_ line: String, now: Double) {
        let say: (Int, Bool)? = state.withLockedValue { s in
            if now - s.last >= 1 {
                defer { s = (0, now) }
                return (s.pending, true)
            }
            s.pending += 1
            return nil
        }
        guard let (suppressed, _) = say else { return }
        log(line + (suppressed > 0 ? " (and \(suppressed) more failed connections)" : ""))
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
