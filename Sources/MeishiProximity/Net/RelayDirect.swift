import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Transit v2 (docs/PROTOCOL.md §5.8): the race between direct connections to the other side's
/// hints, its connections to ours, and the transit relay. Every connection sends its role line
/// and checks the other's; the dialer (the leader) takes the first that passes and says `go` on it,
/// `nevermind` on later ones; the listener takes the one `go` arrives on. The rest are closed.
/// A direct connection that is open but has not finished its role lines yet holds the relay back
/// (not dialled, or at the dialer not chosen) for up to `directGrace`: on a LAN it is about to
/// win, and the session should not go round through a server.
final class TransitRace: Sendable {
    /// What the connections check, known once the other side's nonce is in.
    struct Terms: Sendable {
        let dialer: Bool
        let own: [UInt8]
        let peer: [UInt8]
    }

    /// A connection of the race and what carries it.
    struct Entry: Sendable {
        let connection: ExchangeTransport.Connection
        let path: RelayPath
        let name: String
    }

    private struct State {
        var terms: Terms?
        var entries: [ObjectIdentifier: Entry] = [:]
        var chosen: ObjectIdentifier?
        var over = false
        var inbound = 0
        /// Outgoing attempts (direct and the relay) neither failed nor closed.
        var alive = 0
        var relayStarted = false
        var relayFailure: RelayFailure?
        var listener: Channel?
        /// Direct connections open (connected or accepted) and not closed: while there are some and
        /// none carries the session, the relay waits.
        var proving: Set<ObjectIdentifier> = []
        /// At the dialer: the relay's connection, whose role line checked while a direct
        /// connection was still proving itself; released when none is left or the grace is over.
        var held: Channel?
    }

    /// How long the relay waits before it is dialled while direct attempts are in progress and
    /// none has connected: on a LAN a direct connection is open within a few milliseconds.
    let relayHeadStart: Double
    /// How long a direct connection that is open but still proving itself holds the relay back.
    let directGrace: Double

    /// What `offer` decided for a connection whose role line checked at the dialer.
    enum Offer: Equatable {
        /// It carries the session: send `go`.
        case won
        /// Another one does, or the race is over: send `nevermind`.
        case lost
        /// The relay waits for a direct connection still proving itself (`Release` comes later).
        case held
    }

    /// Fired into the held relay connection when it may claim the session after all.
    struct Release: Sendable {}

    /// Connections the other side may open to our hints.
    static let maximumInbound = 8
    private let state = NIOLockedValueBox(State())
    let winners: AsyncStream<Entry>
    private let announce: AsyncStream<Entry>.Continuation

    /// Told when the relay's connection is held for a direct one (`--verbose`).
    private let onHold: @Sendable () -> Void

    init(relayHeadStart: Double = Relay.relayHeadStart, directGrace: Double = Relay.directGrace, onHold: @escaping @Sendable () -> Void = {}) {
        self.relayHeadStart = relayHeadStart
        self.directGrace = directGrace
        self.onHold = onHold
        (winners, announce) = AsyncStream.makeStream(of: Entry.self)
    }

    var terms: Terms? { state.withLockedValue { $0.terms } }

    /// The port the other side's direct connections come to, once listening.
    var listeningPort: Int? { state.withLockedValue { $0.listener?.localAddress?.port } }

    /// The other side is known: connections waiting for the terms go on.
    func begin(token: String, dialer: Bool) {
        let waiting = state.withLockedValue { s -> [Channel] in
            s.terms = Terms(dialer: dialer, own: TransitHandshake.roleLine(token: token, dialer: dialer),
                            peer: TransitHandshake.roleLine(token: token, dialer: !dialer))
            return s.entries.values.map(\.connection.channel)
        }
        for channel in waiting { channel.pipeline.fireUserInboundEventTriggered(TransitRaceHandler.TermsKnown()) }
    }

    /// The listener for the other side's direct connections, closed when the race ends.
    func listening(on channel: Channel) {
        let over = state.withLockedValue { s in
            s.listener = channel
            return s.over
        }
        if over { channel.close(promise: nil) }
    }

    /// Takes part a new connection (in its channel's initializer, before it reads); false when the
    /// race is over or the other side opened too many: the caller closes it.
    func register(_ connection: ExchangeTransport.Connection, path: RelayPath, name: String, inbound: Bool, outgoing: Bool) -> Bool {
        let channel = connection.channel
        let taken = state.withLockedValue { s -> Bool in
            guard !s.over, !inbound || s.inbound < Self.maximumInbound else { return false }
            if inbound { s.inbound += 1 }
            s.entries[ObjectIdentifier(channel)] = Entry(connection: connection, path: path, name: name)
            return true
        }
        guard taken else {
            if outgoing { attemptEnded(nil) }
            return false
        }
        channel.closeFuture.whenComplete { _ in
            let lost = self.state.withLockedValue { s -> Bool in s.chosen != ObjectIdentifier(channel) }
            if lost && outgoing { self.attemptEnded(nil) }
        }
        return true
    }

