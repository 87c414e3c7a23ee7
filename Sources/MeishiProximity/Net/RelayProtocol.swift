import MeishiCard
import MeishiCrypto
import MeishiText

// magic-wormhole's mailbox and transit relay as meishi speaks them (docs/PROTOCOL.md §5.8),
// without sockets: the NIO side (`Relay.swift`) feeds these what arrives and sends what they return.

/// Why an exchange through the mailbox server and transit relay did not get as far as the session.
public enum RelayFailure: Error, Equatable, Sendable {
    /// The mailbox server could not be reached: connecting to it failed.
    case mailboxUnreachable(MailboxURL, ExchangeFailure.ConnectProblem)
    /// Something answered at the mailbox URL but did not speak WebSocket: it answered plain
    /// HTTP (nil), or the upgrade failed (how).
    case notAMailbox(MailboxURL, ExchangeFailure.ConnectProblem?)
    /// Two other sides hold the code's nameplate already (the server said "crowded").
    case nameplateTaken(Int)
    /// The mailbox server refused us or a message of ours.
    case refusedByMailbox(MailboxRefusal)
    /// The mailbox server's connection ended before we were done with it.
    case mailboxLost(MailboxLoss)
    /// Nobody else claimed the nameplate within the time allowed.
    case peerNeverCame(Int)
    /// The other side's message in meishi's phase is not a transit nonce.
    case peerNotMeishi
    /// The transit relay could not be reached: connecting to it failed.
    case transitUnreachable(TransitAddress, ExchangeFailure.ConnectProblem)
    /// The transit relay did not pair us.
    case transitRefused(TransitRefusal)
    /// The connection that carried the session (through the transit relay, or direct) ended
    /// before the session did: `path` names it ("the transit relay tcp:HOST:PORT").
    case sessionLost(path: String, ConnectionLoss)
}

/// How the mailbox server refused us (`RelayFailure.refusedByMailbox`).
public enum MailboxRefusal: Equatable, Sendable {
    /// Its error, in its words (escaped for a terminal where it arrives in a mailbox message).
    case said(String)
    /// It sent something that is not a mailbox message.
    case notAMailboxMessage
    /// It sent a second `claimed`, or one without a mailbox.
    case badClaim
    /// Its first message was not a welcome.
    case noWelcome
    /// It sent a message longer than meishi reads (`maximumBytes`): the other side's, relayed, or its own.
    case messageTooLarge(maximumBytes: Int)
}

/// How the mailbox server's connection ended early (`RelayFailure.mailboxLost`).
public enum MailboxLoss: Equatable, Sendable {
    /// It closed the connection (before what, when something was awaited).
    case closed(before: MailboxWait?)
    /// The connection failed.
    case failed(ExchangeFailure.ConnectProblem)
    /// No welcome came within `seconds`.
    case noWelcome(seconds: Int64)
    /// The connection was lost (a listener's mailbox, for no error it could name).
    case lost

    /// What a side waited for on the mailbox when the server closed the connection.
    public enum MailboxWait: Equatable, Sendable {
        /// The other side of an exchange.
        case otherSide
        /// The listener a note's sender called.
        case listener
        /// The server's welcome.
        case welcome
    }
}

/// How the transit relay did not pair us (`RelayFailure.transitRefused`).
public enum TransitRefusal: Equatable, Sendable {
    /// It answered this line (`impatient`, `bad handshake`), not `ok`.
    case answered(String)
    /// It answered something longer than a transit relay's line.
    case notARelayLine
    /// It closed the connection before pairing us.
    case closedBeforePairing
    /// Transit v2: neither a direct connection nor the relay paired us in time.
    case nobodyPairedInTime
}

/// Where the mailbox server and the transit relay are.
public struct RelayServers: Sendable, Equatable {
    /// The mailbox's WebSocket URL, `ws://HOST[:PORT][/PATH]`.
    public var mailbox: MailboxURL
    /// The transit relay, `tcp:HOST:PORT`.
    public var transit: TransitAddress

    /// Offer and try direct connections (transit v2, docs/PROTOCOL.md §5.8); false: the relay
    /// alone, and no local address is told to the other side or the mailbox (`--no-direct`).
    public var direct = true

    public static let defaultMailbox = "ws://relay.magic-wormhole.io:4000/v1"
    public static let defaultTransit = "tcp:transit.magic-wormhole.io:4001"

