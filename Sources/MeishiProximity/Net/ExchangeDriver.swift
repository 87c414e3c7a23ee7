import MeishiCard
import MeishiCrypto
import NIOCore
import NIOPosix

/// The driver of one exchange session on one TCP connection: the one loop that feeds the
/// session its inputs (the peer's frames, the person's answer, the signed card, timers, work
/// done, the connection's end) and performs the actions it returns, until `.finish`. It knows
/// nothing of the protocol: the order of frames, the phases and their failures are the session's.
extension ExchangeTransport {
    /// How long a listener waits for a new connection's first frame (an honest dialer sends it at once).
    static let firstFrameTimeout: TimeAmount = .seconds(2)
    /// How long a listener waits for discovery to hear the session a connection introduces: a
    /// dialer dials the moment it hears our announcement, and its own (its answer) may arrive just
    /// after its connection. An announcement is answered at once and repeated every second.
    static let introductionGrace: Double = 1

    /// One session on one connection, post-card phases included; closes the connection at the end.
    /// After discovery the dialer sends `introduce`, and the listener expects one of `expectIntroduction`.
    static func run(_ session: ExchangeSession, on connection: Connection, participant: ExchangeParticipant,
                    stepTimeout: TimeAmount, address: String, budget: GuessBudget? = nil, introduce: (own: [UInt8], peer: [UInt8])? = nil,
                    expectIntroduction: (own: [UInt8], candidates: @Sendable () -> [[UInt8]])? = nil) async throws(ExchangeFailure) -> ExchangeResult {
        let eventLoop = connection.channel.eventLoop
        let connectedAt = now()
        let firstFrameLimit = min(stepTimeout, firstFrameTimeout)
        if let ids = introduce { session.introduction = .send(own: ids.own, peer: ids.peer) }
        if let ids = expectIntroduction { session.introduction = .expect(own: ids.own, candidates: ids.candidates) }
        // A try taken from `budget` before the first frame that reveals a code sample (§5.4).
        var holdsTry = false
        var completed = false
        defer { if holdsTry { budget?.settle(completed: completed) } }
        do {
            return try await connection.executeThenClose { inbound, outbound in
                // Every input but the signed card and work done (given back at once) arrives on one
                // stream: the peer's frames, read one at a time when asked for (`want`), the
                // person's answer, asked meanwhile, and the timer.
                let (inputs, feed) = AsyncStream.makeStream(of: ExchangeSession.Input.self)
                let (requests, want) = AsyncStream.makeStream(of: Void.self)
                let reader = Task {
                    var frames = FrameReader(iterator: inbound.makeAsyncIterator())
                    // The stream ends with the connection: later asks read `.connectionClosed(nil)`.
                    defer { feed.finish() }
                    for await _ in requests {
                        do {
                            guard let frame = try await frames.next() else { break }
                            feed.yield(.frame(frame))
                        } catch let e as ExchangeError {
                            feed.yield(.badFrame(e))
                            return
                        } catch {
                            feed.yield(.connectionClosed(error: closedProblem(error)))
                            return
                        }
                    }
                    feed.yield(.connectionClosed(error: nil))
                }
                var timer: Scheduled<Void>?
                var asking: Task<Void, Never>?
                defer {
                    timer?.cancel()
                    asking?.cancel()
                    want.finish()
                    reader.cancel()
                }
                var pending = inputs.makeAsyncIterator()
                var frameRequested = false
                var queue: [ExchangeSession.Input] = [.connected]
                participant.events(.step(.connected(address: address, role: session.role, withCode: participant.code != nil)))
                while true {
                    let input: ExchangeSession.Input
                    if !queue.isEmpty {
                        input = queue.removeFirst()
                    } else {
                        if !frameRequested {
                            frameRequested = true
                            want.yield(())
                        }
                        input = await pending.next() ?? .connectionClosed(error: nil)
                        if case .frame = input { frameRequested = false }
                    }
                    if case .frame(let body) = input, session.introducesUnheardSession(body) {
                        // Within the first-frame limit, so its timer cannot fire meanwhile.
                        let until = min(now() + introductionGrace, connectedAt + Double(firstFrameLimit.nanoseconds) / 1e9 - 0.05)
                        while session.introducesUnheardSession(body), now() < until { try? await Task.sleep(for: .milliseconds(20)) }
                    }
                    var sendFailed: (any Error)?
                    for action in session.handle(input) {
                        switch action {
                        case .send(let body):
                            guard sendFailed == nil else { continue }
                            do { try await outbound.write(ByteBuffer(bytes: FrameCodec.encode(body))) } catch { sendFailed = error }
                        case .spendGuess:
                            guard let budget else { continue }
                            guard budget.givesBack ? await budget.reserveWaiting() : budget.reserve() else {
                                throw ExchangeFailure.tooManyGuesses(budget.spent)
                            }
                            holdsTry = true
                        case .askPerson(let digits):
                            // The person may take a while: the peer's frames are still taken in, and its
                            // DECLINE or a closed connection ends the question (the prompt is the application's to drop).
                            asking = Task {
                                switch await participant.confirmCode(digits) {
                                case .same: feed.yield(.personAnswered(true))
                                case .differ: feed.yield(.personAnswered(false))
                                case .none(let timedOut): feed.yield(.personGaveNoAnswer(timedOut: timedOut))
                                }
                            }
                        case .signCard:
                            let (card, key) = try await participant.card()
                            queue.append(.cardSigned(card, key))
                        case .store:
                            // The result carries the card: the application stores it once the session is over.
                            break
                        case .perform(let work):
                            await work.run()
                            queue.append(.workDone)
                        case .arm(let limit):
                            timer?.cancel()
                            timer = limit.map { limit in
                                eventLoop.scheduleTask(in: limit == .firstFrame ? firstFrameLimit : stepTimeout) {
                                    feed.yield(.timerFired)
                                }
                            }
                        case .event(let event):
                            participant.events(event)
                        case .finish(.exchanged(let card, let confirmation, let phases)):
                            completed = true
                            return ExchangeResult(peerCard: card, confirmation: confirmation, peerAddress: address, phases: phases)
                        case .finish(.failed(let failure)):
                            // A question still open is withdrawn (the application drops its prompt)
                            // before the failure is told, so no answer is taken for a lost pairing.
                            if let question = asking {
                                question.cancel()
                                await question.value
                            }
                            throw failure
                        }
                    }
                    if let sendFailed { queue.append(.connectionClosed(error: closedProblem(sendFailed))) }
                }
            }
        } catch let e as ExchangeFailure {
            throw e
        } catch {
            throw .connectionLost(closedProblem(error).map(ConnectionLoss.failed) ?? .closed(waiting: session.waitingFor))
        }
    }

    /// How a connection broke: nil when it was merely closed (SwiftNIO's "I/O on closed channel"
    /// and the like: the session then says what it was waiting for), else the error.
    static func closedProblem(_ error: any Error) -> SocketProblem? {
        if let e = error as? ChannelError, [.ioOnClosedChannel, .alreadyClosed, .eof, .outputClosed, .inputClosed].contains(e) { return nil }
        if let e = error as? IOError { return e.errnoCode == ECONNRESET ? .reset : .other(String(cString: strerror(e.errnoCode))) }
        return .other("\(error)")
    }
}

/// Turns the inbound byte stream into frame bodies.
struct FrameReader {
    var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    var decoder = FrameDecoder()
    var ready: [[UInt8]] = []

    mutating func next() async throws -> [UInt8]? {
        while ready.isEmpty {
            guard let buffer = try await iterator.next() else { return nil }
            ready += try decoder.feed(buffer.readableBytesView)
        }
        return ready.removeFirst()
    }
}

/// Monotonic time without Foundation.
enum DispatchTimeShim {
    static func uptimeNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

#if canImport(Glibc)
import Glibc
#endif
