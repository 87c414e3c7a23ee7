import NIOCore
import NIOPosix

extension ExchangeTransport {
    /// Connects to `address`, retrying every `pause` until `deadline` (monotonic seconds), so a
    /// peer that starts listening a moment later is still reached; a refused connection is
    /// retried only for `refusedGrace` seconds (nothing listening must not hold a sender for its
    /// whole timeout). At least one attempt is made. Each attempt gets `attemptTimeout(seconds
    /// left)`. Used by the exchange's dial and by message delivery.
    static func connect(to address: SocketAddress, until deadline: Double, attemptTimeout: (Double) -> TimeAmount,
                        refusedGrace: Double = .infinity, pause: Duration) async -> Result<Connection, ConnectFailure> {
        var firstRefusal: Double?
        while true {
            do {
                return .success(try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connectTimeout(attemptTimeout(deadline - now()))
                    .connect(to: address) { channel in
                        channel.eventLoop.makeCompletedFuture { try Connection(wrappingChannelSynchronously: channel) }
                    })
            } catch {
                if errno(of: error) == ECONNREFUSED {
                    firstRefusal = firstRefusal ?? now()
                } else {
                    firstRefusal = nil
                }
                let refusedTooLong = firstRefusal.map { now() - $0 > refusedGrace } ?? false
                guard now() < deadline, !refusedTooLong, !Task.isCancelled else { return .failure(ConnectFailure(error)) }
                try? await Task.sleep(for: pause)
            }
        }
    }

    /// The last connection error of `connect`.
    struct ConnectFailure: Error {
        let problem: ExchangeFailure.ConnectProblem

        init(_ error: any Error) {
            problem = connectProblem(error)
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
