import MeishiCard
import MeishiCrypto
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// The exchange through a magic-wormhole mailbox server and transit relay (docs/PROTOCOL.md
/// §5.8): meet on the mailbox by the code's nameplate, connect through the relay, then run the
/// same session as on the LAN over the relayed bytes (`ExchangeTransport.run`).
enum Relay {
    typealias WebSocket = NIOAsyncChannel<WebSocketFrame, WebSocketFrame>

    static func exchange(_ servers: RelayServers, timeoutSeconds: Int64, stepTimeout: TimeAmount, participant: ExchangeParticipant,
                         budget: GuessBudget) async throws(ExchangeFailure) -> ExchangeResult {
        guard let code = participant.code else { preconditionFailure("--relay needs a code (checked by the caller)") }
        let deadline = ExchangeTransport.now() + Double(timeoutSeconds)
        // Transit v2: listen for the other side's direct connections and offer where (§5.8).
        let race = servers.direct ? TransitRace(onHold: { participant.events(.step(.relayHeld(servers, grace: Relay.directGrace))) }) : nil
        defer { race?.end() }
        var hints: [DirectHint]?
        if let race {
            let offered = await listenDirect(race)
            participant.events(.step(.offeringDirect(offered.map(\.description))))
            hints = offered
        }
        var mailbox = MailboxSession(nameplate: code.nameplate, hints: hints)
        participant.events(.step(.connectingToMailbox(servers, side: mailbox.side)))
        let socket = try await openWebSocket(servers.mailbox, timeout: min(stepTimeout, .seconds(max(1, timeoutSeconds))))
        participant.events(.step(.claimingNameplate(code.nameplate, appID: MailboxSession.appID)))
        participant.events(.waitingOnMailbox)
        let (transit, dialer) = try await meetAndConnect(&mailbox, on: socket, deadline: deadline, servers: servers, stepTimeout: stepTimeout,
                                               race: race, participant: participant)
        let role: ExchangeSession.Role = dialer ? .dialer : .listener
        participant.events(.step(transit.path == .direct ? .directPaired(transit.name, role: role) : .transitPaired(servers, role: role)))
        let session = participant.session(dialer ? .dialer : .listener)
        do {
            var result = try await ExchangeTransport.run(session, on: transit.connection, participant: participant, stepTimeout: stepTimeout,
                                                         address: transit.name, budget: budget)
            result.path = transit.path
            return result
        } catch .connectionLost(let loss) {
            // One session per run: the connection's end is the run's, and the person is told which connection it was.
            throw .relay(.sessionLost(path: transit.name, loss))
        } catch .protocolFailure(.codeExpected), .protocolFailure(.codeNotExpected) {
            // Through the mailbox both sides came with the code: a first frame of the plain
            // handshake is not a meishi without --code but a side that does not speak the protocol.
            throw .relay(.peerNotMeishi)
        }
    }

    /// Waits on the mailbox for the other side, then connects to the transit relay (transit v1);
    /// closes the mailbox either way.
    static func meet(_ mailbox: inout MailboxSession, on socket: WebSocket, deadline: Double, servers: RelayServers,
                     stepTimeout: TimeAmount, participant: ExchangeParticipant) async throws(ExchangeFailure)
        -> (ExchangeTransport.Connection, Bool) {
        let (entry, dialer) = try await meetAndConnect(&mailbox, on: socket, deadline: deadline, servers: servers, stepTimeout: stepTimeout,
                                                       participant: participant)
        return (entry.connection, dialer)
    }