    public init(mailbox: MailboxURL, transit: TransitAddress) {
        self.mailbox = mailbox
        self.transit = transit
    }
}

/// A mailbox server's `ws://` URL.
public struct MailboxURL: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: Int
    public let path: String

    public var description: String { "ws://\(host.contains(":") ? "[\(host)]" : host):\(port)\(path)" }

    /// Parses `ws://HOST[:PORT][/PATH]` (IPv6 in brackets; the port defaults to 80); nil otherwise.
    public init?(_ text: String) {
        guard text.hasPrefix("ws://") else { return nil }
        let rest = text.dropFirst(5)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = String(rest[..<slash])
        let path = slash == rest.endIndex ? "/" : String(rest[slash...])
        guard let (host, port) = Self.hostPort(authority, defaultPort: 80),
              path.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else { return nil }
        self.host = host
        self.port = port
        self.path = path
    }

    /// `HOST`, `HOST:PORT`, `[IPV6]` or `[IPV6]:PORT`, the port 1…65535.
    static func hostPort(_ s: String, defaultPort: Int?) -> (String, Int)? {
        var host: Substring, portText: Substring?
        if s.hasPrefix("[") {
            guard let close = s.firstIndex(of: "]") else { return nil }
            host = s[s.index(after: s.startIndex)..<close]
            let after = s[s.index(after: close)...]
            if after.isEmpty { portText = nil } else {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else {
            guard s.filter({ $0 == ":" }).count <= 1 else { return nil }
            let parts = s.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = parts[0]
            portText = parts.count == 2 ? parts[1] : nil
        }
        guard !host.isEmpty, host.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != "/" && $0 != "@" }) else { return nil }
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p), portText.allSatisfy(\.isASCII) else { return nil }
            return (String(host), p)
        }
        guard let defaultPort else { return nil }
        return (String(host), defaultPort)
    }
}

/// A transit relay's address, `tcp:HOST:PORT` (as magic-wormhole's `--transit-helper`).
public struct TransitAddress: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: Int

    public var description: String { "tcp:\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    public init?(_ text: String) {
        guard text.hasPrefix("tcp:"), let (host, port) = MailboxURL.hostPort(String(text.dropFirst(4)), defaultPort: nil) else { return nil }
        self.host = host
        self.port = port
    }
}

/// A direct TCP address a side offers the other in its hints message (docs/PROTOCOL.md §5.8):
/// an IPv4 address it listens on, never a name (nothing the peer sends makes us resolve a name).
public struct DirectHint: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: Int

    public var description: String { "\(host):\(port)" }

    /// Nil unless `host` is a dotted IPv4 address and `port` 1…65535.
    public init?(host: String, port: Int) {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ $0.count <= 3 && !$0.isEmpty && $0.allSatisfy(\.isASCII) && UInt8($0) != nil }),
              (1...65535).contains(port) else { return nil }
        self.host = host
        self.port = port
    }
}

/// Which connection carried a session met on the mailbox server.
public enum RelayPath: String, Sendable {
    /// A TCP connection between the two machines, to an address of the transit hints.
    case direct
    /// The transit relay.
    case relay
}

/// One side of a meeting on a mailbox server: bind, claim the code's nameplate, open its mailbox,
/// add our transit nonce, read the other side's, release (docs/PROTOCOL.md §5.8).
public struct MailboxSession: Sendable {
    public static let appID = "meishi.example/exchange-v1"
    public static let phase = "meishi-transit-v1"
    /// The phase of the direct hints, added before the nonce (docs/PROTOCOL.md §5.8).
    public static let hintsPhase = "meishi-hints-v1"
    /// The most hints read from the other side.
    public static let maximumHints = 8
    public static let nonceBytes = 32

    /// 16 lowercase hex digits, fresh for each run.
    public let side: String
    public let nameplate: Int
    let nonce: [UInt8]
    /// The mailbox the server gave for the nameplate, once claimed.
    public private(set) var mailbox: String?
    /// The other side and its nonce, once its message arrived.
    public private(set) var peer: (side: String, nonce: [UInt8])?
    /// This side's direct hints; nil: none offered, the relay alone as transit v1.
    let hints: [DirectHint]?
    /// The other side's direct hints, once its hints message arrived (it comes before its nonce).
    public private(set) var peerHints: [DirectHint]?

