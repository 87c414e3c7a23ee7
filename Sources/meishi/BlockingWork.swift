import Foundation

/// Work that blocks its thread (a question waiting for a person at the terminal), run on a thread
/// of its own while the task awaits its value: every task of a pairwise `exchange` runs on the
/// one thread of the event loop (`EventLoopExecutor`), and a question asked there would
/// stop the network until answered (discovery's announcements, the other side's frames).
enum BlockingWork {
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: body()) }
        }
    }
}
