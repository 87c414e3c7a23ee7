import Testing
import MeishiCard
@testable import MeishiProximity

/// The mailbox and transit codecs of `--relay` without sockets (docs/PROTOCOL.md §5.8).
@Suite struct RelayProtocolTests {
    static func json(_ bytes: [UInt8]) throws -> JSONValue { try StrictJSONParser.parse(bytes) }
    static func text(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test func transitTokenVector() {
        let token = MailboxSession.token(low: ("0101010101010101", [UInt8](repeating: 0x11, count: 32)),
                                         high: ("0202020202020202", [UInt8](repeating: 0x22, count: 32)))
        #expect(token == "8208458b4eca08b4b338339c93be9f5e53674b205636967dd7b1ff4277555b7f")
    }

    /// Two sides fed the server's messages as the real server sends them agree on the token and
    /// take opposite roles; each sends exactly bind, claim, open, add, release.
    @Test func twoSidesMeetAndAgree() throws {
        var a = MailboxSession(nameplate: 7, side: [1, 1, 1, 1, 1, 1, 1, 1], nonce: [UInt8](repeating: 0x11, count: 32))
        var b = MailboxSession(nameplate: 7, side: [2, 2, 2, 2, 2, 2, 2, 2], nonce: [UInt8](repeating: 0x22, count: 32))
        let opening = try a.opening().map(Self.json)
        #expect(opening[0] == .object(["type": .string("bind"), "appid": .string("meishi.example/exchange-v1"), "side": .string("0101010101010101")]))
        #expect(opening[1] == .object(["type": .string("claim"), "nameplate": .string("7")]))
        #expect(try a.receive(Self.text(#"{"type":"welcome","welcome":{},"server_tx":1.5}"#)).isEmpty)
        #expect(try a.receive(Self.text(#"{"type":"ack","id":null,"server_tx":1.5}"#)).isEmpty)
        let claimed = try a.receive(Self.text(#"{"type":"claimed","mailbox":"mb1","server_tx":1.5}"#))
        guard case .send(let open) = claimed[0], case .send(let add) = claimed[1] else { Issue.record("\(claimed)"); return }
        #expect(try Self.json(open) == .object(["type": .string("open"), "mailbox": .string("mb1")]))
        #expect(try Self.json(add) == .object(["type": .string("add"), "phase": .string("meishi-transit-v1"),
                                                "body": .string(String(repeating: "11", count: 32))]))
        _ = try b.receive(Self.text(#"{"type":"claimed","mailbox":"mb1"}"#))
        // Its own message echoed, and another phase, change nothing.
        let echo = #"{"type":"message","side":"0101010101010101","phase":"meishi-transit-v1","body":"\#(String(repeating: "11", count: 32))","id":"x"}"#
        #expect(try a.receive(Self.text(echo)).isEmpty)
        #expect(try a.receive(Self.text(#"{"type":"message","side":"0202020202020202","phase":"pake","body":"00"}"#)).isEmpty)
        let fromB = #"{"type":"message","side":"0202020202020202","phase":"meishi-transit-v1","body":"\#(String(repeating: "22", count: 32))"}"#
        let metA = try a.receive(Self.text(fromB))
        let metB = try b.receive(Self.text(echo))
        guard case .send(let release) = metA[0], case .met(let tokenA, let dialerA) = metA[1], case .met(let tokenB, let dialerB) = metB[1] else {
            Issue.record("\(metA) \(metB)"); return
        }
        #expect(try Self.json(release) == .object(["type": .string("release"), "nameplate": .string("7")]))
        #expect(tokenA == tokenB && tokenA == "8208458b4eca08b4b338339c93be9f5e53674b205636967dd7b1ff4277555b7f")
        #expect(dialerA && !dialerB)
        // A second message from the other side is ignored.
        #expect(try a.receive(Self.text(fromB)).isEmpty)
        #expect(try Self.json(a.closing(mood: "happy")!) == .object(["type": .string("close"), "mailbox": .string("mb1"), "mood": .string("happy")]))
    }

    /// With hints (transit v2), the hints message goes between `open` and the nonce, so the other
    /// side has them when the nonce arrives; a side that offers none speaks transit v1.
    @Test func hintsGoBeforeTheNonceAndMakeTheRace() throws {
        let hint = try #require(DirectHint(host: "10.0.0.1", port: 4567))
        var a = MailboxSession(nameplate: 7, side: [1, 1, 1, 1, 1, 1, 1, 1], nonce: [UInt8](repeating: 0x11, count: 32), hints: [hint])
        let claimed = try a.receive(Self.text(#"{"type":"claimed","mailbox":"mb1"}"#))
        #expect(claimed.count == 3)
        guard case .send(let offer) = claimed[1], case .send(let add) = claimed[2] else { Issue.record("\(claimed)"); return }
        let body = #"{"direct-tcp-v1":[{"hostname":"10.0.0.1","port":4567}]}"#
        #expect(try Self.json(offer) == .object(["type": .string("add"), "phase": .string("meishi-hints-v1"),
                                                  "body": .string(Hex.encode(Self.text(body)))]))
        #expect(MailboxSession.hintsBody([hint]) == Self.text(body))
        #expect(try Self.json(add)["phase"] == .string("meishi-transit-v1"))
        // The other side's hints, then its nonce: the race is on.
        let theirs = #"{"direct-tcp-v1":[{"hostname":"10.0.0.2","port":80},{"hostname":"192.168.1.9","port":65535}]}"#
        _ = try a.receive(Self.text(#"{"type":"message","side":"0202020202020202","phase":"meishi-hints-v1","body":"\#(Hex.encode(Self.text(theirs)))"}"#))
        #expect(a.peerHints == [DirectHint(host: "10.0.0.2", port: 80)!, DirectHint(host: "192.168.1.9", port: 65535)!])
        let met = try a.receive(Self.text(#"{"type":"message","side":"0202020202020202","phase":"meishi-transit-v1","body":"\#(String(repeating: "22", count: 32))"}"#))
        guard case .met(let token, true) = met.last else { Issue.record("\(met)"); return }
        #expect(token == "8208458b4eca08b4b338339c93be9f5e53674b205636967dd7b1ff4277555b7f")
        #expect(a.racesDirect)
        #expect(TransitHandshake.roleLine(token: token, dialer: true) == Self.text("meishi-transit-v2 dialer \(token)\n"))
        // A peer that sent no hints (an older meishi, or --no-direct): the relay alone, as transit v1.
        var b = MailboxSession(nameplate: 7, side: [1, 1, 1, 1, 1, 1, 1, 1], nonce: [UInt8](repeating: 0x11, count: 32), hints: [])
        _ = try b.receive(Self.text(#"{"type":"claimed","mailbox":"mb1"}"#))
        _ = try b.receive(Self.text(#"{"type":"message","side":"0202020202020202","phase":"meishi-transit-v1","body":"\#(String(repeating: "22", count: 32))"}"#))
        #expect(!b.racesDirect)
    }

    /// Hints that are not IPv4 addresses with a port (names would make us resolve what a stranger chose) are refused.
    @Test func badHintsAreRefused() throws {
        for bad in [#"{"direct-tcp-v1":[{"hostname":"example.org","port":80}]}"#, #"{"direct-tcp-v1":[{"hostname":"10.0.0.1","port":0}]}"#,
                    #"{"direct-tcp-v1":[{"hostname":"10.0.0.256","port":80}]}"#, #"{"direct-tcp-v1":[{"hostname":"::1","port":80}]}"#,
                    #"{"direct-tcp-v1":[{"hostname":"10.0.0.1","port":80.5}]}"#, #"{"direct":[]}"#, "[]"] {
            var s = MailboxSession(nameplate: 7, hints: [])
            _ = try s.receive(Self.text(#"{"type":"claimed","mailbox":"mb1"}"#))
            #expect(throws: RelayFailure.peerNotMeishi, "\(bad)") {
                try s.receive(Self.text(#"{"type":"message","side":"0202020202020202","phase":"meishi-hints-v1","body":"\#(Hex.encode(Self.text(bad)))"}"#))
            }
        }
        // More than eight are cut to eight.
        let many = "{\"direct-tcp-v1\":[" + (1...12).map { #"{"hostname":"10.0.0.\#($0)","port":80}"# }.joined(separator: ",") + "]}"
        #expect(MailboxSession.hints(in: Self.text(many))?.count == 8)
    }

    /// A peer's hints never make this side dial its own services: loopback, 0.0.0.0 and
    /// multicast addresses are left out (the rest kept), not refused.
    @Test func hintsOfThisMachineAreLeftOut() {
        let body = #"{"direct-tcp-v1":[{"hostname":"127.0.0.1","port":8080},{"hostname":"0.0.0.0","port":80},"# +
            #"{"hostname":"239.255.77.23","port":80},{"hostname":"10.0.0.7","port":4242}]}"#
        #expect(MailboxSession.hints(in: Self.text(body)) == [DirectHint(host: "10.0.0.7", port: 4242)!])
    }

    /// Leaving a mailbox from a fresh connection: bind as the same side, release, close.
    @Test func leavingBindsAsTheSameSideAndReleases() throws {
        var s = MailboxSession(nameplate: 7, side: Array(repeating: 1, count: 8), nonce: Array(repeating: 0x11, count: 32))
        #expect(s.leaving(mood: "lonely").map { String(decoding: $0, as: UTF8.self) } == [
            #"{"appid":"meishi.example/exchange-v1","side":"0101010101010101","type":"bind"}"#, #"{"nameplate":"7","type":"release"}"#])
        _ = try s.receive(Self.text(#"{"type":"claimed","mailbox":"mb1"}"#))
        #expect(s.leaving(mood: "lonely").last.map { String(decoding: $0, as: UTF8.self) } == #"{"mailbox":"mb1","mood":"lonely","type":"close"}"#)
    }

    @Test func theServersRefusalsAreNamed() {
        var s = MailboxSession(nameplate: 9)
        #expect(throws: RelayFailure.nameplateTaken(9)) { try s.receive(Self.text(#"{"type":"error","error":"crowded","orig":{}}"#)) }
        #expect(throws: RelayFailure.refusedByMailbox(.said("down for maintenance"))) {
            try s.receive(Self.text(#"{"type":"welcome","welcome":{"error":"down for maintenance"}}"#))
        }
        #expect(throws: RelayFailure.refusedByMailbox(.said("must bind first"))) { try s.receive(Self.text(#"{"type":"error","error":"must bind first"}"#)) }
        #expect(throws: RelayFailure.refusedByMailbox(.notAMailboxMessage)) { try s.receive(Self.text("<html>")) }
        // A server's words reach the terminal sanitised.
        #expect(throws: RelayFailure.refusedByMailbox(.said("bad\\u{1B}[31m"))) { try s.receive(Self.text(#"{"type":"error","error":"bad\u001b[31m"}"#)) }
        _ = try? s.receive(Self.text(#"{"type":"claimed","mailbox":"m"}"#))
        #expect(throws: RelayFailure.peerNotMeishi) {
            try s.receive(Self.text(#"{"type":"message","side":"0202020202020202","phase":"meishi-transit-v1","body":"zz"}"#))
        }
    }

    /// The relay's answer fed one byte at a time: nothing until the newline, then the bytes after it.
    @Test func transitAnswerOneByteAtATime() throws {
        #expect(TransitHandshake.request(token: String(repeating: "ab", count: 32), side: "0101010101010101")
                == Self.text("please relay \(String(repeating: "ab", count: 32)) for side 0101010101010101\n"))
        var h = TransitHandshake()
        #expect(try h.feed(Self.text("o")) == nil)
        #expect(try h.feed(Self.text("k")) == nil)
        #expect(try h.feed(Self.text("\n")) == [])
        var together = TransitHandshake()
        #expect(try together.feed(Self.text("ok\n") + [0, 0, 0, 18, 4]) == [0, 0, 0, 18, 4])
        for refusal in ["impatient\n", "bad handshake\n"] {
            var r = TransitHandshake()
            #expect(throws: RelayFailure.transitRefused(.answered(String(refusal.dropLast())))) {
                for b in refusal.utf8 { _ = try r.feed([b]) }
            }
        }
        var endless = TransitHandshake()
        #expect(throws: RelayFailure.self) { for _ in 0...TransitHandshake.maximumLine { _ = try endless.feed([UInt8(ascii: "o")]) } }
    }

    @Test func addressesParse() {
        #expect(MailboxURL("ws://relay.magic-wormhole.io:4000/v1").map { [$0.host, "\($0.port)", $0.path] } == ["relay.magic-wormhole.io", "4000", "/v1"])
        #expect(MailboxURL("ws://[::1]:4000/v1")?.host == "::1")
        #expect(MailboxURL("ws://example.org")?.port == 80)
        for bad in ["http://example.org/v1", "ws://", "ws://:4000/v1", "ws://a:0/v1", "ws://a:70000/", "ws://a b/", "wss://a/v1"] {
            #expect(MailboxURL(bad) == nil, "\(bad)")
        }
        #expect(TransitAddress("tcp:transit.magic-wormhole.io:4001").map { [$0.host, "\($0.port)"] } == ["transit.magic-wormhole.io", "4001"])
        #expect(TransitAddress("tcp:[::1]:4001")?.description == "tcp:[::1]:4001")
        for bad in ["transit.example:4001", "tcp:transit.example", "tcp::4001", "tcp:a:b"] { #expect(TransitAddress(bad) == nil, "\(bad)") }
    }
}

/// `fixtures/relay-exchange-vectors.json`, made by `tools/relay-exchange-vectors.py` without
/// meishi: every text frame each side sends on the mailbox, the token, and the transit lines.
@Suite struct RelayExchangeVectorTests {
    static let path = "relay-exchange-vectors.json"

    struct Missing: Error { let key: String }
    static func string(_ d: [String: Any], _ key: String) throws -> String {
        guard let s = d[key] as? String else { throw Missing(key: key) }
        return s
    }
    static func hex(_ d: [String: Any], _ key: String) throws -> [UInt8] {
        guard let b = Hex.decode(try string(d, key)) else { throw Missing(key: key) }
        return b
    }

    @Test func bothSidesSendExactlyTheScriptsFramesAndLines() throws {
        let v = try #require(try Fixtures.json(Self.path) as? [String: Any])
        let mailbox = try #require(v["mailbox"] as? String), nameplate = try #require(v["nameplate"] as? Int)
        let low = try #require(v["low"] as? [String: Any]), high = try #require(v["high"] as? [String: Any])
        let token = try #require(v["token"] as? String)
        func session(_ s: [String: Any]) throws -> MailboxSession {
            let body = try #require(s["hints_body"] as? String)
            let hints = try #require(MailboxSession.hints(in: Array(body.utf8)))
            #expect(MailboxSession.hintsBody(hints) == Array(body.utf8))
            return MailboxSession(nameplate: nameplate, side: try Self.hex(s, "side"), nonce: try Self.hex(s, "nonce"), hints: hints)
        }
        // What each side sends, fed the server's answers and the other side's messages as the server relays them.
        func run(_ mine: [String: Any], _ theirs: [String: Any]) throws -> (sent: [String], met: MailboxSession.Event?) {
            var s = try session(mine)
            var sent = s.opening().map { String(decoding: $0, as: UTF8.self) }
            var met: MailboxSession.Event?
            let theirSends = try #require(theirs["sends"] as? [String])
            let side = try #require(theirs["side"] as? String)
            let relayed = theirSends.filter { $0.contains("\"type\":\"add\"") }.map { add -> String in
                let json = try! StrictJSONParser.parse(Array(add.utf8))
                guard case .string(let phase)? = json["phase"], case .string(let body)? = json["body"] else { return "" }
                return #"{"type":"message","side":"\#(side)","phase":"\#(phase)","body":"\#(body)","id":"m"}"#
            }
            for incoming in [#"{"type":"welcome","welcome":{}}"#, #"{"type":"claimed","mailbox":"\#(mailbox)"}"#] + relayed {
                for event in try s.receive(Array(incoming.utf8)) {
                    switch event {
                    case .send(let bytes): sent.append(String(decoding: bytes, as: UTF8.self))
                    case .met: met = event
                    }
                }
            }
            sent.append(String(decoding: try #require(s.closing(mood: "happy")), as: UTF8.self))
            return (sent, met)
        }
        let (lowSent, lowMet) = try run(low, high), (highSent, highMet) = try run(high, low)
        #expect(lowSent == low["sends"] as? [String])
        #expect(highSent == high["sends"] as? [String])
        #expect(lowMet == .met(token: token, dialer: true) && highMet == .met(token: token, dialer: false))
        #expect(v["dialer_side"] as? String == low["side"] as? String)
        let request = Array(try Self.string(v, "relay_request_low").utf8), lowSide = try Self.string(low, "side")
        #expect(TransitHandshake.request(token: token, side: lowSide) == request)
        let dialerLine = Array(try Self.string(v, "role_line_dialer").utf8), listenerLine = Array(try Self.string(v, "role_line_listener").utf8)
        #expect(TransitHandshake.roleLine(token: token, dialer: true) == dialerLine)
        #expect(TransitHandshake.roleLine(token: token, dialer: false) == listenerLine)
    }

    @Test(.enabled(if: ExchangeVectorTests.python(importing: nil) != nil, "skipped: needs python3 with `cryptography` (make test installs it in .venv)"))
    func theScriptPrintsTheFile() throws {
        try ExchangeVectorTests.expectScript("tools/relay-exchange-vectors.py", prints: Self.path)
    }
}
