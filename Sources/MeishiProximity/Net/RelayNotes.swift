import MeishiCard
import MeishiCrypto
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOWebSocket

/// Notes through a magic-wormhole mailbox server and transit relay (docs/PROTOCOL.md §9.8): the
/// pair meets on the mailbox its pair key names for the day, then the delivery of §9.4 (Noise
/// KK, the same frames and answers) runs over the relayed bytes. The WebSocket and the transit
/// connection are `Relay`'s.
enum RelayNotes {
    /// How long a listener waits for the transit relay to pair it with a sender that called.
    static let transitSeconds: Double = 15
    /// How long a listener waits before it connects again to a mailbox it lost.
    static let retrySeconds: Double = 3
    /// How often a listener looks whether the day turned or contacts were added.
    static let reconcileSeconds: Double = 5
    /// How often a sender calls again until the listener answers.
    static let recallSeconds: Double = 4
    /// Calls served at once on one mailbox.
    static let maximumSessions = 4

    // MARK: The sender

    /// Calls on the pair's mailbox of today until the listener answers (before `deadline`), then
    /// returns the connection through the transit relay, paired with it.
    static func meet(_ servers: RelayServers, keys: PairKeys, unixTime: Int64, deadline: Double,
                     steps: @escaping @Sendable (DeliveryStep) -> Void) async throws(MessageDeliveryFailure) -> ExchangeTransport.Connection {
        try await meet(servers, at: keys.relayMeeting(day: RelayMeeting.day(at: unixTime)), unixTime: unixTime, deadline: deadline, steps: steps)
    }

