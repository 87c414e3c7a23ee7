import Foundation

/// The guesses one run allows (docs/PROTOCOL.md §5.4): a pairing abandoned after this side sent
/// what lets the peer compute the code has shown the peer one code sample. The budget is per
/// run, not per address, so rotating source addresses gains nothing.
///
/// A try is taken *before* the frame that reveals a sample is sent, not when the pairing ends:
/// with discovery and a code this side serves and dials at once, and an attacker holding both
/// pairings open could otherwise resolve two guesses on the last try (4 in all). A success or a
/// person's decision ends the run anyway, so a try once taken is never given back.
///
/// At a table (§5.7) many pairings succeed in one run: there a pairing that completes gives its
/// try back (`givesBack`), so the budget counts failed pairings, and a pairing that finds every
/// try held by pairings in progress waits for one instead of being refused.
public final class GuessBudget: Sendable {
    public static let allowed = 3
    private let state = Locked<(used: Int, inFlight: Int)>((0, 0))
    /// A table's budget: a completed pairing's try is given back.
    public let givesBack: Bool

    public init(givesBack: Bool = false) { self.givesBack = givesBack }

    /// Tries taken so far, including those of pairings still in progress.
    public var spent: Int { state.withLockedValue { $0.used } }

    /// Tries taken by pairings that ended without completing.
    public var failed: Int { state.withLockedValue { $0.used - $0.inFlight } }

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

    /// Like `reserve`, but a table's pairing waits while the tries left are held by pairings in
    /// progress (each gives its try back if it completes); false once the failures used them all
    /// or the task is cancelled.
    func reserveWaiting() async -> Bool {
        while true {
            if reserve() { return true }
            guard givesBack, !exhausted, !Task.isCancelled else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The pairing that reserved a try has ended: the try stays used unless it completed at a table.
    func settle(completed: Bool) {
        state.withLockedValue { s in
            s.inFlight -= 1
            if completed && givesBack { s.used -= 1 }
        }
    }
}

/// A value behind a lock, for the few counters that tasks share (a table's members in MeishiKit too).
public final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    public func withLockedValue<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