    /// An outgoing attempt is about to start.
    func attemptStarted(relay: Bool) {
        state.withLockedValue { s in
            s.alive += 1
            if relay { s.relayStarted = true }
        }
    }

    /// An outgoing attempt failed or its connection closed without being chosen; once the relay
    /// was tried and nothing outgoing is left, the race is lost.
    func attemptEnded(_ relayFailure: RelayFailure?) {
        let lost = state.withLockedValue { s -> Bool in
            s.alive -= 1
            if let relayFailure { s.relayFailure = relayFailure }
            return s.relayStarted && s.alive == 0 && s.chosen == nil
        }
        if lost { announce.finish() }
    }

    /// Why the relay did not pair us, told before its connection closes.
    func noteRelayFailure(_ failure: RelayFailure) {
        state.withLockedValue { $0.relayFailure = failure }
    }

    /// Whether the relay is still held back, `elapsed` seconds into the race: while a direct
    /// connection is open and proving itself (up to `directGrace`); before any is open, for
    /// `relayHeadStart` while direct attempts are in progress or the other side may dial ours.
    func relayWaits(elapsed: Double, othersMayDial: Bool) -> Bool {
        state.withLockedValue { s in
            if !s.proving.isEmpty { return elapsed < directGrace }
            return elapsed < relayHeadStart && (s.alive > 0 || othersMayDial)
        }
    }

    /// A direct connection is open (dialled and connected, or accepted): it holds the relay back
    /// until it closes or the race is won.
    func directOpened(_ channel: Channel) {
        let id = ObjectIdentifier(channel)
        let added = state.withLockedValue { s in !s.over && s.chosen == nil && s.proving.insert(id).inserted }
        guard added else { return }
        channel.closeFuture.whenComplete { _ in
            let release = self.state.withLockedValue { s -> Channel? in
                s.proving.remove(id)
                return s.proving.isEmpty && s.chosen == nil ? s.held : nil
            }
            release?.pipeline.fireUserInboundEventTriggered(Release())
        }
    }
    var isOver: Bool { state.withLockedValue { $0.over || $0.chosen != nil } }
    var relayFailure: RelayFailure? { state.withLockedValue { $0.relayFailure } }

    /// At the dialer: `channel`'s role line checked. A direct connection takes the session at once;
    /// the relay's does unless a direct connection is still proving itself, when it is held until
    /// none is left or `directGrace` is over (then `Release` is fired into it and it claims).
    func offer(_ channel: Channel) -> Offer {
        let id = ObjectIdentifier(channel)
        let decided = state.withLockedValue { s -> (Offer, Entry?) in
            guard !s.over, s.chosen == nil, let entry = s.entries[id] else { return (.lost, nil) }
            if entry.path == .relay, !s.proving.isEmpty {
                s.held = channel
                return (.held, nil)
            }
            s.chosen = id
            return (.won, entry)
        }
        switch decided {
        case (.won, let entry?):
            announce.yield(entry)
            announce.finish()
        case (.held, _):
            onHold()
            channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(directGrace * 1e9))) {
                channel.pipeline.fireUserInboundEventTriggered(Release())
            }
        default:
            break
        }
        return decided.0
    }

    /// The first connection to claim the session takes it; false for every later one.
    func claim(_ channel: Channel) -> Bool {
        let won = state.withLockedValue { s -> Entry? in
            guard !s.over, s.chosen == nil, let entry = s.entries[ObjectIdentifier(channel)] else { return nil }
            s.chosen = ObjectIdentifier(channel)
            return entry
        }
        guard let won else { return false }
        announce.yield(won)
        announce.finish()
        return true
    }

    /// Ends the race without a winner (its time is up).
    func giveUp() { announce.finish() }

    /// Ends the race: the listener and every connection but the one chosen are closed.
    func end() {
        let (losers, listener) = state.withLockedValue { s -> ([Entry], Channel?) in
            s.over = true
            let losers = s.entries.filter { $0.key != s.chosen }.map(\.value)
            s.entries = s.entries.filter { $0.key == s.chosen }
            return (losers, s.listener)
        }
        announce.finish()
        listener?.close(promise: nil)
        for loser in losers {
            // NIO traps when a live connection's writer is released unfinished (ExchangeTransport.Accepted).
            loser.connection.outbound.finish()
            loser.connection.channel.close(promise: nil)
        }
    }
}

