import MeishiCard
import MeishiCrypto
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The driver of one exchange session on one TCP connection: it feeds the session the frames
/// that arrive, answers with what the session returns, asks the person, signs the card when it
/// is due, then runs the post-card phases in order (`drive`). Timers: a step limit per frame, and
/// a shorter first-frame limit for a listener's new connection.
extension ExchangeTransport {
    /// How long a listener waits for a new connection's first frame (an honest dialer sends it at once).
    static let firstFrameTimeout: TimeAmount = .seconds(2)

    /// The frame type of the discovery introduction: 0x00 followed by the dialer's session id.
    static let introductionType: UInt8 = 0x00

    /// One session on one connection, post-card phases included; closes the connection at the end.
    static func run(_ session: ExchangeSession, on connection: Connection, participant: ExchangeParticipant,
                    stepTimeout: TimeAmount, address: String, budget: GuessBudget? = nil, introduce: (own: [UInt8], peer: [UInt8])? = nil,
                    expectIntroduction: (own: [UInt8], candidates: [[UInt8]])? = nil) async throws(ExchangeFailure) -> ExchangeResult {
        let channel = connection.channel
        // A try taken from `budget` before the first frame that reveals a code sample (§5.4).
        let holdsTry = NIOLockedValueBox(false)
        defer { if holdsTry.withLockedValue({ $0 }) { budget?.settle() } }
        let timedOut = NIOLockedValueBox(false)
        var timer: Scheduled<Void>?
        func arm(_ t: TimeAmount) {
            timer?.cancel()
            timer = channel.eventLoop.scheduleTask(in: t) {
                timedOut.withLockedValue { $0 = true }
                channel.close(promise: nil)
            }
        }
        defer { timer?.cancel() }
        do {
            return try await connection.executeThenClose { inbound, outbound in
                // What the session reacts to arrives on one stream: the peer's frames, read one at a
                // time when asked for (`want`), and the person's answer about the digits, asked
                // meanwhile, so a DECLINE or a closed connection ends the question at once.
                let (inputs, feed) = AsyncStream.makeStream(of: DriverInput.self)
                let (requests, want) = AsyncStream.makeStream(of: Void.self)
                let reader = Task {
                    var frames = FrameReader(iterator: inbound.makeAsyncIterator())
                    // The stream ends with the connection: later asks read `.closed(nil)`.
                    defer { feed.finish() }
                    for await _ in requests {
                        do {
                            guard let frame = try await frames.next() else { break }
                            feed.yield(.frame(frame))
                        } catch {
                            feed.yield(.closed(error))
                            return
                        }
                    }
                    feed.yield(.closed(nil))
                }
                defer {
                    want.finish()
                    reader.cancel()
                }
                var pending = inputs.makeAsyncIterator()
                var frameRequested = false
                /// The next input; a frame is asked for only when none is outstanding.
                func nextInput() async -> DriverInput {
                    if !frameRequested {
                        frameRequested = true
                        want.yield(())
                    }
                    let input = await pending.next() ?? .closed(nil)
                    if case .frame = input { frameRequested = false }
                    return input
                }
                func send(_ bodies: [[UInt8]]) async throws {
                    for body in bodies { try await outbound.write(ByteBuffer(bytes: FrameCodec.encode(body))) }
                }
                // A listener gives a new connection only `firstFrameTimeout` to say something: an
                // idle connection must not hold the one serving slot for a whole step.
                var heardPeer = false
                func firstFrameArrived() {
                    if !heardPeer, session.role == .listener { arm(stepTimeout) }
                    heardPeer = true
                }
                func lost(before what: String) -> ExchangeFailure {
                    .connectionLost(timedOut.withLockedValue { $0 } ? "(timed out waiting for \(what))" : "before \(what)")
                }
                /// The peer's next frame, through the session; what it returns is sent.
                func next(_ what: String) async throws -> ExchangeSession.Event? {
                    let frame: [UInt8]
                    switch await nextInput() {
                    case .frame(let f): frame = f
                    case .closed(let error?): throw error
                    case .closed(nil): throw lost(before: what)
                    case .person: preconditionFailure("the person is asked only while the driver waits for the answer")
                    }
                    return try await handle(frame)
                }
                func handle(_ frame: [UInt8]) async throws -> ExchangeSession.Event? {
                    firstFrameArrived()
                    let revealedBefore = session.codeRevealed
                    func takeTry() throws {
                        // What we are about to send (a MISMATCH too) lets the peer compute or test the code.
                        guard !revealedBefore, session.codeRevealed, let budget else { return }
                        guard budget.reserve() else { throw ExchangeFailure.tooManyGuesses(budget.spent) }
                        holdsTry.withLockedValue { $0 = true }
                    }
                    let step: (send: [[UInt8]], event: ExchangeSession.Event?)
                    do { step = try session.receive(frame) } catch {
                        try takeTry()
                        throw error
                    }
                    try takeTry()
                    try await send(step.send)
                    return step.event
                }
                do {
                    arm(session.role == .listener ? min(stepTimeout, firstFrameTimeout) : stepTimeout)
                    if let ids = introduce {
                        try await send([[introductionType] + ids.own])
                        session.bindDiscovery(dialerID: ids.own, listenerID: ids.peer)
                    }
                    if let ids = expectIntroduction {
                        var first: [UInt8]?
                        switch await nextInput() {
                        case .frame(let f): first = f
                        case .closed(let error?): throw error
                        default: first = nil
                        }
                        guard let first, first.first == introductionType,
                              ids.candidates.contains(Array(first.dropFirst())) else {
                            throw ExchangeFailure.protocolFailure(.unexpectedMessage("not the peer chosen by discovery"))
                        }
                        firstFrameArrived()
                        session.bindDiscovery(dialerID: Array(first.dropFirst()), listenerID: ids.own)
                    }
                    participant.trace("connected to \(address) as the \(session.role == .dialer ? "dialer" : "listener")"
                                      + (participant.code != nil ? "; the code authenticates the session (CPace)" : ""))
                    if let hello = session.start() { try await send([hello]) }
                    var event: ExchangeSession.Event?
                    while !session.handshakeComplete { event = try await next("the handshake") }
                    participant.trace("handshake complete: the session is sealed")
                    let confirmation: ExchangeResult.Confirmation
                    if case .codeReady(let code)? = event {
                        // The person may take a while to compare codes: no step timer meanwhile, but
                        // the peer's CONFIRM is taken in, and its DECLINE or a closed connection ends
                        // the question at once (the prompt is left to the application to drop).
                        timer?.cancel()
                        let asking = Task { feed.yield(.person(await participant.confirmCode(code))) }
                        var answer: Bool?
                        while answer == nil {
                            switch await nextInput() {
                            case .person(let matches): answer = matches
                            case .frame(let frame): _ = try await handle(frame)
                            case .closed(let error?): asking.cancel(); throw error
                            case .closed(nil): asking.cancel(); throw lost(before: "the other person's confirmation")
                            }
                        }
                        let matches = answer!
                        arm(stepTimeout)
                        try await send([session.confirm(matches)])
                        guard matches else { throw ExchangeFailure.declinedLocally }
                        confirmation = .digits(code)
                    } else if case .codeConfirmed? = event {
                        participant.log("the codes match: the other side typed the same code")
                        confirmation = .pake
                    } else {
                        throw ExchangeFailure.protocolFailure(.unexpectedMessage("no code"))
                    }
                    while !session.confirmedByPeer { _ = try await next("the other person's confirmation") }
                    participant.trace("the other side confirmed the code")
                    let (card, key) = try participant.card()
                    try await send([session.card(card, signedBy: key)])
                    participant.trace("sent my card, signed now (\(card.bytes.count) bytes)")
                    while session.peerCard == nil { _ = try await next("the peer's card") }
                    participant.trace("received the other card (\(session.peerCard!.bytes.count) bytes): signature, DID and time verified")
                    try await send([session.acknowledge()])
                    while !session.acknowledgedByPeer { _ = try await next("the peer's acknowledgement") }
                    participant.trace("both cards acknowledged")
                    // The cards are exchanged and both sides will store them: what follows (post-card
                    // phases, in order) can fail without undoing that.
                    let context = PostCardContext(role: session.role, peerCard: session.peerCard!, transcriptHash: session.transcriptHash!,
                                                  codeConfirmedByPAKE: session.codeConfirmedByPAKE)
                    let phases = participant.phases()
                    for phase in phases {
                        let started = now()
                        await drive(phase, context: context, session: session, send: send, next: next)
                        participant.trace("\(phase.summary) in \(Int(((now() - started) * 1000).rounded())) ms")
                    }
                    return ExchangeResult(peerCard: session.peerCard!, confirmation: confirmation, peerAddress: address, phases: phases)
                } catch let e as ExchangeError {
                    // Tell the peer why before the connection closes (a code mismatch in plain text:
                    // there is no shared key to seal with).
                    if e == .codesDoNotMatch, session.role == .listener { try? await send([ExchangeSession.mismatchFrame]) }
                    if let reject = session.reject(e.description) { try? await send([reject]) }
                    throw e
                }
            }
        } catch let e as ExchangeFailure {
            throw e
        } catch let e as ExchangeError {
            throw .protocolFailure(e)
        } catch {
            if timedOut.withLockedValue({ $0 }) { throw .timedOut("peer \(address) too slow") }
            throw .connectionLost("(\(error))")
        }
    }
}

