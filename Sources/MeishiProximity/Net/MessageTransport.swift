import MeishiCard
import MeishiCrypto
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Why a receiver refused a message (sent in a sealed refusal frame, told by the receiver).
public enum MessageRefusal: UInt8, Sendable, CaseIterable {
    /// No contact of the receiver has the sender's key (or its card is gone).
    case unknownSender = 1
    /// The envelope names someone else as its recipient.
    case wrongRecipient = 2
    /// The box did not open, or its sender is not the one the handshake authenticated.
    case authenticationFailed = 3
    case expired = 4
    case oversized = 5
    /// The receiver holds the sender only as an unsigned contact (a vCard): not vouched for.
    case unsignedSender = 6
    /// Not an envelope of this version.
    case malformed = 7
    /// The receiver could not store it.
    case storeFailed = 8
    /// Inside an exchange: nobody compared the code on the receiving side (`--yes` without a
    /// code), so the sender is not known to be who the card says.
    case notAuthenticated = 9
    /// A pushed card (`card push`) is another DID's than the contact the handshake authenticated.
    case otherDID = 10
    /// A pushed card is not newer than the card the receiver holds (older, the same, or replayed).
    case notNewer = 11
    /// A pushed card does not verify (signature, shape, time).
    case invalidCard = 12
    /// A card or key rotation of a key its holder replaced (docs/PROTOCOL.md §10): the receiver
    /// holds the contact under a later key.
    case superseded = 13
    /// A key rotation whose statement does not verify (a signature, the shape, not a chain).
    case invalidRotation = 14
    /// A key rotation of a key the receiver never held for any contact.
    case rotationOfUnknownKey = 15
    /// A key rotation the receiver applied before (a replay): it holds the new key already.
    case rotationApplied = 16
}

/// What a receiver made of a pushed card (`meishi card push`).
public enum CardPushVerdict: Equatable, Sendable {
    /// Stored as the contact's newer card; the card's signed timestamp.
    case stored(timestamp: Int64)
    case refused(MessageRefusal)
}

/// What a receiver made of a message.
public enum MessageVerdict: Equatable, Sendable {
    case stored
    /// Its id was seen before: acknowledged again, stored once.
    case duplicate
    case refused(MessageRefusal)
}

/// Why a message was not delivered, as a value: the application words it (no sentence is
/// composed here).
public enum MessageDeliveryFailure: Error, Equatable, Sendable {
    /// Nobody answered (no listener recognised the probe, nothing at `--peer`) in time, or the
    /// connection to the listener failed.
    case notDelivered(Undelivered)
    /// The receiver refused it.
    case refused(MessageRefusal)
    /// The peer is not the contact (the handshake failed), or broke the protocol.
    case handshakeFailed(HandshakeProblem)
    case unknownHost(String)
    /// No IPv4 interface supports multicast, so no probe can find the listener (an IPv6-only
    /// network): only `--peer` can.
    case noMulticastInterface
    /// A link-local IPv6 `--peer` without its interface (`fe80::1`, not `fe80::1%eth0`): the
    /// system cannot tell which link it is on.
    case linkLocalWithoutInterface(String)
    case addressInUse(Int)
    /// A local failure (a socket, the interfaces), the system's words in it.
    case io(ExchangeFailure.IOProblem)
    /// `--relay`: the mailbox server or the transit relay failed (nobody answering is `notDelivered`).
    case relay(RelayFailure)

    /// How a note or a pushed card did not reach the listener.
    public enum Undelivered: Equatable, Sendable {
        /// No listener answered the pair's probe in time.
        case noListenerAnswered
        /// No listener answered on the pair's mailbox in time (`--relay`).
        case noListenerOnMailbox
        /// Connecting to the listener failed (the last attempt's problem).
        case cannotConnect(NoteAddress, ExchangeFailure.ConnectProblem)
        /// The listener closed the connection without answering the handshake.
        case hungUp(NoteAddress)
        /// No sealed answer came for what was sent (`card`: a card, else a message).
        case notAcknowledged(NoteAddress, card: Bool)
        /// The time ran out during the delivery.
        case noAnswerInTime(NoteAddress)
        /// The connection failed during the delivery (the system's words).
        case connectionLost(NoteAddress, error: String)
    }

