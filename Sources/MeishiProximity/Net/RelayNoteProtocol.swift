import MeishiCard
import MeishiCrypto
import MeishiText

// `send --relay` and `listen --relay` (docs/PROTOCOL.md §9.8): where a pair meets on a
// magic-wormhole mailbox server, and what each side says there, without sockets
// (`RelayNotes.swift` feeds these what arrives and sends what they return).

/// Where the two contacts of a pair meet on a mailbox server on one UTC day: a mailbox named by
/// the pair key, and the two sides each of them speaks as. Only the pair can compute it, and the
/// names of two days are unrelated to anyone else.
public struct RelayMeeting: Equatable, Sendable {
    public static let secondsPerDay: Int64 = 86_400

    /// The UTC day number of `unixTime` (days since 1970-01-01).
    public let day: Int64
    /// 64 lowercase hex digits: the mailbox id given to `open`.
    public let mailbox: String
    /// 16 lowercase hex digits each.
    public let listenerSide: String
    public let senderSide: String

    public static func day(at unixTime: Int64) -> Int64 {
        unixTime >= 0 ? unixTime / secondsPerDay : (unixTime + 1) / secondsPerDay - 1
    }

    /// The days whose mailboxes a listener holds at `unixTime`: those of `unixTime` ± the clock
    /// skew a handshake allows (one day, both around midnight UTC).
    public static func days(around unixTime: Int64) -> [Int64] {
        let early = day(at: unixTime - MessageFrame.maximumSkew), late = day(at: unixTime + MessageFrame.maximumSkew)
        return early == late ? [early] : [early, late]
    }
}

extension PairKeys {
    /// BLAKE2b-512(key = pairKey, "meishi-relay-mailbox-v1" ‖ Sender ‖ Recipient ‖ day (u64 BE)):
    /// the mailbox id is its first 32 bytes, the listener's side the next 8, the sender's the 8 after.
    public func relayMeeting(day: Int64) -> RelayMeeting {
        let d = (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: day) >> (56 - 8 * UInt64($0))) }
        let out = BLAKE2b.hash(Array("meishi-relay-mailbox-v1".utf8) + sender.rawRepresentation + recipient.rawRepresentation + d,
                               key: key, length: 64).exposedBytes()
        return RelayMeeting(day: day, mailbox: Hex.encode(out[0..<32]), listenerSide: Hex.encode(out[32..<40]),
                            senderSide: Hex.encode(out[40..<48]))
    }
}

/// One side of a note's meeting on the pair's mailbox: bind, open the mailbox by its id (no
/// nameplate), then the sender's call (a transit nonce and its clock) and the listener's answer
/// (its nonce and the call's), which name the transit token (docs/PROTOCOL.md §9.8).
public struct NoteMailbox: Sendable {
    public static let appID = "meishi.example/note-v1"
    public static let callPhase = "meishi-note-call-v1"
    public static let answerPhase = "meishi-note-answer-v1"
    public static let nonceBytes = 32
    /// Calls remembered by a listener (answered once each); the oldest are forgotten beyond it.
    static let rememberedCalls = 256

    public enum Role: Sendable, Equatable {
        /// `send`: the call's nonce and the sender's Unix time.
        case sender(nonce: [UInt8], unixTime: Int64)
        /// `listen`: the clock calls are judged by (a call more than `MessageFrame.maximumSkew`
        /// seconds from it is stale: left over from an earlier send the same day).
        case listener
    }

    /// What a server's message means for the run.
    public enum Event: Equatable, Sendable {
        /// A message for the server (a WebSocket text frame).
        case send([UInt8])
        /// Both nonces are in: connect to the transit relay with this token.
        case met(token: String)
    }

    public let meeting: RelayMeeting
    public let role: Role
    private var answered: [[UInt8]] = []
    /// A listener's: the server has sent what the mailbox held before (its `pong` to the ping
    /// after `open` came). Calls held before are left: their senders are gone or call again.
    public private(set) var live = false

