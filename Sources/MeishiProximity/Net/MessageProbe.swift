import MeishiCard
import MeishiCrypto
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// The keys and tags two contacts derive from their static X25519 keys (docs/PROTOCOL.md §9.2).
///
///     pairKey = BLAKE2b-256(key = X25519(mine, theirs), "meishi-pair-v1" ‖ min(pkA, pkB) ‖ max(pkA, pkB))
///     tag     = BLAKE2b-128(key = pairKey, "meishi-probe-v1" ‖ pkSender ‖ pkRecipient ‖ window (u64 BE))
///     window  = ⌊unix time / 300⌋
///
/// Only the pair can compute a tag; tags of different windows cannot be linked by anyone else.
public struct PairKeys: Sendable {
    public static let windowSeconds: Int64 = 300
    public static let tagByteCount = 16

    let key: SecureBytes
    public let sender: X25519.PublicKey
    public let recipient: X25519.PublicKey

    /// The keys of messages from `sender` to `recipient`, computed by either side (`mine` is our
    /// secret key, `theirs` the other's public key).
    public init(mine: X25519.SecretKey, theirs: X25519.PublicKey, sending: Bool) throws(CryptoError) {
        let shared = try mine.sharedSecret(with: theirs)
        let (a, b) = (mine.publicKey.rawRepresentation, theirs.rawRepresentation)
        let ordered = a.lexicographicallyPrecedes(b) ? a + b : b + a
        key = BLAKE2b.hash(Array("meishi-pair-v1".utf8) + ordered, key: shared, length: 32)
        sender = sending ? mine.publicKey : theirs
        recipient = sending ? theirs : mine.publicKey
    }

    public static func window(at unixTime: Int64) -> Int64 { unixTime >= 0 ? unixTime / windowSeconds : -1 }

    /// The probe tag of `window`.
    public func tag(window: Int64) -> [UInt8] {
        let w = (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: window) >> (56 - 8 * UInt64($0))) }
        return BLAKE2b.hash(Array("meishi-probe-v1".utf8) + sender.rawRepresentation + recipient.rawRepresentation + w,
                            key: key, length: Self.tagByteCount).exposedBytes()
    }

    /// The listener's proof that it holds the pair key, for the probe with `nonce` answered with `port`.
    public func answerMAC(tag: [UInt8], nonce: [UInt8], port: UInt16) -> [UInt8] {
        BLAKE2b.hash(Array("meishi-probe-answer-v1".utf8) + tag + nonce + [UInt8(port >> 8), UInt8(port & 0xFF)],
                     key: key, length: 16).exposedBytes()
    }
}

/// A multicast probe: "MSHQ" | 1 | tag (16) | nonce (16). Says nothing but a tag only the pair recognises.
public struct MessageProbe: Equatable, Sendable {
    public static let magic: [UInt8] = Array("MSHQ".utf8)
    public static let size = 4 + 1 + 16 + 16
    public let tag: [UInt8]
    public let nonce: [UInt8]

    public init(tag: [UInt8], nonce: [UInt8] = SecureRandom.bytes(16)) {
        precondition(tag.count == 16 && nonce.count == 16)
        self.tag = tag
        self.nonce = nonce
    }

    public var encoded: [UInt8] { Self.magic + [1] + tag + nonce }

    public init?(_ bytes: [UInt8]) {
        guard bytes.count == Self.size, Array(bytes.prefix(4)) == Self.magic, bytes[4] == 1 else { return nil }
        tag = Array(bytes[5..<21])
        nonce = Array(bytes[21..<37])
    }
}

/// The recognising listener's unicast answer: "MSHA" | 1 | nonce (16) | TCP port (u16 BE) | MAC (16).
public struct MessageProbeAnswer: Equatable, Sendable {
    public static let magic: [UInt8] = Array("MSHA".utf8)
    public static let size = 4 + 1 + 16 + 2 + 16
    public let nonce: [UInt8]
    public let port: UInt16
    public let mac: [UInt8]

