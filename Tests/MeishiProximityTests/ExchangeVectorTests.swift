import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiProximity

/// fixtures/exchange-vectors.json (docs/PROTOCOL.md §1.2, §5.2, §5.3, §5.6), computed by
/// tools/exchange-vectors.py without meishi: both sides of a session with every random input
/// fixed must send exactly those frames, derive those codes and keys, and accept each other's.
/// These vectors hold the wire format still while the exchange's code moves.
@Suite struct ExchangeVectorTests {
    static let path = "exchange-vectors.json"
    typealias Object = [String: Any]

    static func object(_ o: Any?) -> Object { o as! Object }
    static func bytes(_ o: Object, _ key: String) -> [UInt8] { Hex.decode(o[key] as! String)! }
    static func secret(_ o: Object, _ key: String) -> SecureBytes { SecureBytes(copying: bytes(o, key)) }

    static func vectors() throws -> Object { object(try Fixtures.json(path)) }

    /// A side's signing key and the card it sends, built by meishi from the vector's inputs.
    static func card(_ c: Object) throws -> (key: Ed25519.SigningKey, card: SignedCard) {
        let key = try Ed25519.SigningKey(seed: secret(c, "ed25519_seed"))
        let box = try X25519.SecretKey(rawRepresentation: secret(c, "x25519_secret"))
        var disclosed: [FieldName: [String]] = [:]
        for (name, value) in object(c["fields"]) {
            disclosed[try FieldName(name)] = (value as? [String]) ?? [value as! String]
        }
        let card = try ProximityPayload.sign(disclosed: disclosed, level: DisclosureLevel(rawValue: c["level"] as! String)!,
                                             signingKey: key, boxKey: box.publicKey, timestamp: (c["timestamp"] as! NSNumber).int64Value,
                                             shareId: c["share_id"] as! String)
        return (key, card)
    }

    static func verifier(_ v: Object) -> CardVerifier {
        let now = (v["now"] as! NSNumber).int64Value
        return CardVerifier(maximumSkew: 600, maximumAge: 600, clock: { now })
    }

    /// The sealed frames of the vector from one side, in order.
    static func frames(_ run: Object, from side: String) -> [[UInt8]] {
        (run["sealed_frames"] as! [Object]).filter { $0["from"] as! String == side }.map { bytes($0, "frame") }
    }

    @Test func cardsAndFingerprint() throws {
        let v = try Self.vectors()
        for side in ["dialer", "listener"] {
            let c = Self.object(Self.object(v["cards"])[side])
            let (key, card) = try Self.card(c)
            #expect(String(decoding: card.bytes, as: UTF8.self) == c["payload"] as! String)
            #expect(DIDKey.did(for: key.publicKey) == c["did"] as! String)
            #expect(key.publicKey.fingerprint == c["fingerprint"] as! String)
            #expect(try Self.verifier(v).verify(card.bytes).payload.senderDID == c["did"] as! String)
        }
        let f = Self.object(v["fingerprint"])
        let key = try Ed25519.PublicKey(rawRepresentation: Self.bytes(f, "ed25519_public"))
        #expect(key.fingerprint == f["fingerprint"] as! String)
        #expect(DIDKey.did(for: key) == f["did"] as! String)
    }

    /// §5.2/§5.3: HELLO, RESPONSE, REVEAL, the code, both CONFIRMs, both CARDs and both ACKs.
    @Test func handshakeWithoutCode() throws {
        let v = try Self.vectors()
        let run = Self.object(v["handshake"])
        let (dKey, dCard) = try Self.card(Self.object(Self.object(v["cards"])["dialer"]))
        let (lKey, lCard) = try Self.card(Self.object(Self.object(v["cards"])["listener"]))
        let d = ExchangeSession(role: .dialer, verifier: Self.verifier(v),
                                ephemeral: try X25519.SecretKey(rawRepresentation: Self.secret(run, "dialer_ephemeral_secret")),
                                nonce: Self.bytes(run, "dialer_nonce"))
        let l = ExchangeSession(role: .listener, verifier: Self.verifier(v),
                                ephemeral: try X25519.SecretKey(rawRepresentation: Self.secret(run, "listener_ephemeral_secret")),
                                nonce: Self.bytes(run, "listener_nonce"))
        let hello = try #require(d.start())
        #expect(hello == Self.bytes(run, "hello"))
        #expect(Array(hello.dropFirst(2)) == Self.bytes(run, "commitment"))
        let response = try l.receive(hello)
        #expect(response.send == [Self.bytes(run, "response")])
        let reveal = try d.receive(response.send[0])
        #expect(reveal.send == [Self.bytes(run, "reveal")])
        guard case .codeReady(let dialerCode) = reveal.event else { Issue.record("no code at the dialer"); return }
        let heard = try l.receive(reveal.send[0])
        guard case .codeReady(let listenerCode) = heard.event else { Issue.record("no code at the listener"); return }
        #expect(dialerCode == run["code"] as! String && listenerCode == dialerCode)
        #expect(d.transcriptHash == Self.bytes(run, "transcript_hash") && l.transcriptHash == d.transcriptHash)
        try Self.checkKeys(run, secret: Self.bytes(run, "shared_secret"))

        let dSent = [d.confirm(true)], lSent = [l.confirm(true)]
        _ = try l.receive(dSent[0])
        _ = try d.receive(lSent[0])
        try Self.exchangeCards(run, d: d, dCard: (dKey, dCard), l: l, lCard: (lKey, lCard), earlier: (dSent, lSent))
    }