    public init(_ meeting: RelayMeeting, role: Role) {
        if case .sender(let nonce, _) = role { precondition(nonce.count == Self.nonceBytes) }
        self.meeting = meeting
        self.role = role
    }

    public var side: String {
        if case .sender = role { meeting.senderSide } else { meeting.listenerSide }
    }

    /// The first messages, sent as soon as the WebSocket is open: bind, open, then the sender's
    /// call, or the listener's ping (everything the server sends before its pong was in the
    /// mailbox before: a listener answers only calls that come after).
    public mutating func opening() -> [[UInt8]] {
        live = false
        return [MailboxSession.message(["type": .string("bind"), "appid": .string(Self.appID), "side": .string(side)]),
                MailboxSession.message(["type": .string("open"), "mailbox": .string(meeting.mailbox)])]
            + (call().map { [$0] } ?? [MailboxSession.message(["type": .string("ping"), "ping": .number(1)])])
    }

    /// The sender's call, sent at the opening and again every few seconds until the listener
    /// answers (a listener that was not there yet, or was opening its mailbox again, hears the next one).
    public func call() -> [UInt8]? {
        guard case .sender(let nonce, let time) = role else { return nil }
        return MailboxSession.message(["type": .string("add"), "phase": .string(Self.callPhase), "body": .string(Hex.encode(nonce + bigEndian(time)))])
    }

    /// The sender's last message, once the transit relay paired it (`happy`) or did not (`errory`).
    public func closing(mood: String) -> [UInt8] {
        MailboxSession.message(["type": .string("close"), "mailbox": .string(meeting.mailbox), "mood": .string(mood)])
    }

    /// Takes one message from the server; `unixTime` is the listener's clock now.
    public mutating func receive(_ text: [UInt8], unixTime: Int64) throws(RelayFailure) -> [Event] {
        let (type, json) = try MailboxSession.serverMessage(text, crowded: .refusedByMailbox(.said("crowded")))
        switch type {
        case "pong":
            live = true
            return []
        case "message":
            guard case .string(let from)? = json["side"], case .string(let phase)? = json["phase"],
                  case .string(let body)? = json["body"], let bytes = Hex.decode(body), body == Hex.encode(bytes) else { return [] }
            switch role {
            case .sender(let nonce, _):
                // The listener's answer to this call (answers to earlier calls the same day stay in the mailbox).
                guard from == meeting.listenerSide, phase == Self.answerPhase, bytes.count == 2 * Self.nonceBytes,
                      Array(bytes[Self.nonceBytes...]) == nonce else { return [] }
                return [.met(token: Self.token(call: nonce, answer: Array(bytes[..<Self.nonceBytes])))]
            case .listener:
                guard live, from == meeting.senderSide, phase == Self.callPhase, bytes.count == Self.nonceBytes + 8 else { return [] }
                let call = Array(bytes[..<Self.nonceBytes])
                let sent = Int64(bitPattern: bytes[Self.nonceBytes...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
                guard sent >= unixTime - MessageFrame.maximumSkew, sent <= unixTime + MessageFrame.maximumSkew,
                      !answered.contains(call) else { return [] }
                answered.append(call)
                if answered.count > Self.rememberedCalls { answered.removeFirst(answered.count - Self.rememberedCalls) }
                let mine = SecureRandom.bytes(Self.nonceBytes)
                return [.send(MailboxSession.message(["type": .string("add"), "phase": .string(Self.answerPhase),
                                                      "body": .string(Hex.encode(mine + call))])),
                        .met(token: Self.token(call: call, answer: mine))]
            }
        default:
            // ack, closed: nothing a note needs.
            return []
        }
    }

    /// The transit token: SHA-256("meishi-note-token-v1" ‖ 0x00 ‖ call nonce ‖ answer nonce), hex.
    public static func token(call: [UInt8], answer: [UInt8]) -> String {
        Hex.encode(SHA256.hash(Array("meishi-note-token-v1".utf8) + [0] + call + answer))
    }
}