    public init(nonce: [UInt8], port: UInt16, mac: [UInt8]) {
        self.nonce = nonce
        self.port = port
        self.mac = mac
    }

    public var encoded: [UInt8] { Self.magic + [1] + nonce + [UInt8(port >> 8), UInt8(port & 0xFF)] + mac }

    public init?(_ bytes: [UInt8]) {
        guard bytes.count == Self.size, Array(bytes.prefix(4)) == Self.magic, bytes[4] == 1 else { return nil }
        nonce = Array(bytes[5..<21])
        port = UInt16(bytes[21]) << 8 | UInt16(bytes[22])
        mac = Array(bytes[23..<39])
        guard port != 0 else { return nil }
    }
}

/// A listener's per-window table of its contacts' tags (no trial decryption: one dictionary
/// look-up per probe or connection), rebuilt when the window turns. It holds the tags of the
/// previous, current and next windows, for clocks a few minutes apart.
public final class PairTagTable: Sendable {
    public struct Entry: Sendable {
        public let keys: PairKeys
        /// Whatever the caller uses to find the contact again (its DID).
        public let owner: String
    }

    private let mine: X25519.SecretKey
    private let pairs: NIOLockedValueBox<[(keys: PairKeys, owner: String)]>
    private let state = NIOLockedValueBox<(window: Int64, tags: [[UInt8]: Entry])>((Int64.min, [:]))
    /// Contacts added since the table was made (`listen` keeps running while people swap cards).
    private let newcomers: (@Sendable () -> [(did: String, key: X25519.PublicKey)])?
    /// Monotonic seconds of the last look for newcomers: at most one a second, whatever a
    /// stranger's unknown tags ask.
    private let lastLook = NIOLockedValueBox<Double>(-.infinity)

    /// The table for messages from each of `contacts` (DID, X25519 key) to the holder of `mine`.
    /// Keys that give no shared secret (low-order points) are left out. On a tag it does not
    /// know, `newcomers` (if given) is asked for contacts added since, at most once a second.
    public init(mine: X25519.SecretKey, contacts: [(did: String, key: X25519.PublicKey)],
                newcomers: (@Sendable () -> [(did: String, key: X25519.PublicKey)])? = nil) {
        self.mine = mine
        self.newcomers = newcomers
        pairs = NIOLockedValueBox(Self.pairs(mine, contacts))
    }

    private static func pairs(_ mine: X25519.SecretKey, _ contacts: [(did: String, key: X25519.PublicKey)]) -> [(keys: PairKeys, owner: String)] {
        contacts.compactMap { c in (try? PairKeys(mine: mine, theirs: c.key, sending: false)).map { ($0, c.did) } }
    }

    public var count: Int { pairs.withLockedValue { $0.count } }

    /// The pair a tag names at `unixTime`, or nil.
    public func lookup(_ tag: [UInt8], at unixTime: Int64) -> Entry? {
        if let found = known(tag, at: unixTime) { return found }
        guard lookForNewcomers() else { return nil }
        return known(tag, at: unixTime)
    }

    /// Asks `newcomers` for contacts added since, at most once a second; whether any came.
    private func lookForNewcomers() -> Bool {
        guard let newcomers else { return false }
        let now = ExchangeTransport.now()
        let due = lastLook.withLockedValue { last in
            guard now - last >= 1 else { return false }
            last = now
            return true
        }
        guard due else { return false }
        let fresh = Self.pairs(mine, newcomers())
        guard !fresh.isEmpty else { return false }
        add(fresh)
        return true
    }

    /// Every pair in the table (`listen --relay` holds a mailbox for each), those of contacts
    /// added since it was made included (asked at most once a second).
    public func entries() -> [Entry] {
        _ = lookForNewcomers()
        return pairs.withLockedValue { $0.map { Entry(keys: $0.keys, owner: $0.owner) } }
    }