    /// Calls on `meeting`'s mailbox as its sender (whoever knows its id and sides: the pair, or the server).
    static func meet(_ servers: RelayServers, at meeting: RelayMeeting, unixTime: Int64, deadline: Double,
                     steps: @escaping @Sendable (DeliveryStep) -> Void) async throws(MessageDeliveryFailure) -> ExchangeTransport.Connection {
        var mailbox = NoteMailbox(meeting, role: .sender(nonce: SecureRandom.bytes(NoteMailbox.nonceBytes), unixTime: unixTime))
        steps(.callingOnMailbox(servers.mailbox, day: meeting.day, side: mailbox.side))
        let socket: Relay.WebSocket
        do { socket = try await Relay.openWebSocket(servers.mailbox, timeout: .seconds(max(1, Int64(deadline - ExchangeTransport.now())))) } catch {
            throw Self.failure(error)
        }
        let expired = NIOLockedValueBox(false)
        let timer = socket.channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(max(0, deadline - ExchangeTransport.now()) * 1e9))) {
            expired.withLockedValue { $0 = true }
            socket.channel.close(promise: nil)
        }
        defer { timer.cancel() }
        let outcome: Result<ExchangeTransport.Connection, MessageDeliveryFailure>
        do {
            outcome = try await socket.executeThenClose { inbound, outbound -> Result<ExchangeTransport.Connection, MessageDeliveryFailure> in
                for m in mailbox.opening() { try await outbound.write(Self.text(m)) }
                let call = mailbox.call()!
                let calling = Task {
                    while true {
                        try await Task.sleep(for: .seconds(recallSeconds))
                        try await outbound.write(Self.text(call))
                    }
                }
                defer { calling.cancel() }
                var token: String?
                reading: for try await frame in inbound {
                    switch frame.opcode {
                    case .text:
                        let events: [NoteMailbox.Event]
                        do throws(RelayFailure) { events = try mailbox.receive(Array(frame.unmaskedData.readableBytesView), unixTime: unixTime) } catch {
                            return .failure(.relay(error))
                        }
                        for case .met(let t) in events { token = t }
                        if token != nil { break reading }
                    case .ping: try await outbound.write(Self.pong(frame))
                    case .connectionClose: break reading
                    default: break
                    }
                }
                calling.cancel()
                guard let token else {
                    if expired.withLockedValue({ $0 }) { return .failure(.notDelivered(.noListenerOnMailbox)) }
                    return .failure(.relay(.mailboxLost(.closed(before: .listener))))
                }
                steps(.listenerAnswered(servers.transit))
                let transit: Result<ExchangeTransport.Connection, MessageDeliveryFailure>
                do throws(ExchangeFailure) {
                    transit = .success(try await Relay.connectTransit(servers.transit, token: token, side: mailbox.side, until: deadline))
                } catch {
                    transit = .failure(Self.failure(error))
                }
                try? await outbound.write(Self.text(mailbox.closing(mood: (try? transit.get()) != nil ? "happy" : "errory")))
                try? await outbound.write(Self.goodbye)
                return transit
            }
        } catch {
            if expired.withLockedValue({ $0 }) { throw .notDelivered(.noListenerOnMailbox) }
            throw .relay(Relay.mailboxFailure(error))
        }
        return try outcome.get()
    }

    // MARK: The listener

    /// Checks that the mailbox server answers as one (a `listen --relay` with a wrong URL fails at
    /// once rather than retrying for ever).
    static func check(_ servers: RelayServers, timeout: TimeAmount) async throws(MessageDeliveryFailure) {
        let socket: Relay.WebSocket
        do { socket = try await Relay.openWebSocket(servers.mailbox, timeout: timeout) } catch { throw Self.failure(error) }
        let timer = socket.channel.eventLoop.scheduleTask(in: timeout) { socket.channel.close(promise: nil) }
        defer { timer.cancel() }
        let welcomed: Result<Void, RelayFailure>? = try? await socket.executeThenClose { inbound, outbound in
            for try await frame in inbound where frame.opcode == .text {
                guard let json = try? StrictJSONParser.parse(Array(frame.unmaskedData.readableBytesView)),
                      case .string("welcome")? = json["type"] else { return .failure(.refusedByMailbox(.noWelcome)) }
                if case .string(let why)? = json["welcome"]?["error"] { return .failure(.refusedByMailbox(.said(why))) }
                try await outbound.write(Self.goodbye)
                return .success(())
            }
            return .failure(.mailboxLost(.closed(before: .welcome)))
        }
        switch welcomed {
        case .success?: return
        case .failure(let r)?: throw .relay(r)
        case nil: throw .relay(.mailboxLost(.noWelcome(seconds: timeout.nanoseconds / 1_000_000_000)))
        }
    }

    /// Holds the mailbox of each contact in `table` for the days around now, until cancelled:
    /// answers each fresh call and serves the sender through the transit relay as the LAN
    /// listener serves a connection (`MessageTransport.handle`). A lost mailbox is opened again
    /// after `retrySeconds`; contacts added meanwhile and the next day are picked up every
    /// `reconcileSeconds`.
    static func serve(_ servers: RelayServers, table: PairTagTable, receiver: MessageReceiver, replays: ReplayCache,
                      connectionTimeout: Int64) async {
        let held = NIOLockedValueBox<[String: Task<Void, Never>]>([:])
        let lost = FailureSummary(burst: 1, events: receiver.events)
        await withTaskCancellationHandler {
            while !Task.isCancelled {
                let now = receiver.clock()
                var wanted: [String: (RelayMeeting, String)] = [:]
                for entry in table.entries() {
                    for day in RelayMeeting.days(around: now) {
                        let meeting = entry.keys.relayMeeting(day: day)
                        wanted[meeting.mailbox] = (meeting, entry.owner)
                    }
                }
                held.withLockedValue { tasks in
                    for (id, task) in tasks where wanted[id] == nil {
                        task.cancel()
                        tasks[id] = nil
                    }
                    for (id, (meeting, _)) in wanted where tasks[id] == nil {
                        tasks[id] = Task {
                            await hold(meeting, servers: servers, receiver: receiver, replays: replays,
                                       connectionTimeout: connectionTimeout, lost: lost)
                        }
                    }
                }
                try? await Task.sleep(for: .seconds(reconcileSeconds))
            }
            for task in held.withLockedValue({ $0.values }) { await task.value }
        } onCancel: {
            held.withLockedValue { $0.values.forEach { $0.cancel() } }
        }
    }

    /// One contact's mailbox of one day, held until cancelled (opened again when lost).
    static func hold(_ meeting: RelayMeeting, servers: RelayServers, receiver: MessageReceiver, replays: ReplayCache,
                     connectionTimeout: Int64, lost: FailureSummary) async {
        var mailbox = NoteMailbox(meeting, role: .listener)
        while !Task.isCancelled {
            do throws(MessageDeliveryFailure) {
                try await holdOnce(&mailbox, servers: servers, receiver: receiver, replays: replays, connectionTimeout: connectionTimeout)
            } catch {
                if !Task.isCancelled {
                    lost.record(.mailboxLost(error, retrySeconds: Int(retrySeconds)), now: ExchangeTransport.now())
                }
            }
            try? await Task.sleep(for: .seconds(retrySeconds))
        }
    }

    private static func holdOnce(_ mailbox: inout NoteMailbox, servers: RelayServers, receiver: MessageReceiver, replays: ReplayCache,
                                 connectionTimeout: Int64) async throws(MessageDeliveryFailure) {
        let socket: Relay.WebSocket
        do { socket = try await Relay.openWebSocket(servers.mailbox, timeout: .seconds(10)) } catch { throw Self.failure(error) }
        var state = mailbox
        defer { mailbox = state }
        let outcome: Result<Void, MessageDeliveryFailure>?
        outcome = try? await withTaskCancellationHandler {
            try await socket.executeThenClose { inbound, outbound -> Result<Void, MessageDeliveryFailure> in
                try await withThrowingDiscardingTaskGroup(returning: Result<Void, MessageDeliveryFailure>.self) { sessions in
                    let busy = NIOLockedValueBox(0)
                    for m in state.opening() { try await outbound.write(Self.text(m)) }
                    for try await frame in inbound {
                        switch frame.opcode {
                        case .text:
                            let events: [NoteMailbox.Event]
                            do throws(RelayFailure) {
                                events = try state.receive(Array(frame.unmaskedData.readableBytesView), unixTime: receiver.clock())
                            } catch {
                                return .failure(.relay(error))
                            }
                            let token = events.lazy.compactMap { if case .met(let t) = $0 { t } else { nil } }.first
                            // Each call in its own task: one whose sender gave up must not hold up a
                            // fresh one; a few at once per mailbox, the call after them not answered.
                            let admitted = token == nil || busy.withLockedValue { n in
                                guard n < maximumSessions else { return false }
                                n += 1
                                return true
                            }
                            guard admitted else {
                                receiver.events(.callNotAnswered(maximum: maximumSessions))
                                continue
                            }
                            for case .send(let m) in events { try await outbound.write(Self.text(m)) }
                            if let token {
                                let side = state.side
                                sessions.addTask {
                                    defer { busy.withLockedValue { $0 -= 1 } }
                                    await serveOne(token: token, side: side, servers: servers, receiver: receiver, replays: replays,
                                                   connectionTimeout: connectionTimeout)
                                }
                            }
                        case .ping: try await outbound.write(Self.pong(frame))
                        case .connectionClose: return .failure(.relay(.mailboxLost(.closed(before: nil))))
                        default: break
                        }
                    }
                    return .failure(.relay(.mailboxLost(.closed(before: nil))))
                }
            }
        } onCancel: {
            socket.channel.close(promise: nil)
        }
        if Task.isCancelled { return }
        switch outcome {
        case .failure(let f)?: throw f
        case .success?: return
        case nil: throw .relay(.mailboxLost(.lost))
        }
    }

    /// A sender that called: through the transit relay, then served as on the LAN.
    private static func serveOne(token: String, side: String, servers: RelayServers, receiver: MessageReceiver, replays: ReplayCache,
                                 connectionTimeout: Int64) async {
        let connection: ExchangeTransport.Connection
        do {
            connection = try await Relay.connectTransit(servers.transit, token: token, side: side,
                                                        until: ExchangeTransport.now() + transitSeconds)
        } catch {
            receiver.events(.callFailed(Self.failure(error)))
            return
        }
        await MessageTransport.handle(connection, receiver: receiver, replays: replays, timeout: .seconds(connectionTimeout))
    }

    // MARK: Frames and failures

    static func text(_ bytes: [UInt8]) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer(bytes: bytes))
    }

    static func pong(_ ping: WebSocketFrame) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: ping.unmaskedData)
    }

    static var goodbye: WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: ByteBuffer(bytes: [0x03, 0xE8]))
    }

    /// The relay's failure as a delivery's (every one `Relay` throws is a `.relay`).
    static func failure(_ e: ExchangeFailure) -> MessageDeliveryFailure {
        if case .relay(let r) = e { return .relay(r) }
        return .io(.other("\(e)"))
    }
}
