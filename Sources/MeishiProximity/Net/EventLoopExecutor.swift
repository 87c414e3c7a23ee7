import CTaskHook
import NIOCore
import NIOPosix

/// Runs the process's Swift concurrency on the one thread of swift-nio's event loop.
///
/// Without it, every await on the network hops between two thread pools: the event loop reads a
/// frame, wakes a thread of Swift's global executor to run the exchange, which hands its answer
/// back to the loop to write. On a busy two-core machine each hop waits for a thread to be
/// scheduled; a pairing (two processes) took 25–30 ms, 18–23 ms on one thread (make bench,
/// issue 23). The loop is then the only thread that runs tasks, so nothing that blocks may run
/// in one: a question to a person runs on a thread of its own (`BlockingWork`), and SQLite's
/// work is short.
///
/// This is what `NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor`
/// does, with the runtime's hook reached through `CTaskHook` (see there why).
public enum EventLoopExecutor {
    typealias EnqueueHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// Installs the event loop as the global executor, with one loop thread. Call it once, on the
    /// main thread, before the first task and before anything uses `MultiThreadedEventLoopGroup.singleton`.
    /// False (and nothing changed) when a hook is already set.
    @discardableResult
    public static func install() -> Bool {
        let slot = meishi_task_enqueue_global_hook()
        guard slot.pointee == nil else { return false }
        NIOSingletons.groupLoopCountSuggestion = 1
        let hook: EnqueueHook = { job, _ in
            // `any()` is the loop itself when called on it: no hop.
            MultiThreadedEventLoopGroup.singleton.any().executor.enqueue(job)
        }
        slot.pointee = unsafeBitCast(hook, to: UnsafeMutableRawPointer.self)
        return true
    }
}