    /// Adds a contact's key learnt while the table is in use (a key rotation `listen` applied):
    /// its tags join the window in hand. The pair of the key it replaced stays, so a card pushed
    /// under the old key is still heard, and refused as superseded.
    public func add(_ did: String, key: X25519.PublicKey) {
        add(Self.pairs(mine, [(did, key)]))
    }

    /// Only the newcomers' tags are added to the window in hand (a new window rebuilds all).
    private func add(_ fresh: [(keys: PairKeys, owner: String)]) {
        pairs.withLockedValue { $0 += fresh }
        state.withLockedValue { s in
            if s.window != Int64.min { Self.addTags(of: fresh, window: s.window, to: &s.tags) }
        }
    }

    /// The tags of `pairs` for `window` and the windows either side of it. A tag already held
    /// keeps its first owner: a later contact whose card carries an earlier one's message key
    /// (Mallory's card with Carol's X25519 key) must not take Carol's notes over, which would
    /// then be refused as not from the contact the tag names (issue 22, finding 9).
    private static func addTags(of pairs: [(keys: PairKeys, owner: String)], window: Int64, to tags: inout [[UInt8]: Entry]) {
        for p in pairs {
            for w in window - 1...window + 1 where tags[p.keys.tag(window: w)] == nil {
                tags[p.keys.tag(window: w)] = Entry(keys: p.keys, owner: p.owner)
            }
        }
    }

    private func known(_ tag: [UInt8], at unixTime: Int64) -> Entry? {
        let window = PairKeys.window(at: unixTime)
        let current = pairs.withLockedValue { $0 }
        return state.withLockedValue { s in
            if s.window != window {
                var tags: [[UInt8]: Entry] = [:]
                Self.addTags(of: current, window: window, to: &tags)
                s = (window, tags)
            }
            return s.tags[tag]
        }
    }
}

/// Remembers nonces (of probes) or ephemeral keys (of handshakes) for a while: a replay gets nothing.
/// Full, it forgets the oldest quarter rather than refuse: a flood of fresh keys must not make
/// the listener deaf to the real ones (issue 22, finding 4).
final class ReplayCache: Sendable {
    private let seen = NIOLockedValueBox<[[UInt8]: Double]>([:])
    let lifetime: Double
    let capacity: Int

    init(lifetime: Double, capacity: Int = 65_536) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// True the first time `key` is offered within `lifetime` (or since it was forgotten); false for a replay.
    func admit(_ key: [UInt8], now: Double) -> Bool {
        seen.withLockedValue { s in
            if let t = s[key], now - t < lifetime { return false }
            if s.count >= capacity {
                s = s.filter { now - $0.value < lifetime }
                if s.count >= capacity {
                    let cut = s.values.sorted()[s.count / 4]
                    s = s.filter { $0.value > cut }
                }
            }
            s[key] = now
            return true
        }
    }
}

/// Answers at most `perSecond` probes a second from one address (bursts of twice that), so that
/// a flood under a captured tag draws few answers; an honest sender probes 4 times a second
/// and stops at the first answer. At most `sources` addresses are tracked: more (forged source
/// addresses) start the table afresh.
final class AnswerRate: Sendable {
    private let buckets = NIOLockedValueBox<[String: (tokens: Double, at: Double)]>([:])
    let perSecond: Double
    let sources: Int

    init(perSecond: Double = 4, sources: Int = 4096) {
        self.perSecond = perSecond
        self.sources = sources
    }

    /// Takes one answer from `source`'s budget; false when it has none left.
    func take(_ source: String, now: Double) -> Bool {
        buckets.withLockedValue { b in
            if b[source] == nil, b.count >= sources { b = b.filter { now - $0.value.at < 2 * perSecond } }
            if b[source] == nil, b.count >= sources { b = [:] }
            let last = b[source] ?? (2 * perSecond, now)
            let tokens = min(2 * perSecond, last.tokens + (now - last.at) * perSecond)
            guard tokens >= 1 else {
                b[source] = (tokens, now)
                return false
            }
            b[source] = (tokens - 1, now)
            return true
        }
    }
}