    /// How the listener failed to prove it is the contact, or broke the protocol.
    public enum HandshakeProblem: Equatable, Sendable {
        /// Its answer to a message or a card was not one.
        case malformedAcknowledgement
        /// Its answer to the hello was not a handshake reply.
        case unexpectedAnswer
        /// Its handshake reply did not verify (not the contact's key).
        case didNotVerify
    }
}

/// Where a note or a pushed card went, as the sender reached the listener.
public enum NoteAddress: Equatable, Sendable {
    /// The listener's address, `HOST:PORT` (an IPv6 `--peer` in brackets).
    case listener(String)
    /// Through this transit relay (`--relay`).
    case transitRelay(TransitAddress)
}

/// Frames of message delivery over TCP (docs/PROTOCOL.md §9.4), each in a 4-byte length prefix.
///
///     → 0x50 hello:  tag (16) ‖ Noise KK message 1 (e, es, ss; payload: sender's unix time, u64 BE)
///     ← 0x51 reply:  Noise KK message 2 (e, ee, se; empty payload)
///     → 0x52 sealed: transport message { 0x60 envelope }
///     ← 0x52 sealed: transport message { 0x61 ack: id (16) ‖ 0 stored / 1 seen before } or { 0x62 refusal: reason }
///
/// or, for `card push`, { 0x64 card: a signed card (§2) } answered by { 0x65 card ack: its
/// timestamp (u64 BE) } or { 0x62 refusal: reason }.
///
/// or, after `meishi id rotate`, { 0x66 rotation: chain length (u16 BE) ‖ the supersession
/// statements (§10.1) ‖ the card signed by the new key } answered as a card is: sent under the
/// old X25519 key, the only one the contact knows yet.
///
/// Inner types 0x60–0x6F are reserved for messages, also inside the exchange's sealed frames.
public enum MessageFrame {
    public static let hello: UInt8 = 0x50
    public static let reply: UInt8 = 0x51
    public static let sealed: UInt8 = 0x52
    /// Inner (sealed) types.
    public static let envelope: UInt8 = 0x60
    public static let ack: UInt8 = 0x61
    public static let refusal: UInt8 = 0x62
    /// Inside an exchange only: this side has no message to send (keeps the phase symmetric).
    public static let none: UInt8 = 0x63
    /// `card push`: a signed card (sender → listener), and the listener's "stored" (its timestamp).
    public static let card: UInt8 = 0x64
    public static let cardAck: UInt8 = 0x65
    /// `card push` after a key rotation: the statements, then the card of the new key.
    public static let rotation: UInt8 = 0x66
    public static let innerTypes: ClosedRange<UInt8> = 0x60...0x6F

    /// The Noise prologue: binds the version and the pair's tag into the handshake.
    static func prologue(tag: [UInt8]) -> [UInt8] { Array("meishi-message-v1".utf8) + [0] + tag }
    /// How far apart the two clocks may be for a handshake to count as fresh.
    public static let maximumSkew: Int64 = 120
}

/// What a listener needs from the application.
public struct MessageReceiver: Sendable {
    public var staticKey: X25519.SecretKey
    public var table: PairTagTable
    /// Checks and stores an envelope from the contact the handshake authenticated (`sender`: its DID).
    public var accept: @Sendable (_ envelope: [UInt8], _ sender: String) -> MessageVerdict
    /// Checks and stores a pushed card from the contact the handshake authenticated; nil: pushed
    /// cards are refused as unexpected frames.
    public var acceptCard: (@Sendable (_ card: [UInt8], _ sender: String) -> CardPushVerdict)?
    /// Checks and applies a key rotation (its statements and the new key's card) from the contact
    /// the handshake authenticated under its old key; nil: refused as unexpected frames.
    public var acceptRotation: (@Sendable (_ statements: [UInt8], _ card: [UInt8], _ sender: String) -> CardPushVerdict)?
    public var clock: @Sendable () -> Int64
    /// What the listener tells as it serves (refusals, probes, mailboxes).
    public var events: @Sendable (ListenerEvent) -> Void