/// One connection's transit v2 handshake: through the relay first its request and `ok`, then the
/// role lines both ways, then `go` (the dialer sends it, the listener waits for it). Holds back
/// every byte until then; passes the rest on and leaves the pipeline on the connection chosen.
final class TransitRaceHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Fired into every connection of the race when the terms are known.
    struct TermsKnown: Sendable {}

    private enum Step { case relayAnswer, role, go, held, done }
    private static let maximumLine = 160
    private static let go = Array("go\n".utf8), nevermind = Array("nevermind\n".utf8)

    let race: TransitRace
    let relayRequest: [UInt8]?
    let relayFailed: (@Sendable (RelayFailure) -> Void)?
    private var step: Step
    private var started = false
    private var sentRole = false
    private var pending: [UInt8] = []

    /// `relayRequest`: through the transit relay, its `please relay …` line; nil for a direct connection.
    init(race: TransitRace, relayRequest: [UInt8]?, relayFailed: (@Sendable (RelayFailure) -> Void)? = nil) {
        self.race = race
        self.relayRequest = relayRequest
        self.relayFailed = relayFailed
        step = relayRequest == nil ? .role : .relayAnswer
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        if let relayRequest {
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: relayRequest)), promise: nil)
        } else {
            race.directOpened(context.channel)
        }
        advance(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard step != .done else { return context.fireChannelRead(data) }
        pending += unwrapInboundIn(data).readableBytesView
        advance(context)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is TermsKnown {
            advance(context)
        } else if event is TransitRace.Release {
            // The relay was held for a direct connection that has closed or not finished in time.
            guard step == .held else { return }
            if race.claim(context.channel) {
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: Self.go)), promise: nil)
                finish(context)
            } else {
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: Self.nevermind)), promise: nil)
                refuse(context, nil)
            }
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if step == .relayAnswer { relayFailed?(.transitRefused(.closedBeforePairing)) }
        step = .done
        context.fireChannelInactive()
    }

    private func advance(_ context: ChannelHandlerContext) {
        while started, step != .done {
            // A connection from the other side may come before its nonce: it waits for `TermsKnown`.
            guard step == .relayAnswer || race.terms != nil else { return }
            if step != .relayAnswer, !sentRole, let terms = race.terms {
                sentRole = true
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: terms.own)), promise: nil)
            }
            guard let end = pending.firstIndex(of: UInt8(ascii: "\n")) else {
                if pending.count > Self.maximumLine { refuse(context, .notARelayLine) }
                return
            }
            let line = Array(pending[...end])
            pending.removeFirst(end + 1)
            switch step {
            case .relayAnswer:
                guard line == Array("ok\n".utf8) else {
                    return refuse(context, .answered(String(decoding: line.dropLast().prefix(64), as: UTF8.self)))
                }
                step = .role
            case .role:
                guard let terms = race.terms, line == terms.peer else { return refuse(context, nil) }
                guard terms.dialer else {
                    step = .go
                    continue
                }
                switch race.offer(context.channel) {
                case .won:
                    context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: Self.go)), promise: nil)
                    return finish(context)
                case .lost:
                    context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: Self.nevermind)), promise: nil)
                    return refuse(context, nil)
                case .held:
                    step = .held
                    return
                }
            case .go:
                guard line == Self.go, race.claim(context.channel) else { return refuse(context, nil) }
                return finish(context)
            case .held, .done:
                return
            }
        }
    }

    /// This connection will not carry the session; through the relay, why it did not pair us.
    private func refuse(_ context: ChannelHandlerContext, _ relayRefusal: TransitRefusal?) {
        if step == .relayAnswer, let relayRefusal { relayFailed?(.transitRefused(relayRefusal)) }
        step = .done
        context.close(promise: nil)
    }

    private func finish(_ context: ChannelHandlerContext) {
        step = .done
        if !pending.isEmpty { context.fireChannelRead(wrapInboundOut(ByteBuffer(bytes: pending))) }
        pending = []
        context.pipeline.syncOperations.removeHandler(self, promise: nil)
    }
}

/// Acknowledges at once what comes through the transit relay. The relay (magic-wormhole's, in
/// Python) does not turn Nagle's algorithm off, so when the other side sends two short lines in a
/// row (its role line, then `go`) the second waits in the relay until our ACK of the first, which
/// Linux delays by up to 40 ms when we have nothing to send back. `TCP_QUICKACK` is not sticky:
/// it is set again after every read.
final class QuickAcks: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private static let option = ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: CInt(TCP_QUICKACK)))

    private func arm(_ context: ChannelHandlerContext) {
        try? context.channel.syncOptions?.setOption(Self.option, value: 1)
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        arm(context)
        context.fireChannelRead(data)
    }
}

extension Relay {
    /// How long the relay waits for a direct connection to open (`TransitRace.relayHeadStart`).
    /// magic-wormhole waits 2 s, which an isolated network pays in full every time; a direct
    /// connection on a LAN opens within a few milliseconds, so 0.1 s keeps the relay out of
    /// LAN exchanges at a tenth of the cost.
    static let relayHeadStart = 0.1
    /// How long an open direct connection still proving itself holds the relay back
    /// (`TransitRace.directGrace`): the other side starts its race up to a mailbox round trip later.
    static let directGrace = 1.0