/// The multicast side of message delivery (docs/PROTOCOL.md §9.3): `send` probes the group,
/// `listen` answers only probes whose tag it recognises and never announces itself.
public enum MessageProbing {
    /// Same group as discovery, another port.
    public static let group = Discovery.group
    public static let port = 47_826

    typealias Datagrams = NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>

    static func ipv4MulticastDevices(interface: String?) throws(MessageDeliveryFailure) -> [NIONetworkDevice] {
        let all: [NIONetworkDevice]
        do { all = try System.enumerateDevices() } catch { throw .io(.cannotListInterfaces(error: "\(error)")) }
        let v4 = all.filter { d in
            guard d.multicastSupported, interface.map({ d.name == $0 }) ?? true else { return false }
            if case .v4? = d.address { return true }
            return false
        }
        guard !v4.isEmpty else { throw .noMulticastInterface }
        return v4
    }

    /// A listener's responder: joins the group on every IPv4 multicast interface and answers
    /// recognised, fresh probes with `tcpPort`, until `stop`.
    ///
    /// A long-running listener (the user service starts at login, maybe before the network is
    /// up) must not stay deaf: when it cannot join yet, or its socket fails, it says so once and
    /// tries again every `retrySeconds`; interfaces that come up later are joined as they appear.
    public final class Responder: Sendable {
        public static let retrySeconds: Int64 = 3
        private let state = NIOLockedValueBox<(channel: Datagrams?, stopped: Bool)>((nil, false))
        private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)
        private let tcpPort: Int
        private let table: PairTagTable
        private let clock: @Sendable () -> Int64
        private let events: @Sendable (ListenerEvent) -> Void
        private let seen = ReplayCache(lifetime: Double(3 * PairKeys.windowSeconds))
        private let rate = AnswerRate()
        // A flood of probes must not flood the log: at most 5 lines a second, the rest counted.
        private let ignored: FailureSummary

        private init(tcpPort: Int, table: PairTagTable, clock: @escaping @Sendable () -> Int64, events: @escaping @Sendable (ListenerEvent) -> Void) {
            (self.tcpPort, self.table, self.clock, self.events) = (tcpPort, table, clock, events)
            ignored = FailureSummary(burst: 5, events: events)
        }

        /// Starts answering; returns once the first attempt to join has succeeded or failed (a
        /// failure is told with what senders can do meanwhile, and retried in the background).
        public static func start(tcpPort: Int, table: PairTagTable, clock: @escaping @Sendable () -> Int64,
                                 events: @escaping @Sendable (ListenerEvent) -> Void) async -> Responder {
            let responder = Responder(tcpPort: tcpPort, table: table, clock: clock, events: events)
            let first: Datagrams?
            var joined: Set<String> = []
            do {
                (first, joined) = try await responder.open()
            } catch {
                first = nil
                events(.probesNotAnswered(error, retrySeconds: retrySeconds, tcpPort: tcpPort))
            }
            let task = Task { await responder.run(first, joined: joined) }
            responder.task.withLockedValue { $0 = task }
            return responder
        }

        public func stop() async {
            let channel = state.withLockedValue { s in
                s.stopped = true
                return s.channel
            }
            try? await channel?.channel.close()
            let task = task.withLockedValue { $0 }
            task?.cancel()
            await task?.value
        }

        private var stopped: Bool { state.withLockedValue { $0.stopped } }

        /// Binds the probe port and joins the group on every multicast interface there is now.
        private func open() async throws(MessageDeliveryFailure) -> (Datagrams, Set<String>) {
            let devices = try MessageProbing.ipv4MulticastDevices(interface: nil)
            let channel: Datagrams
            do {
                channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .channelOption(.socketOption(.so_reuseaddr), value: 1)
                    .bind(host: "0.0.0.0", port: MessageProbing.port) { ch in
                        ch.eventLoop.makeCompletedFuture { try Datagrams(wrappingChannelSynchronously: ch) }
                    }
            } catch {
                throw .io(.cannotListenUDP(port: MessageProbing.port, error: "\(error)"))
            }
            do {
                let joined = try await join(channel, devices, already: [])
                return (channel, joined)
            } catch {
                // Closed through the async channel: dropping it unfinished traps in NIOAsyncWriter's deinit.
                try? await channel.executeThenClose { _, _ in }
                throw .io(.cannotJoinGroup(MessageProbing.group, port: MessageProbing.port, error: "\(error)"))
            }
        }