    /// §5.6: the four PAKE frames, then both CARDs and both ACKs; once plain, once after discovery,
    /// once between two members of a table (§5.7: CI ends with "table").
    @Test(arguments: ["code", "code_after_discovery", "code_at_table"]) func handshakeWithCode(_ name: String) throws {
        let v = try Self.vectors()
        let run = Self.object(v[name])
        let (dKey, dCard) = try Self.card(Self.object(Self.object(v["cards"])["dialer"]))
        let (lKey, lCard) = try Self.card(Self.object(Self.object(v["cards"])["listener"]))
        var binding = ExchangeSession.CodeBinding(code: try ExchangeCode(parsing: run["code"] as! String))
        if run["dialer_session_id"] != nil {
            binding.dialerID = Self.bytes(run, "dialer_session_id")
            binding.listenerID = Self.bytes(run, "listener_session_id")
        }
        binding.table = run["table"] as? Bool ?? false
        #expect(binding.channelID == Self.bytes(run, "CI"))
        #expect(Array(binding.code.password.utf8) == Self.bytes(run, "PRS"))
        func session(_ role: ExchangeSession.Role, nonce: String, scalar: String) throws -> ExchangeSession {
            ExchangeSession(role: role, verifier: Self.verifier(v), binding: binding, ephemeral: X25519.SecretKey(),
                            nonce: SecureRandom.bytes(32), pakeNonce: Self.bytes(run, nonce),
                            pakeScalar: try Ristretto255.Scalar(rawRepresentation: Self.secret(run, scalar)))
        }
        let d = try session(.dialer, nonce: "nonce_D", scalar: "ya")
        let l = try session(.listener, nonce: "nonce_L", scalar: "yb")
        let hello = try #require(d.start())
        #expect(hello == Self.bytes(run, "pake_hello"))
        let reply = try l.receive(hello)
        #expect(reply.send == [Self.bytes(run, "pake_reply")])
        let finish = try d.receive(reply.send[0])
        #expect(finish.send == [Self.bytes(run, "pake_finish")])
        let confirm = try l.receive(finish.send[0])
        #expect(confirm.send == [Self.bytes(run, "pake_confirm")])
        guard case .codeConfirmed = confirm.event else { Issue.record("the listener did not confirm"); return }
        let done = try d.receive(confirm.send[0])
        guard case .codeConfirmed = done.event, done.send.isEmpty else { Issue.record("the dialer did not confirm"); return }
        #expect(d.transcriptHash == Self.bytes(run, "transcript_hash") && l.transcriptHash == d.transcriptHash)
        try Self.checkKeys(run, secret: Self.bytes(run, "ISK"))
        try Self.exchangeCards(run, d: d, dCard: (dKey, dCard), l: l, lCard: (lKey, lCard), earlier: ([], []))
    }

    /// §5.5 and §5.7: announcements encode to the listed bytes and parse back to the same fields;
    /// a table flag without a code number, an unknown flag and N = 0 are refused.
    @Test func announcements() throws {
        let v = Self.object(try Self.vectors()["announcements"])
        let id = Self.bytes(v, "session_id")
        for case let a as Object in v["valid"] as! [Any] {
            let name = a["name"] as! String
            let made = Announcement(sessionID: id, port: UInt16(a["port"] as! Int), nameplate: (a["N"] as? Int).map { UInt16($0) },
                                    alias: a["alias"] as? String, wantsAnswer: a["answer"] as? Bool ?? false, table: a["table"] as? Bool ?? false)
            #expect(made.encoded == Self.bytes(a, "bytes"), "\(name)")
            let parsed = try #require(Announcement(Self.bytes(a, "bytes")), "\(name)")
            #expect(parsed == made && parsed.table == made.table && parsed.wantsAnswer == made.wantsAnswer, "\(name)")
        }
        for case let a as Object in v["refused"] as! [Any] {
            #expect(Announcement(Self.bytes(a, "bytes")) == nil, "\(a["name"] as! String)")
        }
    }