    /// Both sides offered hints (maybe none): transit v2, the race of direct connections and the
    /// relay with role lines and `go`. Otherwise transit v1: the relay alone, as before.
    public var racesDirect: Bool { hints != nil && peerHints != nil }

    /// What the server's message means for the run.
    public enum Event: Equatable, Sendable {
        /// A message for the server (a WebSocket text frame).
        case send([UInt8])
        /// The other side's nonce is in: the transit token, and whether this side dials the session.
        case met(token: String, dialer: Bool)
    }

    /// `hints`: the direct addresses to offer (an empty list still races: this side dials the
    /// other's); nil offers none and speaks transit v1.
    public init(nameplate: Int, side: [UInt8] = SecureRandom.bytes(8), nonce: [UInt8] = SecureRandom.bytes(MailboxSession.nonceBytes),
                hints: [DirectHint]? = nil) {
        precondition(side.count == 8 && nonce.count == Self.nonceBytes)
        self.nameplate = nameplate
        self.side = Hex.encode(side)
        self.nonce = nonce
        self.hints = hints
    }

    /// The first messages, sent as soon as the WebSocket is open: bind and claim.
    public func opening() -> [[UInt8]] {
        [Self.message(["type": .string("bind"), "appid": .string(Self.appID), "side": .string(side)]),
         Self.message(["type": .string("claim"), "nameplate": .string(String(nameplate))])]
    }

    /// The last message, once the transit relay paired us (`happy`) or failed (`errory`).
    public func closing(mood: String) -> [UInt8]? {
        mailbox.map { Self.message(["type": .string("close"), "mailbox": .string($0), "mood": .string(mood)]) }
    }

    /// For a run that ended on the mailbox before the other side's nonce came (its timeout, a
    /// side that is not meishi's): what a fresh connection sends to leave as this same side, so the
    /// code's number is free for the next try: bind, release the nameplate, close the mailbox.
    public func leaving(mood: String) -> [[UInt8]] {
        [Self.message(["type": .string("bind"), "appid": .string(Self.appID), "side": .string(side)]),
         Self.message(["type": .string("release"), "nameplate": .string(String(nameplate))])]
            + (closing(mood: mood).map { [$0] } ?? [])
    }

    /// Takes one message from the server.
    public mutating func receive(_ text: [UInt8]) throws(RelayFailure) -> [Event] {
        let (type, json) = try Self.serverMessage(text, crowded: .nameplateTaken(nameplate))
        switch type {
        case "welcome":
            return []
        case "claimed":
            guard mailbox == nil, case .string(let id)? = json["mailbox"] else { throw .refusedByMailbox(.badClaim) }
            mailbox = id
            let offer = hints.map { [Event.send(Self.message(["type": .string("add"), "phase": .string(Self.hintsPhase),
                                                              "body": .string(Hex.encode(Self.hintsBody($0)))]))] } ?? []
            return [.send(Self.message(["type": .string("open"), "mailbox": .string(id)]))] + offer
                + [.send(Self.message(["type": .string("add"), "phase": .string(Self.phase), "body": .string(Hex.encode(nonce))]))]
        case "message" where json["phase"] == .string(Self.hintsPhase):
            guard case .string(let from)? = json["side"], from != side, peer == nil, peerHints == nil else { return [] }
            guard case .string(let body)? = json["body"], let bytes = Hex.decode(body), let hints = Self.hints(in: bytes) else {
                throw .peerNotMeishi
            }
            peerHints = hints
            return []
        case "message":
            guard case .string(let from)? = json["side"], case .string(let phase)? = json["phase"], from != side, phase == Self.phase,
                  peer == nil else { return [] }
            guard case .string(let body)? = json["body"], body.utf8.count == 2 * Self.nonceBytes, let theirs = Hex.decode(body),
                  from.utf8.count == 16, Hex.decode(from) != nil else { throw .peerNotMeishi }
            peer = (from, theirs)
            let dialer = Array(side.utf8).lexicographicallyPrecedes(Array(from.utf8))
            let token = dialer ? Self.token(low: (side, nonce), high: (from, theirs)) : Self.token(low: (from, theirs), high: (side, nonce))
            return [.send(Self.message(["type": .string("release"), "nameplate": .string(String(nameplate))])),
                    .met(token: token, dialer: dialer)]
        default:
            // ack, released, closed, pong, nameplates: nothing meishi needs.
            return []
        }
    }