        /// Joins the group on each of `devices` not in `already`; returns the names joined.
        private func join(_ channel: Datagrams, _ devices: [NIONetworkDevice], already: Set<String>) async throws -> Set<String> {
            let groupAddress = try SocketAddress(ipAddress: MessageProbing.group, port: MessageProbing.port)
            var joined = already
            for d in devices.oncePerInterface where !joined.contains(d.name) {
                try await (channel.channel as! MulticastChannel).joinGroup(groupAddress, device: d).get()
                joined.insert(d.name)
            }
            return joined
        }

        /// Serves `first` (or a channel opened later) until `stop`, reopening after a failure.
        private func run(_ first: Datagrams?, joined: Set<String>) async {
            var next = first, joined = joined, failing = first == nil
            while !stopped {
                guard let channel = next else {
                    try? await Task.sleep(for: .seconds(Self.retrySeconds))
                    guard !stopped else { return }
                    do {
                        (next, joined) = try await open()
                        if failing { events(.answeringProbes) }
                        failing = false
                    } catch {}
                    continue
                }
                next = nil
                let closeNow = state.withLockedValue { s in
                    s.channel = channel
                    return s.stopped
                }
                if closeNow { try? await channel.channel.close() }
                let ending = await serve(channel, joined: joined)
                state.withLockedValue { $0.channel = nil }
                guard !stopped else { return }
                events(.probesStopped(error: ending, retrySeconds: Self.retrySeconds))
                failing = true
            }
        }