    public init(staticKey: X25519.SecretKey, table: PairTagTable, accept: @escaping @Sendable ([UInt8], String) -> MessageVerdict,
                acceptCard: (@Sendable ([UInt8], String) -> CardPushVerdict)? = nil,
                acceptRotation: (@Sendable ([UInt8], [UInt8], String) -> CardPushVerdict)? = nil,
                clock: @escaping @Sendable () -> Int64, events: @escaping @Sendable (ListenerEvent) -> Void) {
        self.acceptRotation = acceptRotation
        self.staticKey = staticKey
        self.table = table
        self.accept = accept
        self.acceptCard = acceptCard
        self.clock = clock
        self.events = events
    }
}

/// Message delivery over TCP: a listener serving many senders, and a sender delivering one envelope.
public enum MessageTransport {
    public static let defaultPort = 47_825
    /// Most connections served at once; more wait (`ConnectionSlots`).
    static let maximumConnections = 32
    /// Most connections served at once from one address.
    static let maximumPerSource = 8

    /// How long one connection may take until its sealed frame has come, unless told otherwise (a
    /// hostile idle peer is dropped, and cut sooner when the slots are full). 15 s: at 5 s a loaded
    /// machine (a CI run) cut an honest push between its handshake and its card.
    public static let connectionTimeout: Int64 = 15

    typealias Connection = ExchangeTransport.Connection

    /// True when `host` is an IPv6 address on the link-local range (fe80::/10) written without
    /// its interface (`%eth0`), which a connection to it needs: checked before anything else is done.
    public static func isLinkLocalWithoutInterface(_ host: String) -> Bool {
        guard case .v6(let a)? = try? SocketAddress(ipAddress: host, port: 0) else { return false }
        return a.address.sin6_scope_id == 0 && isLinkLocal(a.address.sin6_addr)
    }

    static func isLinkLocal(_ address: in6_addr) -> Bool {
        withUnsafeBytes(of: address) { $0[0] == 0xFE && $0[1] & 0xC0 == 0x80 }
    }

    /// A bound listener, before it serves.
    public struct Listener: Sendable {
        let server: ExchangeTransport.Server
        public var port: Int { server.port }
    }

    public static func bind(host: String?, port: Int) async throws(MessageDeliveryFailure) -> Listener {
        do { return Listener(server: try await ExchangeTransport.bind(host: host, port: port)) } catch {
            switch error {
            case .addressInUse(let p): throw .addressInUse(p)
            case .io(let problem): throw .io(problem)
            default: throw .io(.other("\(error)"))
            }
        }
    }

    /// Checks that `servers`' mailbox server answers (`listen --relay` fails at once on a wrong URL).
    public static func checkRelay(_ servers: RelayServers) async throws(MessageDeliveryFailure) {
        try await RelayNotes.check(servers, timeout: .seconds(10))
    }

    /// Serves senders until `duration` passes (nil: until the task is cancelled); returns how
    /// many connections it served. A failing peer is logged and costs the others nothing; idle
    /// connections cannot keep a sender out (`ConnectionSlots`). With `relay`, it also holds each
    /// contact's mailbox there and serves the senders who call on it (`RelayNotes.serve`), with
    /// the same replay memory.
    @discardableResult
    public static func serve(_ listener: Listener, forSeconds duration: Int64?, connectionTimeout: Int64 = connectionTimeout,
                             relay: RelayServers? = nil, receiver: MessageReceiver) async -> Int {
        let channel = listener.server.channel
        let timer = duration.map { d in channel.channel.eventLoop.scheduleTask(in: .seconds(d)) { channel.channel.close(promise: nil) } }
        defer { timer?.cancel() }
        let replays = ReplayCache(lifetime: Double(2 * MessageFrame.maximumSkew + 10))
        let relaying = relay.map { servers in
            Task { await RelayNotes.serve(servers, table: receiver.table, receiver: receiver, replays: replays, connectionTimeout: connectionTimeout) }
        }
        defer { relaying?.cancel() }
        let slots = ConnectionSlots(total: maximumConnections, perSource: maximumPerSource)
        let served = NIOLockedValueBox(0)
        // Strangers (cut, or gone before a hello with a known tag): at most 5 lines a second, the rest counted.
        let strangers = FailureSummary(burst: 5, events: receiver.events)
        await withTaskCancellationHandler {
            try? await channel.executeThenClose { inbound in
                await withDiscardingTaskGroup { group in
                    do {
                        for try await accepted in inbound {
                            guard let connection = accepted.take() else { continue }
                            let address = senderAddress(connection.channel)
                            // Waits while every slot holds a connection that said hello (extra connections wait here,
                            // then in the kernel's backlog); cuts an idle one instead when there is one.
                            // Connections whose address is gone count as one source ("").
                            guard let slot = await slots.admit(address ?? "", close: { connection.channel.close(promise: nil) }, cut: { source in
                                strangers.record(.cutIdle(from: source.isEmpty ? nil : source), now: ExchangeTransport.now())
                            }) else {
                                try? await connection.channel.close()
                                continue
                            }
                            group.addTask {
                                defer { slots.release(slot) }
                                await handle(connection, receiver: receiver, replays: replays, timeout: .seconds(connectionTimeout),
                                             strangers: strangers, greeted: { slots.greeted(slot) })
                                served.withLockedValue { $0 += 1 }
                            }
                        }
                    } catch {}
                }
            }
        } onCancel: {
            channel.channel.close(promise: nil)
        }
        relaying?.cancel()
        await relaying?.value
        return served.withLockedValue { $0 }
    }

