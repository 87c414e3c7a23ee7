import MeishiCard
import MeishiCrypto
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// One announcement on the multicast group (docs/PROTOCOL.md §5.5). It says nothing about who
/// sends it: a random session id, a TCP port, and optionally an alias and the rendezvous number N
/// of a code (never anything derived from the code's words: they are the PAKE's password).
public struct Announcement: Equatable, Sendable {
    public static let magic: [UInt8] = Array("MSHD".utf8)
    public static let version: UInt8 = 1
    public static let maximumSize = 128
    public static let maximumAliasBytes = 32

    public var sessionID: [UInt8]
    public var port: UInt16
    /// N of the code `N-word-word`, 1…999: a hint for whom to try, not a secret.
    public var nameplate: UInt16?
    public var alias: String?
    /// A newcomer's request: whoever hears it announces at once instead of at its next tick
    /// (as an mDNS query does), so a pair meets in milliseconds.
    public var wantsAnswer = false
    /// A member of a table (`exchange --table`, §5.7): it pairs with every member announcing the
    /// same N, never with a pairwise `--code` run. Only with a code number.
    public var table = false

    public init(sessionID: [UInt8], port: UInt16, nameplate: UInt16? = nil, alias: String? = nil,
                wantsAnswer: Bool = false, table: Bool = false) {
        precondition(!table || nameplate != nil, "a table announces its code's number")
        self.sessionID = sessionID
        self.port = port
        self.nameplate = nameplate
        self.alias = alias
        self.wantsAnswer = wantsAnswer
        self.table = table
    }

    /// The same peer says the same thing (whether it asks for an answer aside).
    public static func == (a: Announcement, b: Announcement) -> Bool {
        a.sessionID == b.sessionID && a.port == b.port && a.alias == b.alias && a.nameplate == b.nameplate && a.table == b.table
    }

    /// Whether the peer announces the same rendezvous number as `code`.
    public func matches(code: ExchangeCode) -> Bool { nameplate == UInt16(code.nameplate) }

    public var encoded: [UInt8] {
        var out = Self.magic + [Self.version] + sessionID + [UInt8(port >> 8), UInt8(port & 0xFF)]
        var flags: UInt8 = 0
        if nameplate != nil { flags |= 1 }
        if alias != nil { flags |= 2 }
        if wantsAnswer { flags |= 4 }
        if table { flags |= 8 }
        out.append(flags)
        if let nameplate { out += [UInt8(nameplate >> 8), UInt8(nameplate & 0xFF)] }
        if let alias {
            let a = Array(alias.utf8.prefix(Self.maximumAliasBytes))
            out += [UInt8(a.count)] + a
        }
        return out
    }

    /// Parses a datagram; nil for anything malformed, oversized or of another version.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count <= Self.maximumSize, bytes.count >= 24, Array(bytes.prefix(4)) == Self.magic,
              bytes[4] == Self.version else { return nil }
        sessionID = Array(bytes[5..<21])
        port = UInt16(bytes[21]) << 8 | UInt16(bytes[22])
        guard port != 0 else { return nil }
        let flags = bytes[23]
        // Bit 3 (a table) only with bit 0 (the code's number): a table is named by it.
        guard flags & ~15 == 0, flags & 8 == 0 || flags & 1 != 0 else { return nil }
        wantsAnswer = flags & 4 != 0
        table = flags & 8 != 0
        var i = 24
        if flags & 1 != 0 {
            guard bytes.count >= i + 2 else { return nil }
            let n = UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1])
            guard (1...999).contains(n) else { return nil }
            nameplate = n
            i += 2
        }
        if flags & 2 != 0 {
            guard i < bytes.count else { return nil }
            let n = Int(bytes[i])
            guard n <= Self.maximumAliasBytes, bytes.count >= i + 1 + n,
                  let a = String(validating: bytes[i + 1..<i + 1 + n], as: UTF8.self) else { return nil }
            alias = a
            i += 1 + n
        }
        guard i == bytes.count else { return nil }
    }
}

/// A peer seen on the group.
public struct DiscoveredPeer: Equatable, Sendable {
    public let announcement: Announcement
    /// The first address heard for this session id in each family (pinned: later datagrams from
    /// elsewhere never move it), with the IPv6 scope of a link-local sender.
    public var addresses: [SocketAddress]
    public var lastSeen: Double
    /// When this session id was first heard.
    public let firstSeen: Double