        /// Answers probes on `channel` and joins interfaces that appear, until the channel
        /// closes; returns why it ended (nil: the socket closed).
        private func serve(_ channel: Datagrams, joined: Set<String>) async -> String? {
            let ending = NIOLockedValueBox<String?>(nil)
            try? await channel.executeThenClose { inbound, outbound in
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        var joined = joined
                        while !Task.isCancelled {
                            try? await Task.sleep(for: .seconds(Self.retrySeconds))
                            guard !Task.isCancelled, let devices = try? MessageProbing.ipv4MulticastDevices(interface: nil) else { continue }
                            if let now = try? await self.join(channel, devices, already: joined), now != joined {
                                self.events(.answeringProbesOn(now.subtracting(joined).sorted()))
                                joined = now
                            }
                        }
                    }
                    group.addTask {
                        do {
                            for try await datagram in inbound { await self.answer(datagram, outbound) }
                        } catch {
                            ending.withLockedValue { $0 = "\(error)" }
                        }
                    }
                    await group.next()
                    group.cancelAll()
                }
            }
            return ending.withLockedValue { $0 }
        }

        private func answer(_ datagram: AddressedEnvelope<ByteBuffer>, _ outbound: NIOAsyncChannelOutboundWriter<AddressedEnvelope<ByteBuffer>>) async {
            guard let probe = MessageProbe(Array(datagram.data.readableBytesView)) else { return }
            guard let entry = table.lookup(probe.tag, at: clock()) else { return }  // not for us: silence
            let source = datagram.remoteAddress.ipAddress ?? "?", now = ExchangeTransport.now()
            guard rate.take(source, now: now) else {
                ignored.record(.probeIgnored(from: source, .tooMany(perSecond: Int(rate.perSecond))), now: now)
                return
            }
            guard seen.admit(probe.nonce, now: now) else {
                ignored.record(.probeIgnored(from: source, .replayed), now: now)
                return
            }
            let answer = MessageProbeAnswer(nonce: probe.nonce, port: UInt16(tcpPort),
                                            mac: entry.keys.answerMAC(tag: probe.tag, nonce: probe.nonce, port: UInt16(tcpPort)))
            // One answer that cannot be sent (no route back, a full queue) must not end the responder.
            do {
                try await outbound.write(AddressedEnvelope(remoteAddress: datagram.remoteAddress, data: ByteBuffer(bytes: answer.encoded)))
            } catch {
                ignored.record(.probeIgnored(from: source, .unanswerable(error: "\(error)")), now: now)
            }
        }
    }

    /// Probes the group on every multicast interface (every 250 ms) until a listener answers with
    /// a valid MAC or `deadline` (monotonic seconds) passes; returns the listener's TCP address.
    public static func find(keys: PairKeys, unixTime: @escaping @Sendable () -> Int64, deadline: Double, interface: String? = nil,
                            steps: @escaping @Sendable (DeliveryStep) -> Void) async throws(MessageDeliveryFailure) -> SocketAddress? {
        let devices = try ipv4MulticastDevices(interface: interface)
        var senders: [Datagrams] = []
        let groupAddress: SocketAddress
        do {
            groupAddress = try SocketAddress(ipAddress: group, port: port)
            for d in devices {
                guard case .v4(let a)? = d.address else { continue }
                let s = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .bind(host: a.host, port: 0) { ch in
                        ch.eventLoop.makeCompletedFuture { try Datagrams(wrappingChannelSynchronously: ch) }
                    }
                let options = s.channel as! SocketOptionProvider
                try await options.setIPMulticastTTL(1).get()
                try await options.setIPMulticastLoop(1).get()
                try await options.setIPMulticastIF(a.address.sin_addr).get()
                senders.append(s)
            }
        } catch {
            for s in senders { try? await s.executeThenClose { _, _ in } }
            throw .io(.cannotSendToGroup(group, port: port, error: "\(error)"))
        }
        let found = NIOLockedValueBox<SocketAddress?>(nil)
        let sentProbes = NIOLockedValueBox<[MessageProbe]>([])
        await withTaskGroup(of: Void.self) { all in
            for sender in senders {
                all.addTask {
                    try? await sender.executeThenClose { inbound, outbound in
                        await withTaskGroup(of: Void.self) { pair in
                            pair.addTask {
                                do {
                                    for try await datagram in inbound {
                                        guard let answer = MessageProbeAnswer(Array(datagram.data.readableBytesView)) else { continue }
                                        // Answers a probe of ours, from the holder of the pair key.
                                        let ok = sentProbes.withLockedValue { $0 }.contains { p in
                                            p.nonce == answer.nonce && keys.answerMAC(tag: p.tag, nonce: p.nonce, port: answer.port) == answer.mac
                                        }
                                        guard ok else {
                                            steps(.ignoredAnswer(from: datagram.remoteAddress.ipAddress ?? "?"))
                                            continue
                                        }
                                        var address = datagram.remoteAddress
                                        address.port = Int(answer.port)
                                        found.withLockedValue { if $0 == nil { $0 = address } }
                                        return
                                    }
                                } catch {}
                            }
                            pair.addTask {
                                while found.withLockedValue({ $0 }) == nil, ExchangeTransport.now() < deadline, !Task.isCancelled {
                                    let probe = MessageProbe(tag: keys.tag(window: PairKeys.window(at: unixTime())))
                                    sentProbes.withLockedValue { $0.append(probe) }
                                    try? await outbound.write(AddressedEnvelope(remoteAddress: groupAddress, data: ByteBuffer(bytes: probe.encoded)))
                                    for _ in 0..<25 where found.withLockedValue({ $0 }) == nil && ExchangeTransport.now() < deadline {
                                        try? await Task.sleep(for: .milliseconds(10))
                                    }
                                }
                            }
                            await pair.next()
                            pair.cancelAll()
                        }
                    }
                }
            }
        }
        return found.withLockedValue { $0 }
    }
}
