import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiProximity

/// `send --relay` / `listen --relay` without sockets (docs/PROTOCOL.md §9.8): the vectors of
/// fixtures/messages/relay-vectors.json (made by tools/relay-note-vectors.py without meishi), and
/// what each side of the pair's mailbox answers to what the server sends.
@Suite struct RelayNoteTests {
    static let path = "messages/relay-vectors.json"
    static let mei = MessageVectorTests.key(0x11), ken = MessageVectorTests.key(0x22)

    static func vectors() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Fixtures.url(path))) as? [String: Any])
    }

    static func message(_ side: String, _ phase: String, _ body: String) -> [UInt8] {
        JCS.canonicalize(.object(["type": .string("message"), "side": .string(side), "phase": .string(phase), "body": .string(body),
                                  "server_rx": .number(1), "id": .null]))
    }

    static let pong = Array(#"{"type":"pong","pong":1}"#.utf8)

    @Test func meishiComputesTheScriptsMailboxesSidesAndToken() throws {
        let v = try Self.vectors()
        let unixTime = try #require(v["unix_time"] as? Int64)
        let sending = try PairKeys(mine: Self.mei, theirs: Self.ken.publicKey, sending: true)
        let receiving = try PairKeys(mine: Self.ken, theirs: Self.mei.publicKey, sending: false)
        for (name, keys, day) in [("today", sending, RelayMeeting.day(at: unixTime)), ("tomorrow", receiving, RelayMeeting.day(at: unixTime) + 1)] {
            let m = try #require(v[name] as? [String: Any])
            let meeting = keys.relayMeeting(day: day)
            #expect(meeting.day == m["day"] as? Int64)
            #expect(meeting.mailbox == m["mailbox"] as? String)
            #expect(meeting.listenerSide == m["listener_side"] as? String && meeting.senderSide == m["sender_side"] as? String)
        }
        // The other direction (Ken sending to Mei) meets elsewhere.
        let back = try PairKeys(mine: Self.ken, theirs: Self.mei.publicKey, sending: true).relayMeeting(day: RelayMeeting.day(at: unixTime))
        #expect(back.mailbox == (v["reverse_direction"] as? [String: Any])?["mailbox"] as? String)

        // The sender's call, and its token once the listener's answer (the vector's) comes.
        let meeting = sending.relayMeeting(day: RelayMeeting.day(at: unixTime))
        let callBody = try #require(v["call_body"] as? String), answerBody = try #require(v["answer_body"] as? String)
        let token = try #require(v["token"] as? String), callHex = try #require(v["call_nonce"] as? String)
        let callNonce = try #require(Hex.decode(callHex))
        var sender = NoteMailbox(meeting, role: .sender(nonce: callNonce, unixTime: unixTime))
        let opening = sender.opening().map { try! StrictJSONParser.parse($0) }
        #expect(opening.map { $0["type"] } == [.string("bind"), .string("open"), .string("add")])
        #expect(opening[0]["appid"] == .string(NoteMailbox.appID) && opening[0]["side"] == .string(meeting.senderSide))
        #expect(opening[1]["mailbox"] == .string(meeting.mailbox))
        #expect(opening[2]["body"] == .string(callBody))
        let answer = Self.message(meeting.listenerSide, NoteMailbox.answerPhase, answerBody)
        #expect(try sender.receive(answer, unixTime: unixTime) == [.met(token: token)])
    }

    @Test(.enabled(if: ExchangeVectorTests.python(importing: nil) != nil, "skipped: needs python3 with `cryptography` (make test installs it in .venv)"))
    func theScriptPrintsTheFile() throws {
        try ExchangeVectorTests.expectScript("tools/relay-note-vectors.py", prints: Self.path)
    }

    /// The listener answers a call once, only after the server's pong (what the mailbox held
    /// before is left over from earlier sends), only from the sender's side and within the clock
    /// skew a handshake allows; the sender takes only the answer to its own call.
    @Test func eachSideTakesOnlyWhatIsMeantForIt() throws {
        let now: Int64 = 1_800_000_000
        let meeting = try PairKeys(mine: Self.ken, theirs: Self.mei.publicKey, sending: false).relayMeeting(day: RelayMeeting.day(at: now))
        let nonce = [UInt8](repeating: 0x55, count: 32)
        let call = Self.message(meeting.senderSide, NoteMailbox.callPhase, Hex.encode(nonce + bigEndian(now - 10)))
        var listener = NoteMailbox(meeting, role: .listener)
        let opening = listener.opening().map { try! StrictJSONParser.parse($0) }
        #expect(opening.map { $0["type"] } == [.string("bind"), .string("open"), .string("ping")])
        #expect(opening[0]["side"] == .string(meeting.listenerSide))
        #expect(try listener.receive(call, unixTime: now).isEmpty, "a call held before the pong is left")
        #expect(try listener.receive(Self.pong, unixTime: now).isEmpty)
        let events = try listener.receive(call, unixTime: now)
        guard case .send(let text)? = events.first, case .met(let token)? = events.last, events.count == 2 else {
            Issue.record("no answer: \(events)")
            return
        }
        let added = try StrictJSONParser.parse(text)
        #expect(added["type"] == .string("add") && added["phase"] == .string(NoteMailbox.answerPhase))
        guard case .string(let body)? = added["body"], let bytes = Hex.decode(body), bytes.count == 64 else {
            Issue.record("a malformed answer: \(added)")
            return
        }
        #expect(Array(bytes[32...]) == nonce)
        #expect(token == NoteMailbox.token(call: nonce, answer: Array(bytes[..<32])))
        #expect(try listener.receive(call, unixTime: now).isEmpty, "answered once")
        // Stale, from another side, another phase, a short body: nothing.
        for other in [Self.message(meeting.senderSide, NoteMailbox.callPhase, Hex.encode([UInt8](repeating: 1, count: 32) + bigEndian(now - 121))),
                      Self.message("0123456789abcdef", NoteMailbox.callPhase, Hex.encode([UInt8](repeating: 2, count: 32) + bigEndian(now))),
                      Self.message(meeting.senderSide, "pake", Hex.encode([UInt8](repeating: 3, count: 32) + bigEndian(now))),
                      Self.message(meeting.senderSide, NoteMailbox.callPhase, Hex.encode([UInt8](repeating: 4, count: 32)))] {
            #expect(try listener.receive(other, unixTime: now).isEmpty)
        }
        // The sender: an answer to another call, or from another side, is not its own.
        var sender = NoteMailbox(meeting, role: .sender(nonce: nonce, unixTime: now))
        let elsewhere = [UInt8](repeating: 9, count: 32)
        #expect(try sender.receive(Self.message(meeting.listenerSide, NoteMailbox.answerPhase, Hex.encode(elsewhere + elsewhere)), unixTime: now).isEmpty)
        #expect(try sender.receive(Self.message(meeting.senderSide, NoteMailbox.answerPhase, Hex.encode(elsewhere + nonce)), unixTime: now).isEmpty)
        #expect(try sender.receive(Self.message(meeting.listenerSide, NoteMailbox.answerPhase, Hex.encode(elsewhere + nonce)), unixTime: now)
                == [.met(token: NoteMailbox.token(call: nonce, answer: elsewhere))])
        // The server's refusal ends the run with its words.
        #expect(throws: RelayFailure.refusedByMailbox(.said("crowded"))) {
            try sender.receive(Array(#"{"type":"error","error":"crowded"}"#.utf8), unixTime: now)
        }
    }

    @Test func aListenerHoldsBothDaysAroundMidnightUTC() {
        let midnight: Int64 = 20_834 * 86_400
        #expect(RelayMeeting.days(around: midnight - 3600) == [20_833])
        #expect(RelayMeeting.days(around: midnight - 60) == [20_833, 20_834])
        #expect(RelayMeeting.days(around: midnight + 60) == [20_833, 20_834])
        #expect(RelayMeeting.days(around: midnight + 121) == [20_834])
    }
}