    /// The transit token: SHA-256 over both sides and nonces, the side that sorts first first.
    public static func token(low: (side: String, nonce: [UInt8]), high: (side: String, nonce: [UInt8])) -> String {
        Hex.encode(SHA256.hash(Array("meishi-transit-token-v1".utf8) + [0] + Array(low.side.utf8) + low.nonce
                               + Array(high.side.utf8) + high.nonce))
    }

    static func message(_ members: [String: JSONValue]) -> [UInt8] { JCS.canonicalize(.object(members)) }

    /// A message from the mailbox server: its type and members. A welcome that carries an error,
    /// or an `error` message, is thrown in the server's words (`crowded`: two sides hold it already).
    static func serverMessage(_ text: [UInt8], crowded: RelayFailure) throws(RelayFailure) -> (type: String, json: JSONValue) {
        guard let json = try? StrictJSONParser.parse(text), case .string(let type)? = json["type"] else {
            throw .refusedByMailbox(.notAMailboxMessage)
        }
        if type == "welcome", case .string(let why)? = json["welcome"]?["error"] { throw .refusedByMailbox(.said(TerminalText.sanitized(why))) }
        if type == "error" {
            let why: String = if case .string(let e)? = json["error"] { e } else { "an error" }
            if why == "crowded" { throw crowded }
            throw .refusedByMailbox(.said(TerminalText.sanitized(why)))
        }
        return (type, json)
    }

    /// The hints message's body before hex: `{"direct-tcp-v1":[{"hostname":H,"port":P},…]}` (JCS).
    public static func hintsBody(_ hints: [DirectHint]) -> [UInt8] {
        JCS.canonicalize(.object(["direct-tcp-v1": .array(hints.map {
            .object(["hostname": .string($0.host), "port": .number(Double($0.port))])
        })]))
    }

    /// The hints of a body; nil when it is not one (more than `maximumHints` are cut, not refused).
    static func hints(in body: [UInt8]) -> [DirectHint]? {
        guard let json = try? StrictJSONParser.parse(body), case .array(let list)? = json["direct-tcp-v1"] else { return nil }
        var out: [DirectHint] = []
        for item in list {
            guard case .string(let host)? = item["hostname"], case .number(let port)? = item["port"], port == port.rounded(),
                  let hint = DirectHint(host: host, port: Int(exactly: port) ?? 0) else { return nil }
            // Never this machine's own services: loopback, 0.0.0.0 and multicast are not dialled.
            guard let first = UInt8(host.prefix { $0 != "." }), first != 127, first != 0, first < 224 else { continue }
            out.append(hint)
        }
        return Array(out.prefix(maximumHints))
    }
}

/// The transit relay's handshake: our request line, and its answer read one piece at a time.
public struct TransitHandshake: Sendable {
    /// The longest answer line read before giving up on the relay.
    public static let maximumLine = 64
    private var line: [UInt8] = []

    public init() {}

    /// Transit v2's role line, sent on every connection of the race (direct, or through the relay
    /// after its `ok`): `meishi-transit-v2 dialer TOKEN\n` or `… listener …`.
    public static func roleLine(token: String, dialer: Bool) -> [UInt8] {
        Array("meishi-transit-v2 \(dialer ? "dialer" : "listener") \(token)\n".utf8)
    }

    /// `please relay TOKEN for side SIDE\n`.
    public static func request(token: String, side: String) -> [UInt8] {
        Array("please relay \(token) for side \(side)\n".utf8)
    }

    /// Takes bytes from the relay: nil while the answer line is incomplete; once it is `ok`, the
    /// bytes after it (already the other side's).
    public mutating func feed<B: Collection>(_ bytes: B) throws(RelayFailure) -> [UInt8]? where B.Element == UInt8 {
        var rest = bytes[...]
        while let b = rest.first {
            rest = rest.dropFirst()
            if b == UInt8(ascii: "\n") {
                guard line == Array("ok".utf8) else {
                    throw .transitRefused(.answered(TerminalText.sanitized(String(decoding: line, as: UTF8.self))))
                }
                return Array(rest)
            }
            line.append(b)
            guard line.count <= Self.maximumLine else { throw .transitRefused(.notARelayLine) }
        }
        return nil
    }
}