extension ExchangeTransport {
    /// Runs one post-card phase (docs/PROTOCOL.md §8) on an exchanged session: feeds it the
    /// peer's messages of its inner types and sends what it answers. Whatever the peer does the
    /// phase ends with an outcome of its own; nothing here undoes the cards.
    static func drive(_ phase: any PostCardPhase, context: PostCardContext, session: ExchangeSession,
                      send: ([[UInt8]]) async throws -> Void, next: (String) async throws -> ExchangeSession.Event?) async {
        let owned = type(of: phase).innerTypes
        func seal(_ messages: [PostCardMessage]) -> [[UInt8]] { messages.map { session.postCard(type: $0.type, content: $0.content) } }
        do {
            try await send(seal(await phase.start(context)))
            while !phase.isFinished {
                guard case .postCard(let type, let content)? = try await next("the peer's \(phase.name)") else {
                    throw PostCardInterruption.unexpected(.unexpectedMessage("a message outside the post-card phases"))
                }
                guard owned.contains(type) else {
                    throw PostCardInterruption.unexpected(.unexpectedMessage("post-card message \(type) during the \(phase.name)"))
                }
                try await send(seal(await phase.receive(PostCardMessage(type: type, content: content))))
            }
        } catch let e as PostCardInterruption {
            // A well-sealed frame outside the phase: the phase may still tell the peer why it stops.
            try? await send(seal(phase.interrupted(e)))
        } catch let e as ExchangeError {
            _ = phase.interrupted(.broken(e))
        } catch let e as ExchangeFailure {
            _ = phase.interrupted(.connectionLost(describe(e)))
        } catch {
            _ = phase.interrupted(.connectionLost("connection lost (\(error))"))
        }
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

/// One input of the driver: a frame of the peer, the end of its stream, or the person's answer.
enum DriverInput: Sendable {
    case frame([UInt8])
    /// The connection ended: an error, or nil for an orderly close.
    case closed((any Error)?)
    /// Whether the person said the digits match.
    case person(Bool)
}