    /// A sender's address as the listener's events name it; nil when the connection is already
    /// gone (the application says so: "refused a message from unknown" read as a name, trial 7 F11).
    static func senderAddress(_ channel: Channel) -> String? {
        channel.remoteAddress?.ipAddress.map(ExchangeTransport.plainAddress)
    }

    /// One sender's connection: handshake, one envelope, the verdict. Every refusal is logged (those
    /// before a hello with a known tag through `strangers`, summarised).
    static func handle(_ connection: Connection, receiver: MessageReceiver, replays: ReplayCache, timeout: TimeAmount,
                       strangers: FailureSummary? = nil, greeted: @Sendable () -> Void = {}) async {
        let channel = connection.channel
        let address = senderAddress(channel)
        let timer = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        defer { timer.cancel() }
        var known = false
        func refuse(_ why: ListenerRefusal) {
            if !known, let strangers {
                strangers.record(.refused(from: address, why), now: ExchangeTransport.now())
            } else {
                receiver.events(.refused(from: address, why))
            }
        }
        try? await connection.executeThenClose { inbound, outbound in
            var frames = FrameReader(iterator: inbound.makeAsyncIterator())
            func send(_ body: [UInt8]) async throws { try await outbound.write(ByteBuffer(bytes: FrameCodec.encode(body))) }
            do {
                guard let hello = try await frames.next(), hello.first == MessageFrame.hello,
                      hello.count >= 1 + PairKeys.tagByteCount + 32 + ChaCha20Poly1305.tagByteCount else {
                    return refuse(.notAHello)
                }
                let tag = Array(hello[1..<1 + PairKeys.tagByteCount])
                let now = receiver.clock()
                guard let entry = receiver.table.lookup(tag, at: now) else {
                    return refuse(.message(.unknownSender))  // nothing sent: a stranger learns nothing
                }
                known = true
                greeted()
                let noise = NoiseKK(role: .responder, prologue: MessageFrame.prologue(tag: tag), staticKey: receiver.staticKey,
                                    remoteStatic: entry.keys.sender)
                let payload: [UInt8]
                do { payload = try noise.readMessage(Array(hello.dropFirst(1 + PairKeys.tagByteCount))) } catch {
                    return refuse(.handshakeNotAuthenticated)
                }
                guard payload.count == 8 else { return refuse(.malformedHandshake) }
                let sent = Int64(bitPattern: payload.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
                // Compared without subtracting the peer's number, which could overflow (any 8 bytes arrive).
                guard sent >= now - MessageFrame.maximumSkew, sent <= now + MessageFrame.maximumSkew else {
                    return refuse(.staleHandshake(maximumSkew: MessageFrame.maximumSkew))
                }
                guard replays.admit(noise.remoteEphemeral!.rawRepresentation, now: ExchangeTransport.now()) else {
                    return refuse(.replayedHandshake)
                }
                try await send([MessageFrame.reply] + (try noise.writeMessage([])))
                let (sender, receiving) = noise.split()
                guard let sealed = try await frames.next(), sealed.first == MessageFrame.sealed else {
                    return refuse(.noMessage)
                }
                let inner: [UInt8]
                do { inner = try receiving.open(Array(sealed.dropFirst())) } catch {
                    return refuse(.message(.authenticationFailed))
                }
                // Everything the sender had to send has come: the time limit bounds waiting for a
                // peer, not our own work. A slow store write (a loaded machine) cut the connection
                // after a rotation was applied, and the sender, without its answer, called it lost.
                timer.cancel()
                let pushed: CardPushVerdict?
                if inner.first == MessageFrame.card, let acceptCard = receiver.acceptCard {
                    pushed = acceptCard(Array(inner.dropFirst()), entry.owner)
                } else if inner.first == MessageFrame.rotation, let acceptRotation = receiver.acceptRotation {
                    if let (statements, card) = Self.splitRotation(Array(inner.dropFirst())) {
                        pushed = acceptRotation(statements, card, entry.owner)
                    } else {
                        pushed = .refused(.invalidRotation)
                    }
                } else {
                    pushed = nil
                }
                if let pushed {
                    let answer: [UInt8]
                    switch pushed {
                    case .stored(let timestamp): answer = [MessageFrame.cardAck] + bigEndian(timestamp)
                    case .refused(let reason):
                        refuse(.card(reason))
                        answer = [MessageFrame.refusal, reason.rawValue]
                    }
                    return try await send([MessageFrame.sealed] + sender.seal(answer))
                }
                guard inner.first == MessageFrame.envelope else { return refuse(.unexpectedFrame) }
                let envelope = Array(inner.dropFirst())
                let verdict = receiver.accept(envelope, entry.owner)
                if case .refused(let reason) = verdict { refuse(.message(reason)) }
                try await send([MessageFrame.sealed] + sender.seal(MessageAnswer(verdict: verdict, envelope: envelope).encoded))
            } catch let e as ExchangeError {
                refuse(.protocolViolation(e))
            } catch {
                refuse(.connectionLost(error: "\(error)"))
            }
        }
    }

    /// A rotation frame's content: the statements (a u16 BE length, then as many bytes) and the card.
    static func splitRotation(_ content: [UInt8]) -> (statements: [UInt8], card: [UInt8])? {
        guard content.count > 2 else { return nil }
        let n = Int(content[0]) << 8 | Int(content[1])
        guard n > 0, content.count >= 2 + n else { return nil }
        return (Array(content[2..<2 + n]), Array(content[(2 + n)...]))
    }

    /// Where `send` delivers: a `--peer HOST:PORT`, or whichever listener answers the pair's probe.
    public enum Destination: Sendable {
        case peer(host: String, port: Int)
        case probe(interface: String?)
        /// The pair's mailbox on a magic-wormhole mailbox server, then its transit relay (§9.8).
        case relay(RelayServers)
    }

    /// Delivers `envelope` to `destination` within `seconds`: finds the listener (probe) or
    /// resolves the host, then `deliver`. Returns the verdict and the address as people read it.
    public static func send(_ envelope: MessageEnvelope, to destination: Destination, keys: PairKeys, staticKey: X25519.SecretKey,
                            clock: @escaping @Sendable () -> Int64, seconds: Double,
                            steps: @escaping @Sendable (DeliveryStep) -> Void) async throws(MessageDeliveryFailure) -> (MessageVerdict, NoteAddress) {
        let deadline = ExchangeTransport.now() + seconds
        let (answer, label) = try await converse([MessageFrame.envelope] + envelope.encoded, to: destination, keys: keys, staticKey: staticKey,
                                                 clock: clock, deadline: deadline, steps: steps)
        guard let verdict = MessageAnswer(decoding: answer)?.verdict(for: envelope.id) else {
            throw .handshakeFailed(.malformedAcknowledgement)
        }
        return (verdict, label)
    }

    /// Pushes a signed card (`card push`, its bytes as signed) to `destination` as `send` delivers
    /// a message: the same probe, handshake and connection, the card in place of the envelope.
    /// With `rotation` (the supersession statements), the card goes in a rotation frame, sent
    /// under the old key the caller passes as `keys`/`staticKey`.
    public static func push(card: [UInt8], rotation: [UInt8]? = nil, to destination: Destination, keys: PairKeys, staticKey: X25519.SecretKey,
                            clock: @escaping @Sendable () -> Int64, seconds: Double,
                            steps: @escaping @Sendable (DeliveryStep) -> Void) async throws(MessageDeliveryFailure) -> (CardPushVerdict, NoteAddress) {
        let deadline = ExchangeTransport.now() + seconds
        let inner = rotation.map { r in [MessageFrame.rotation, UInt8(r.count >> 8), UInt8(r.count & 0xFF)] + r + card }
            ?? [MessageFrame.card] + card
        let (answer, label) = try await converse(inner, to: destination, keys: keys, staticKey: staticKey, clock: clock,
                                                 deadline: deadline, steps: steps)
        switch answer.first {
        case MessageFrame.cardAck? where answer.count == 9:
            return (.stored(timestamp: Int64(bitPattern: answer.dropFirst().reduce(UInt64(0)) { $0 << 8 | UInt64($1) })), label)
        case MessageFrame.refusal? where answer.count == 2:
            guard let reason = MessageRefusal(rawValue: answer[1]) else { throw .handshakeFailed(.malformedAcknowledgement) }
            return (.refused(reason), label)
        default:
            throw .handshakeFailed(.malformedAcknowledgement)
        }
    }

    /// One delivery to `destination` before `deadline`: `inner` sealed, and the listener's answer
    /// opened, with the listener's address as people read it (through the relay: the transit relay's).
    static func converse(_ inner: [UInt8], to destination: Destination, keys: PairKeys, staticKey: X25519.SecretKey,
                         clock: @escaping @Sendable () -> Int64, deadline: Double,
                         steps: @escaping @Sendable (DeliveryStep) -> Void) async throws(MessageDeliveryFailure) -> ([UInt8], NoteAddress) {
        if case .relay(let servers) = destination {
            let connection = try await RelayNotes.meet(servers, keys: keys, unixTime: clock(), deadline: deadline, steps: steps)
            let label = NoteAddress.transitRelay(servers.transit)
            return (try await talk(inner, over: connection, label: label, keys: keys, staticKey: staticKey, unixTime: clock(),
                                   deadline: deadline), label)
        }
        let (address, label) = try await locate(destination, keys: keys, clock: clock, deadline: deadline, steps: steps)
        return (try await converse(inner, to: address, label: label, keys: keys, staticKey: staticKey, unixTime: clock(),
                                   deadline: deadline), label)
    }

    /// The address of `destination` and its label as people read it: resolved, or found by the
    /// pair's probe before `deadline`.
    static func locate(_ destination: Destination, keys: PairKeys, clock: @escaping @Sendable () -> Int64, deadline: Double,
                       steps: @escaping @Sendable (DeliveryStep) -> Void) async throws(MessageDeliveryFailure) -> (SocketAddress, NoteAddress) {
        let address: SocketAddress
        let label: NoteAddress
        switch destination {
        case .relay: preconditionFailure("a relay has no address (converse meets there)")
        case .peer(let host, let port):
            do { address = try SocketAddress.makeAddressResolvingHost(host, port: port) } catch { throw .unknownHost(host) }
            if case .v6(let a) = address, a.address.sin6_scope_id == 0, Self.isLinkLocal(a.address.sin6_addr) {
                throw .linkLocalWithoutInterface(host)
            }
            label = .listener(host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)")
        case .probe(let interface):
            guard let found = try await MessageProbing.find(keys: keys, unixTime: clock, deadline: deadline, interface: interface, steps: steps) else {
                throw .notDelivered(.noListenerAnswered)
            }
            address = found
            label = .listener("\(ExchangeTransport.plainAddress(found.ipAddress ?? "?")):\(found.port ?? 0)")
        }
        return (address, label)
    }

    /// Delivers `envelope` to the listener at `address`: a Noise KK handshake with the contact's
    /// static key `remoteStatic`, then the envelope, then its acknowledgement. Connection attempts
    /// are retried until `deadline` (monotonic seconds), but a refused connection only for
    /// `refusedGrace` seconds: a listener just starting gets that long, nothing listening does
    /// not keep the sender waiting for its whole timeout.
    static func deliver(_ envelope: MessageEnvelope, to address: SocketAddress, label: NoteAddress, keys: PairKeys,
                               staticKey: X25519.SecretKey, unixTime: Int64, deadline: Double,
                               refusedGrace: Double = 2) async throws(MessageDeliveryFailure) -> MessageVerdict {
        let inner = try await converse([MessageFrame.envelope] + envelope.encoded, to: address, label: label, keys: keys,
                                       staticKey: staticKey, unixTime: unixTime, deadline: deadline, refusedGrace: refusedGrace)
        guard let verdict = MessageAnswer(decoding: inner)?.verdict(for: envelope.id) else {
            throw MessageDeliveryFailure.handshakeFailed(.malformedAcknowledgement)
        }
        return verdict
    }

    /// One delivery connection: the handshake, `inner` sealed, and the listener's sealed answer, opened.
    static func converse(_ inner: [UInt8], to address: SocketAddress, label: NoteAddress, keys: PairKeys,
                         staticKey: X25519.SecretKey, unixTime: Int64, deadline: Double,
                         refusedGrace: Double = 2) async throws(MessageDeliveryFailure) -> [UInt8] {
        let connection: Connection
        switch await ExchangeTransport.connect(to: address, until: deadline - 0.05, attemptTimeout: { .milliseconds(Int64(max(0.05, $0) * 1000)) },
                                               refusedGrace: refusedGrace, pause: .milliseconds(20)) {
        case .success(let c): connection = c
        case .failure(let f): throw .notDelivered(.cannotConnect(label, f.problem))
        }
        return try await talk(inner, over: connection, label: label, keys: keys, staticKey: staticKey, unixTime: unixTime, deadline: deadline)
    }

    /// The delivery over a connection made (to the listener, or through the transit relay): the
    /// handshake, `inner` sealed, and the listener's sealed answer, opened.
    static func talk(_ inner: [UInt8], over connection: Connection, label: NoteAddress, keys: PairKeys,
                     staticKey: X25519.SecretKey, unixTime: Int64, deadline: Double) async throws(MessageDeliveryFailure) -> [UInt8] {
        let channel = connection.channel
        let timedOut = NIOLockedValueBox(false)
        let timer = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(max(0.001, deadline - ExchangeTransport.now()) * 1e9))) {
            timedOut.withLockedValue { $0 = true }
            channel.close(promise: nil)
        }
        defer { timer.cancel() }
        let tag = keys.tag(window: PairKeys.window(at: unixTime))
        do {
            return try await connection.executeThenClose { inbound, outbound in
                var frames = FrameReader(iterator: inbound.makeAsyncIterator())
                func send(_ body: [UInt8]) async throws { try await outbound.write(ByteBuffer(bytes: FrameCodec.encode(body))) }
                let noise = NoiseKK(role: .initiator, prologue: MessageFrame.prologue(tag: tag), staticKey: staticKey, remoteStatic: keys.recipient)
                let time = (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: unixTime) >> (56 - 8 * UInt64($0))) }
                try await send([MessageFrame.hello] + tag + (try noise.writeMessage(time)))
                guard let reply = try await frames.next() else {
                    throw MessageDeliveryFailure.notDelivered(.hungUp(label))
                }
                guard reply.first == MessageFrame.reply else { throw MessageDeliveryFailure.handshakeFailed(.unexpectedAnswer) }
                do { _ = try noise.readMessage(Array(reply.dropFirst())) } catch {
                    throw MessageDeliveryFailure.handshakeFailed(.didNotVerify)
                }
                let (sending, receiving) = noise.split()
                try await send([MessageFrame.sealed] + sending.seal(inner))
                guard let sealed = try await frames.next(), sealed.first == MessageFrame.sealed,
                      let answer = try? receiving.open(Array(sealed.dropFirst())) else {
                    throw MessageDeliveryFailure.notDelivered(.notAcknowledged(label, card: inner.first == MessageFrame.card))
                }
                return answer
            }
        } catch let e as MessageDeliveryFailure {
            throw e
        } catch {
            if timedOut.withLockedValue({ $0 }) { throw .notDelivered(.noAnswerInTime(label)) }
            throw .notDelivered(.connectionLost(label, error: "\(error)"))
        }
    }
}

/// `n` as 8 bytes, big-endian.
func bigEndian(_ n: Int64) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: n) >> (56 - 8 * UInt64($0))) }
}