    /// Listens for the other side's direct connections on every IPv4 address; the hints to offer
    /// (this machine's IPv4 addresses but loopback, at most `MailboxSession.maximumHints`).
    static func listenDirect(_ race: TransitRace) async -> [DirectHint] {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 8)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture { () throws -> Void in
                    try child.pipeline.syncOperations.addHandler(TransitRaceHandler(race: race, relayRequest: nil))
                    let connection = try ExchangeTransport.Connection(wrappingChannelSynchronously: child)
                    let from = child.remoteAddress.map { "\(ExchangeTransport.plainAddress($0.ipAddress ?? "?")):\($0.port ?? 0)" } ?? "?"
                    if !race.register(connection, path: .direct, name: "the direct connection from \(from)", inbound: true, outgoing: false) {
                        connection.outbound.finish()
                        child.close(promise: nil)
                    }
                }
            }
        guard let server = try? await bootstrap.bind(host: "0.0.0.0", port: 0).get(), let port = server.localAddress?.port else { return [] }
        race.listening(on: server)
        return ExchangeTransport.localAddresses().compactMap { DirectHint(host: $0, port: port) }.prefix(MailboxSession.maximumHints).map { $0 }
    }

    /// Runs the race once both sides' hints and nonces are in: direct attempts to the other side's
    /// hints at once, the relay once no direct connection opened within the race's head start (at
    /// once when there is nothing direct to wait for) or the direct ones opened did not finish
    /// within its grace; the first connection chosen carries the session. Ends the race either way.
    static func race(_ race: TransitRace, mailbox: MailboxSession, token: String, dialer: Bool, servers: RelayServers,
                     until deadline: Double, participant: ExchangeParticipant) async throws(ExchangeFailure) -> TransitRace.Entry {
        defer { race.end() }
        race.begin(token: token, dialer: dialer)
        let timeLeft: @Sendable () -> TimeAmount = { TimeAmount.nanoseconds(Int64(max(0.5, deadline - ExchangeTransport.now()) * 1e9)) }
        for hint in mailbox.peerHints ?? [] {
            participant.events(.step(.tryingDirect(hint.description)))
            race.attemptStarted(relay: false)
            Task { await dial(hint.host, hint.port, race: race, path: .direct, name: "the direct connection to \(hint)", timeout: timeLeft()) }
        }
        let othersMayDial = !(mailbox.hints ?? []).isEmpty
        let relay = Task {
            let start = ExchangeTransport.now()
            while !race.isOver, race.relayWaits(elapsed: ExchangeTransport.now() - start, othersMayDial: othersMayDial) {
                try? await Task.sleep(for: .milliseconds(5))
            }
            guard !race.isOver else { return }
            participant.events(.step(.connectingToTransit(servers)))
            race.attemptStarted(relay: true)
            await dial(servers.transit.host, servers.transit.port, race: race, path: .relay, name: "the transit relay \(servers.transit)",
                       timeout: timeLeft(), relayRequest: TransitHandshake.request(token: token, side: mailbox.side), transit: servers.transit)
        }
        let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: timeLeft()) { race.giveUp() }
        defer {
            timer.cancel()
            relay.cancel()
        }
        for await winner in race.winners { return winner }
        throw .relay(race.relayFailure ?? .transitRefused(.nobodyPairedInTime))
    }

    /// One outgoing attempt of the race; `relayRequest` and `transit` for the transit relay.
    static func dial(_ host: String, _ port: Int, race: TransitRace, path: RelayPath, name: String, timeout: TimeAmount,
                     relayRequest: [UInt8]? = nil, transit: TransitAddress? = nil) async {
        let relayFailed: (@Sendable (RelayFailure) -> Void)? = relayRequest.map { _ in { @Sendable failure in race.noteRelayFailure(failure) } }
        do {
            let _: Void = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(timeout)
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture { () throws -> Void in
                        // The relay's refusal is noted by the handler; the attempt ends when the connection closes (`register`).
                        let handler = TransitRaceHandler(race: race, relayRequest: relayRequest, relayFailed: relayFailed)
                        if relayRequest != nil { try channel.pipeline.syncOperations.addHandler(QuickAcks()) }
                        try channel.pipeline.syncOperations.addHandler(handler)
                        let connection = try ExchangeTransport.Connection(wrappingChannelSynchronously: channel)
                        if !race.register(connection, path: path, name: name, inbound: false, outgoing: true) {
                            connection.outbound.finish()
                            channel.close(promise: nil)
                        }
                    }
                }
        } catch {
            race.attemptEnded(transit.map { .transitUnreachable($0, ExchangeTransport.connectProblem(error)) })
        }
    }
}