    public init(announcement: Announcement, address: SocketAddress, lastSeen: Double) {
        self.announcement = announcement
        self.addresses = [address]
        self.lastSeen = lastSeen
        self.firstSeen = lastSeen
    }

    /// Where to reach the peer: the first address heard for it. Not "IPv4 when there is one": when
    /// the peer's IPv4 datagram was lost and its IPv6 one arrived, anyone replaying that announcement
    /// from an IPv4 address would otherwise become the address dialled (an IPv6 link-local
    /// address carries the scope of the interface it was heard on).
    public var address: SocketAddress { addresses[0] }

    /// The address as people read it.
    public var host: String { address.ipAddress ?? "?" }

    /// The address people read best: its IPv4 one when heard on both families.
    public var readableHost: String {
        (addresses.first { if case .v4 = $0 { true } else { false } } ?? address).ipAddress ?? "?"
    }

    /// The peer's TCP endpoint: its address with the announced port.
    public var tcpAddress: SocketAddress {
        var a = address
        a.port = Int(announcement.port)
        return a
    }
}

/// Announces this session on the multicast group and collects other sessions' announcements.
public final class Discovery: Sendable {
    /// Administratively scoped IPv4 group (RFC 2365) and a port of our own.
    public static let group = "239.255.77.23"
    /// Link-local IPv6 group used alongside it where interfaces have IPv6.
    public static let group6 = "ff02::6d73:6864"
    public static let port = 47_824
    /// A peer not heard from for this long is forgotten.
    public static let expiry: Double = 3.5