    /// Waits on the mailbox for the other side, then connects to it (transit v2's race, or the
    /// relay alone); closes the mailbox either way.
    static func meetAndConnect(_ mailbox: inout MailboxSession, on socket: WebSocket, deadline: Double, servers: RelayServers,
                     stepTimeout: TimeAmount, race: TransitRace? = nil, participant: ExchangeParticipant) async throws(ExchangeFailure)
        -> (TransitRace.Entry, Bool) {
        let expired = NIOLockedValueBox(false)
        let timer = socket.channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(max(0, deadline - ExchangeTransport.now()) * 1e9))) {
            expired.withLockedValue { $0 = true }
            socket.channel.close(promise: nil)
        }
        defer { timer.cancel() }
        let nameplate = mailbox.nameplate
        var state = mailbox
        let outcome: Result<(TransitRace.Entry, Bool), ExchangeFailure>
        do {
            outcome = try await socket.executeThenClose { inbound, outbound -> Result<(TransitRace.Entry, Bool), ExchangeFailure> in
                @Sendable func send(_ text: [UInt8]) async throws {
                    try await outbound.write(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer(bytes: text)))
                }
                for m in state.opening() { try await send(m) }
                var met: (token: String, dialer: Bool)?
                reading: for try await frame in inbound {
                    switch frame.opcode {
                    case .text:
                        let events: [MailboxSession.Event]
                        do throws(RelayFailure) { events = try state.receive(Array(frame.unmaskedData.readableBytesView)) } catch {
                            return .failure(.relay(error))
                        }
                        for event in events {
                            switch event {
                            case .send(let text): try await send(text)
                            case .met(let token, let dialer): met = (token, dialer)
                            }
                        }
                        if met != nil { break reading }
                    case .ping:
                        try await outbound.write(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData))
                    case .connectionClose:
                        break reading
                    default:
                        break
                    }
                }
                guard let met else {
                    if expired.withLockedValue({ $0 }) { return .failure(.relay(.peerNeverCame(nameplate))) }
                    return .failure(.relay(.mailboxLost(.closed(before: .otherSide))))
                }
                let until = min(deadline, ExchangeTransport.now() + Double(stepTimeout.nanoseconds) / 1e9)
                let transit: Result<TransitRace.Entry, ExchangeFailure>
                do throws(ExchangeFailure) {
                    if let race, state.racesDirect {
                        participant.events(.step(.racingDirect(servers, side: state.peer?.side ?? "", hints: state.peerHints?.count ?? 0)))
                        transit = .success(try await Relay.race(race, mailbox: state, token: met.token, dialer: met.dialer, servers: servers,
                                                                until: until, participant: participant))
                    } else {
                        race?.end()
                        participant.events(.step(.peerOnMailbox(servers, side: state.peer?.side ?? "")))
                        transit = .success(TransitRace.Entry(connection: try await connectTransit(servers.transit, token: met.token, side: state.side, until: until),
                                                             path: .relay, name: "the transit relay \(servers.transit)"))
                    }
                } catch {
                    transit = .failure(error)
                }
                if let close = state.closing(mood: (try? transit.get()) != nil ? "happy" : "errory") { try? await send(close) }
                try? await outbound.write(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: ByteBuffer(bytes: [0x03, 0xE8])))
                return transit.map { ($0, met.dialer) }
            }
        } catch {
            if expired.withLockedValue({ $0 }) {
                await leave(state, servers: servers, mood: "lonely")
                throw .relay(.peerNeverCame(nameplate))
            }
            throw .relay(mailboxFailure(error))
        }
        mailbox = state
        if case .failure(let failure) = outcome, state.peer == nil {
            switch failure {
            case .relay(.peerNeverCame): await leave(state, servers: servers, mood: "lonely")
            case .relay(.peerNotMeishi), .relay(.refusedByMailbox(.messageTooLarge)): await leave(state, servers: servers, mood: "errory")
            default: break
            }
        }
        return try outcome.get()
    }

    /// Leaves the mailbox as `state`'s side from a fresh connection (the run's own is closed or
    /// spoilt): releases the nameplate and closes the mailbox, so the same code works at once for
    /// the next try. Bounded to 2 s; a server that does not answer is left as it is.
    static func leave(_ state: MailboxSession, servers: RelayServers, mood: String) async {
        guard let socket = try? await openWebSocket(servers.mailbox, timeout: .seconds(2)) else { return }
        let timer = socket.channel.eventLoop.scheduleTask(in: .seconds(2)) { socket.channel.close(promise: nil) }
        defer { timer.cancel() }
        let waitFor = state.mailbox == nil ? "released" : "closed"
        _ = try? await socket.executeThenClose { inbound, outbound in
            for m in state.leaving(mood: mood) {
                try await outbound.write(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer(bytes: m)))
            }
            for try await frame in inbound where frame.opcode == .text {
                if let json = try? StrictJSONParser.parse(Array(frame.unmaskedData.readableBytesView)),
                   case .string(let type)? = json["type"], type == waitFor || type == "error" { break }
            }
            try? await outbound.write(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: ByteBuffer(bytes: [0x03, 0xE8])))
        }
    }

    /// What an error reading the mailbox's WebSocket means: a message over the frame limit (the
    /// other side's, relayed, or the server's own), or a connection that failed.
    static func mailboxFailure(_ error: any Error) -> RelayFailure {
        switch error {
        case NIOWebSocketError.invalidFrameLength, NIOWebSocketFrameAggregator.Error.accumulatedFrameSizeIsTooLarge,
             NIOWebSocketFrameAggregator.Error.tooManyFragments:
            .refusedByMailbox(.messageTooLarge(maximumBytes: maximumMessage))
        default:
            .mailboxLost(.failed(ExchangeTransport.connectProblem(error)))
        }
    }

    /// The longest mailbox message read (a meishi message is under 1 KiB; wormhole's own a few).
    static let maximumMessage = 1 << 16

    /// A WebSocket to the mailbox server (HTTP/1.1 upgrade, RFC 6455). Protocol errors (a message
    /// over `maximumMessage`) end the inbound stream with the error rather than quietly.
    static func openWebSocket(_ url: MailboxURL, timeout: TimeAmount) async throws(ExchangeFailure) -> WebSocket {
        enum Upgrade: Sendable {
            case websocket(WebSocket)
            case refused
        }
        let upgraded: EventLoopFuture<Upgrade>
        // The upgrade has the same time as the connect: a server that accepts the connection and
        // never answers must not hold the run past it (connectTimeout covers only TCP).
        let answered = NIOLockedValueBox(false), gaveUp = NIOLockedValueBox(false)
        do {
            upgraded = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(timeout)
                .connect(host: url.host, port: url.port) { channel in
                    channel.eventLoop.scheduleTask(in: timeout) {
                        guard !answered.withLockedValue({ $0 }) else { return }
                        gaveUp.withLockedValue { $0 = true }
                        channel.close(promise: nil)
                    }
                    return channel.eventLoop.makeCompletedFuture {
                        let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(maxFrameSize: maximumMessage, enableAutomaticErrorHandling: false) { channel, _ in
                            answered.withLockedValue { $0 = true }
                            return channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.addHandler(
                                    NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 1, maxAccumulatedFrameCount: 64, maxAccumulatedFrameSize: maximumMessage))
                                return .websocket(try WebSocket(wrappingChannelSynchronously: channel))
                            }
                        }
                        var headers = HTTPHeaders()
                        headers.add(name: "Host", value: url.host.contains(":") ? "[\(url.host)]:\(url.port)" : "\(url.host):\(url.port)")
                        headers.add(name: "Content-Length", value: "0")
                        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: url.path, headers: headers)
                        var configuration = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: .init(
                            upgradeRequestHead: head, upgraders: [upgrader],
                            notUpgradingCompletionHandler: { channel in
                                answered.withLockedValue { $0 = true }
                                return channel.eventLoop.makeCompletedFuture { .refused }
                            }))
                        // The server's first message (welcome) may arrive with the upgrade's answer.
                        configuration.leftOverBytesStrategy = .forwardBytes
                        return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: configuration)
                    }
                }
        } catch {
            throw .relay(.mailboxUnreachable(url, ExchangeTransport.connectProblem(error)))
        }
        do {
            switch try await upgraded.get() {
            case .websocket(let socket): return socket
            case .refused: throw ExchangeFailure.relay(.notAMailbox(url, nil))
            }
        } catch let e as ExchangeFailure {
            throw e
        } catch {
            throw .relay(.notAMailbox(url, gaveUp.withLockedValue { $0 } ? .noAnswer : ExchangeTransport.connectProblem(error)))
        }
    }

    /// A connection through the transit relay, once it said `ok` (both sides arrived with `token`).
    static func connectTransit(_ address: TransitAddress, token: String, side: String, until deadline: Double) async throws(ExchangeFailure)
        -> ExchangeTransport.Connection {
        let connected: (ExchangeTransport.Connection, EventLoopFuture<Void>)
        do {
            connected = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.nanoseconds(Int64(max(0.5, deadline - ExchangeTransport.now()) * 1e9)))
                .connect(host: address.host, port: address.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let handshake = TransitHandshakeHandler(request: TransitHandshake.request(token: token, side: side),
                                                                paired: channel.eventLoop.makePromise())
                        try channel.pipeline.syncOperations.addHandlers(QuickAcks(), handshake)
                        return (try ExchangeTransport.Connection(wrappingChannelSynchronously: channel), handshake.paired.futureResult)
                    }
                }
        } catch {
            throw .relay(.transitUnreachable(address, ExchangeTransport.connectProblem(error)))
        }
        let (connection, paired) = connected
        let timer = connection.channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(max(0.5, deadline - ExchangeTransport.now()) * 1e9))) {
            connection.channel.close(promise: nil)
        }
        defer { timer.cancel() }
        do {
            try await paired.get()
            return connection
        } catch {
            try? await connection.executeThenClose { _, _ in }  // finished, not dropped (see ExchangeTransport.Accepted)
            if let e = error as? RelayFailure { throw .relay(e) }
            throw .relay(.transitRefused(.closedBeforePairing))
        }
    }
}

