import Foundation

/// Work that holds its thread, run on a thread of its own while the task awaits its value: a
/// question waiting for a person at the terminal, or seconds of CPU work (blinding ten thousand
/// contacts for common friends). A pairwise `exchange` runs every task on the one thread of the
/// event loop (`EventLoopExecutor`), where such work would stop the network until done:
/// discovery's announcements, the listener's accepts, the other side's frames and the timers.
/// (`Task.detached` is no way out there: it runs on the same thread.)
public enum BlockingWork {
    public static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: body()) }
        }
    }
}