    public let sessionID: [UInt8]
    /// Most peers kept at once. When the table is full, a source address holding at least two
    /// entries fewer than the address holding most takes that address's newest entry's place;
    /// otherwise announcements of further session ids are ignored until some expire.
    static let maximumPeers = 256
    /// Peers one source address may announce (several meishi on one machine, not a flood).
    static let maximumPeersPerAddress = 4
    typealias Datagrams = NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>
    private let receivers: [Datagrams]
    private let senders: [(Channel, SocketAddress)]
    private let peers = NIOLockedValueBox<[String: DiscoveredPeer]>([:])
    /// Every peer ever recorded in this run, as first recorded (a table reports those it never paired with).
    private let everHeard = NIOLockedValueBox<[String: DiscoveredPeer]>([:])
    private let announcement: [UInt8]
    /// The same announcement asking to be answered at once: the first burst sends it.
    private let query: [UInt8]
    private let lastAnswer = NIOLockedValueBox<Double>(-1)
    /// Rung whenever an announcement is recorded, so `waitForChoice` looks again at once.
    private let doorbell = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))

    /// Joins the group on every usable IPv4 interface (or only `interface`) and starts listening.
    /// Without `interface`, only LAN interfaces are used (`InterfaceRules`); `events` hears which
    /// were left out and why, and where it announces.
    public static func start(tcpPort: Int, code: ExchangeCode?, alias: String?, interface: String?, table: Bool = false,
                             events: @escaping @Sendable (ExchangeEvent) -> Void) async throws(ExchangeFailure) -> Discovery {
        let sessionID = SecureRandom.bytes(16)
        let nameplate = code.map { UInt16($0.nameplate) }
        let message = Announcement(sessionID: sessionID, port: UInt16(tcpPort), nameplate: nameplate, alias: alias, table: table).encoded
        let query = Announcement(sessionID: sessionID, port: UInt16(tcpPort), nameplate: nameplate, alias: alias, wantsAnswer: true,
                                 table: table).encoded
        let all: [NIONetworkDevice]
        do { all = try System.enumerateDevices() } catch { throw .io(.cannotListInterfaces(error: "\(error)")) }
        if let interface {
            let named = all.filter { $0.name == interface }
            guard !named.isEmpty else { throw .noSuchInterface(interface, available: Set(all.map(\.name)).sorted()) }
            guard named.contains(where: \.multicastSupported) else { throw .interfaceCannotMulticast(interface) }
        }
        var usable = all.filter { d in d.multicastSupported && interface.map { d.name == $0 } ?? true }
        var leftOut: [String: InterfaceExclusion] = [:]
        if interface == nil {
            usable = usable.filter { d in
                guard let facts = InterfaceRules.facts(d.name), let why = InterfaceRules.exclusion(facts) else { return true }
                leftOut[d.name] = why
                return false
            }
            for (name, why) in leftOut.sorted(by: { $0.key < $1.key }) {
                events(.step(.notAnnouncing(interface: name, reason: why)))
            }
        }
        let v4 = usable.filter { if case .v4? = $0.address { true } else { false } }
        let v6 = usable.filter { d in
            guard case .v6(let a)? = d.address else { return false }
            let b = withUnsafeBytes(of: a.address.sin6_addr) { Array($0) }
            return b[0] == 0xFE && b[1] & 0xC0 == 0x80  // link-local fe80::/10
        }
        guard !v4.isEmpty || !v6.isEmpty else {
            throw .unreachable(interface.map { .noUsableInterface(named: $0) }
                               ?? (leftOut.isEmpty ? .noMulticastInterface : .noLANInterface(leftOut: leftOut.keys.sorted())))
        }
        let group = MultiThreadedEventLoopGroup.singleton
        var receivers: [Datagrams] = []
        var senders: [(Channel, SocketAddress)] = []
        /// A receiver that will not be used must still be closed through its async channel:
        /// dropping it unfinished traps in NIOAsyncWriter's deinit.
        func discard(_ rs: [Datagrams]) async {
            for r in rs { try? await r.executeThenClose { _, _ in } }
        }
        func receiver(_ host: String, v6only: Bool) async throws -> Datagrams {
            var b = DatagramBootstrap(group: group).channelOption(.socketOption(.so_reuseaddr), value: 1)
            if v6only { b = b.channelOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 1) }
            return try await b.bind(to: try SocketAddress(ipAddress: host, port: port)) { channel in
                channel.eventLoop.makeCompletedFuture { try Datagrams(wrappingChannelSynchronously: channel) }
            }
        }
        do {
            if !v4.isEmpty {
                let r = try await receiver("0.0.0.0", v6only: false)
                receivers.append(r)
                // Join after bind, once per interface.
                let groupAddress = try SocketAddress(ipAddress: Self.group, port: port)
                for d in v4.oncePerInterface { try await (r.channel as! MulticastChannel).joinGroup(groupAddress, device: d).get() }
                for d in v4 {
                    guard case .v4(let a)? = d.address else { continue }
                    // The options go with the bind: one trip to the event loop, not four.
                    let sender = try await DatagramBootstrap(group: group)
                        .channelOption(ChannelOptions.Types.SocketOption(level: .ip, name: .ip_multicast_ttl), value: 1)
                        .channelOption(ChannelOptions.Types.SocketOption(level: .ip, name: .ip_multicast_loop), value: 1)
                        .channelOption(ChannelOptions.Types.SocketOption(level: .ip, name: .ip_multicast_if),
                                       value: Int(a.address.sin_addr.s_addr))  // the first 4 bytes: an in_addr
                        .bind(to: try SocketAddress(ipAddress: a.host, port: 0)).get()
                    senders.append((sender, groupAddress))
                }
            }
        } catch {
            for s in senders { try? await s.0.close() }
            await discard(receivers)
            throw .io(.cannotJoinGroup(Self.group, port: port, error: "\(error)"))
        }
        // IPv6 link-local where available; a failure here leaves IPv4 on its own.
        var v6Names: [String] = []
        if !v6.isEmpty {
            var pending: Datagrams?
            do {
                let r = try await receiver("::", v6only: true)
                pending = r
                let groupAddress = try SocketAddress(ipAddress: Self.group6, port: port)
                for d in v6.oncePerInterface { try await (r.channel as! MulticastChannel).joinGroup(groupAddress, device: d).get() }
                receivers.append(r)
                pending = nil
                for d in v6.oncePerInterface {
                    let sender = try await DatagramBootstrap(group: group)
                        .channelOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_multicast_if), value: d.interfaceIndex)
                        .channelOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_multicast_hops), value: 1)
                        .channelOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_multicast_loop), value: 1)
                        .bind(to: try SocketAddress(ipAddress: "::", port: 0)).get()
                    senders.append((sender, groupAddress))
                    v6Names.append(d.name)
                }
            } catch {
                if let pending { await discard([pending]) }
                events(.ipv6Unavailable(error: "\(error)"))
                if receivers.isEmpty { throw .io(.cannotJoinIPv6Group(error: "\(error)")) }
            }
        }
        let names = Set(v4.map(\.name) + v6Names).sorted()
        let groups = (v4.isEmpty ? [] : ["\(Self.group):\(port)"]) + (v6Names.isEmpty ? [] : ["[\(Self.group6)]:\(port)"])
        events(.announcing(interfaces: names, groups: groups))
        return Discovery(sessionID: sessionID, receivers: receivers, senders: senders, announcement: message, query: query)
    }

    private init(sessionID: [UInt8], receivers: [Datagrams], senders: [(Channel, SocketAddress)], announcement: [UInt8],
                 query: [UInt8]) {
        self.query = query
        self.sessionID = sessionID
        self.receivers = receivers
        self.senders = senders
        self.announcement = announcement
    }

    func announce(asking: Bool = false) {
        let bytes = asking ? query : announcement
        for (channel, target) in senders {
            channel.writeAndFlush(AddressedEnvelope(remoteAddress: target, data: ByteBuffer(bytes: bytes)), promise: nil)
        }
    }

    /// Answers a newcomer's request at once, at most every 100 ms (a flood of requests gets a
    /// few answers, not one each).
    func answer(now: Double) {
        let due = lastAnswer.withLockedValue { last in
            guard now - last >= 0.1 else { return false }
            last = now
            return true
        }
        if due { announce() }
    }


    /// Adds or refreshes a peer. The first address heard for a session id in each address family
    /// is pinned: a later datagram with the same id from elsewhere (a replay) never moves it, and
    /// one with other content under that id is ignored. The table holds at most `maximumPeers`,
    /// and at most `maximumPeersPerAddress` announced from one source address; a full table gives
    /// way to an address holding fewer entries than the address holding most.
    static func record(_ a: Announcement, from address: SocketAddress, now: Double, in p: inout [String: DiscoveredPeer]) {
        let key = Hex.encode(a.sessionID)
        if var old = p[key] {
            guard old.announcement == a else { return }  // same id, other content: not the peer we pinned
            if !old.addresses.contains(where: { sameFamily($0, address) }) { old.addresses.append(address) }
            // Only a pinned address keeps the peer alive.
            if old.addresses.contains(where: { $0.ipAddress == address.ipAddress }) { old.lastSeen = now }
            p[key] = old
            return
        }
        p = p.filter { now - $0.value.lastSeen < expiry }
        // One sender cannot fill the table with session ids of its own and shut out the others.
        let mine = p.values.filter({ $0.addresses.contains { $0.ipAddress == address.ipAddress } }).count
        guard mine < maximumPeersPerAddress else { return }
        if p.count >= maximumPeers {
            // Full: the newcomer's address takes a place from the address holding most, if it holds
            // at least two more (forged ids spread over many addresses cannot keep another out).
            let held = Dictionary(grouping: p.values) { $0.address.ipAddress ?? "" }
            guard let (_, most) = held.max(by: { $0.value.count < $1.value.count }), most.count > mine + 1,
                  let newest = most.max(by: { $0.firstSeen < $1.firstSeen }) else { return }
            p[Hex.encode(newest.announcement.sessionID)] = nil
        }
        p[key] = DiscoveredPeer(announcement: a, address: address, lastSeen: now)
    }

    static func sameFamily(_ a: SocketAddress, _ b: SocketAddress) -> Bool {
        switch (a, b) {
        case (.v4, .v4), (.v6, .v6): true
        default: false
        }
    }

    /// Peers heard within the expiry window, oldest session first.
    public func currentPeers(now: Double) -> [DiscoveredPeer] {
        peers.withLockedValue { p in
            p = p.filter { now - $0.value.lastSeen < Self.expiry }
            return p.values.sorted { $0.announcement.sessionID.lexicographicallyPrecedes($1.announcement.sessionID) }
        }
    }

    /// Every peer recorded since `begin`, expired or not.
    public var heardSoFar: [DiscoveredPeer] { everHeard.withLockedValue { Array($0.values) } }

    /// Background work between `begin` and `stop`.
    private let background = NIOLockedValueBox<(ticker: RepeatedTask?, tasks: [Task<Void, Never>])>((nil, []))

    /// Starts announcing (a burst of 3 asking to be answered, then once a second) and collecting
    /// announcements in the background, until `stop`.
    public func begin() {
        let own = sessionID
        let loop = receivers[0].channel.eventLoop
        let sent = NIOLockedValueBox(0)
        let ticker = loop.scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(250)) { [self] _ in
            let n = sent.withLockedValue { n in defer { n += 1 }; return n }
            if n < 3 || n % 4 == 0 { announce(asking: n < 3) }
        }
        let tasks = receivers.map { receiver in
            Task { [peers, everHeard, doorbell] in
                do {
                    try await receiver.executeThenClose { inbound, _ in
                        for try await envelope in inbound {
                            let bytes = Array(envelope.data.readableBytesView)
                            // Our own session id: our own datagram, or a replay of it.
                            guard let a = Announcement(bytes), a.sessionID != own,
                                  envelope.remoteAddress.ipAddress != nil else { continue }
                            let now = ExchangeTransport.now()
                            let recorded = peers.withLockedValue { p in
                                Self.record(a, from: envelope.remoteAddress, now: now, in: &p)
                                return p[Hex.encode(a.sessionID)]
                            }
                            if let recorded { everHeard.withLockedValue { h in h[Hex.encode(a.sessionID)] = h[Hex.encode(a.sessionID)] ?? recorded } }
                            doorbell.continuation.yield(())
                            if a.wantsAnswer { self.answer(now: now) }
                        }
                    }
                } catch {}
            }
        }
        background.withLockedValue { $0 = (ticker, tasks) }
    }

    /// Waits until `choose` picks a peer among those heard or `deadline` (monotonic seconds)
    /// passes. `choose` is asked again whenever an announcement arrives, at each of `alsoAt`
    /// (a rule that depends on time: discovery's window) and at the deadline; no polling.
    public func waitForChoice(until deadline: Double, alsoAt: [Double] = [],
                              choose: @Sendable ([DiscoveredPeer], Double) -> DiscoveredPeer?) async -> DiscoveredPeer? {
        let loop = receivers[0].channel.eventLoop
        let ring = doorbell.continuation
        let start = ExchangeTransport.now()
        let alarms = (alsoAt + [deadline]).map { at in
            loop.scheduleTask(in: .nanoseconds(Int64(max(0, at - start) * 1e9))) { ring.yield(()) }
        }
        defer { for alarm in alarms { alarm.cancel() } }
        var rings = doorbell.stream.makeAsyncIterator()
        while ExchangeTransport.now() < deadline {
            let now = ExchangeTransport.now()
            if let pick = choose(currentPeers(now: now), now) { return pick }
            guard await rings.next() != nil else { return nil }
        }
        return nil
    }

    /// Stops listening. The other side may not have heard us yet (a lost datagram), so
    /// announcements go on for 4 s in the background while the TCP exchange runs, then the
    /// senders close. Without `linger` (a table that ended: its code is spent) they close at once.
    public func stop(linger: Bool = true) async {
        let (ticker, tasks) = background.withLockedValue { b in defer { b = (nil, []) }; return b }
        ticker?.cancel()
        for receiver in receivers { try? await receiver.channel.close() }
        for t in tasks { await t.value }
        guard linger else {
            for s in senders { try? await s.0.close() }
            return
        }
        announce()
        let loop = receivers[0].channel.eventLoop
        let senders = self.senders
        let lingering = loop.scheduleRepeatedTask(initialDelay: .milliseconds(100), delay: .milliseconds(250)) { [self] _ in announce() }
        loop.scheduleTask(in: .seconds(4)) {
            lingering.cancel()
            for s in senders { s.0.close(promise: nil) }
        }
    }
}

extension Array where Element == NIONetworkDevice {
    /// One entry per interface: the system lists an interface once per address, and joining a
    /// group twice on one interface fails (EADDRINUSE): a second IPv4 address on the interface
    /// (a static alias beside the DHCP lease, a 169.254 address) stopped `exchange` and crashed
    /// `listen` (issue 22's tester, F25).
    var oncePerInterface: [NIONetworkDevice] {
        var seen: Set<String> = []
        return filter { seen.insert($0.name).inserted }
    }
}