    /// The master key and the subkeys as §5.2 derives them (32 bytes each, crypto_kdf context `meishiEX`).
    static func checkKeys(_ run: Object, secret: [UInt8]) throws {
        let master = BLAKE2b.hash(ExchangeSession.keyDomain + bytes(run, "transcript_hash"), key: SecureBytes(copying: secret), length: 32)
        #expect(master.exposedBytes() == bytes(run, "master_key"))
        #expect(BLAKE2b.deriveKey(from: master, id: 1, context: "meishiEX").exposedBytes() == bytes(run, "key_dialer_to_listener"))
        #expect(BLAKE2b.deriveKey(from: master, id: 2, context: "meishiEX").exposedBytes() == bytes(run, "key_listener_to_dialer"))
        if run["code_material"] != nil {
            let material = BLAKE2b.deriveKey(from: master, id: 3, context: "meishiEX").exposedBytes()
            #expect(material == bytes(run, "code_material"))
            #expect(ExchangeSession.shortCode(material) == run["code"] as! String)
        }
    }

    /// CARD (binding ‖ payload) both ways, each accepted by the other side, then both ACKs.
    static func exchangeCards(_ run: Object, d: ExchangeSession, dCard: (Ed25519.SigningKey, SignedCard), l: ExchangeSession,
                              lCard: (Ed25519.SigningKey, SignedCard), earlier: ([[UInt8]], [[UInt8]])) throws {
        var dSent = earlier.0, lSent = earlier.1
        dSent.append(d.card(dCard.1, signedBy: dCard.0))
        lSent.append(l.card(lCard.1, signedBy: lCard.0))
        guard case .cardReceived(let atListener) = try l.receive(dSent.last!).event,
              case .cardReceived(let atDialer) = try d.receive(lSent.last!).event else {
            Issue.record("a CARD was not accepted")
            return
        }
        #expect(atListener.bytes == dCard.1.bytes && atDialer.bytes == lCard.1.bytes)
        dSent.append(d.acknowledge())
        lSent.append(l.acknowledge())
        _ = try l.receive(dSent.last!)
        _ = try d.receive(lSent.last!)
        #expect(d.isComplete && l.isComplete)
        #expect(dSent == frames(run, from: "dialer"))
        #expect(lSent == frames(run, from: "listener"))
        let bindings = (run["sealed_frames"] as! [Object]).filter { $0["binding_input"] != nil }
        #expect(bindings.count == 2)
        for b in bindings {
            let transcript = try #require(d.transcriptHash)
            let card = b["from"] as! String == "dialer" ? dCard.1 : lCard.1
            #expect(ExchangeSession.bindingInput(transcriptHash: transcript, cardBytes: card.bytes) == bytes(b, "binding_input"))
        }
    }

    /// The file is what the independent script prints (it needs Python 3 with `cryptography` and libsodium).
    static var python: String? { python(importing: nil) }

    /// A Python 3 with `cryptography`, libsodium and the module `extra`, if one is here.
    static func python(importing extra: String?) -> String? {
        let venv = Fixtures.root.appendingPathComponent(".venv/bin/python").path
        for candidate in [venv, "/usr/bin/python3"] where FileManager.default.isExecutableFile(atPath: candidate) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: candidate)
            p.arguments = ["-c", "import cryptography.hazmat.primitives.ciphers.aead, ctypes.util; assert ctypes.util.find_library('sodium')"
                           + (extra.map { "; import \($0)" } ?? "")]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            guard (try? p.run()) != nil else { continue }
            p.waitUntilExit()
            if p.terminationStatus == 0 { return candidate }
        }
        return nil
    }

    @Test(.enabled(if: python != nil, "skipped: needs python3 with `cryptography` (make test installs it in .venv) and libsodium"))
    func theScriptPrintsTheFile() throws {
        try Self.expectScript("tools/exchange-vectors.py", prints: Self.path)
    }

    /// Runs `script --check FIXTURE` with `python` and expects exit 0 (the file is what it prints).
    static func expectScript(_ script: String, prints fixture: String, importing extra: String? = nil) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python(importing: extra)!)
        p.arguments = [Fixtures.root.appendingPathComponent(script).path, "--check", Fixtures.url(fixture).path]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "\(message)")
    }
}
