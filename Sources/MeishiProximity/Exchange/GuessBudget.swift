import Foundation

/// The guesses one run allows (docs/PROTOCOL.md §5.4): a pairing abandoned after this side sent
/// what lets the peer compute the code has shown the peer one code sample. The budget is per
/// run, not per address, so rotating source addresses gains nothing.
///
/// A try is taken *before* the frame that reveals a sample is sent, not when the pairing ends:
/// with discovery and a code this side serves and dials at once, and an attacker holding both
/// pairings open could otherwise resolve two guesses on the last try (4 in all). A success or a
/// person's decision ends the run anyway, so a try once taken is never given back.
public final class GuessBudget: Sendable {
    public static let allowed = 3
    private let state = Locked<(used: Int, inFlight: Int)>((0, 0))

    public init() {}

    /// Tries taken so far, including those of pairings still in progress.
    public var spent: Int { state.withLockedValue { $0.used } }

    /// Every try is used and no pairing holding one is still in progress: the run must end.
    public var exhausted: Bool { state.withLockedValue { $0.used >= Self.allowed && $0.inFlight == 0 } }

    /// Takes one try for a pairing about to reveal a code sample; false (take nothing) when none is left.
    func reserve() -> Bool {
        state.withLockedValue { s in
            guard s.used < Self.allowed else { return false }
            s.used += 1
            s.inFlight += 1
            return true
        }
    }

    /// The pairing that reserved a try has ended (the try stays used).
    func settle() {
        state.withLockedValue { $0.inFlight -= 1 }
    }

}

/// A value behind a lock, for the few counters that tasks share.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLockedValue<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