/// Sends the transit request once connected and holds back everything until the relay's `ok`;
/// then passes the bytes after it on and leaves the pipeline.
final class TransitHandshakeHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let request: [UInt8]
    let paired: EventLoopPromise<Void>
    private var reply = TransitHandshake()
    private var done = false

    init(request: [UInt8], paired: EventLoopPromise<Void>) {
        self.request = request
        self.paired = paired
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { sendRequest(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        sendRequest(context)
        context.fireChannelActive()
    }

    private func sendRequest(_ context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: request)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return context.fireChannelRead(data) }
        let buffer = unwrapInboundIn(data)
        do {
            guard let rest = try reply.feed(buffer.readableBytesView) else { return }
            done = true
            paired.succeed(())
            if !rest.isEmpty { context.fireChannelRead(wrapInboundOut(ByteBuffer(bytes: rest))) }
            context.pipeline.syncOperations.removeHandler(self, promise: nil)
        } catch {
            done = true
            paired.fail(error)
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            done = true
            paired.fail(RelayFailure.transitRefused(.closedBeforePairing))
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !done {
            done = true
            paired.fail(error)
        }
        context.fireErrorCaught(error)
    }

    /// A connection that never opened (the relay refused it) is torn down without `channelInactive`:
    /// the promise must still be completed (NIO traps on a leaked one in debug builds).
    func handlerRemoved(context: ChannelHandlerContext) {
        if !done {
            done = true
            paired.fail(RelayFailure.transitRefused(.closedBeforePairing))
        }
    }
}
