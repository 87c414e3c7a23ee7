// meishi-bench: the in-process half of `make bench` (scripts/bench.sh runs it and the CLI).
//   meishi-bench crypto [SECONDS]          sign/verify rates for payloads and for raw Ed25519
//   meishi-bench cpace [SECONDS]           CPace (ristretto255, SHA-512): each side of a run, and
//                                          the ristretto255 operations it is made of
//   meishi-bench store DIR COUNT SQLFILE   bulk-insert COUNT contacts into DIR/meishi.sqlite and
//                                          write the same rows as SQL for the sqlite3 shell
//   meishi-bench messages HOME REF PORT COUNT PARALLEL
//                                          sends COUNT notes from HOME to contact REF listening
//                                          on 127.0.0.1:PORT (`meishi listen`), PARALLEL at a time
//   meishi-bench psi [SECONDS]             the costs behind common friends: hash-to-group, scalar
//                                          multiplication, and a DLEQ proof per item
//   meishi-bench friends DIR FROM COUNT    signed contacts FROM..<FROM+COUNT (the same DIDs in every
//                                          home) into DIR/meishi.sqlite, for the PSI exchanges
//   meishi-bench scan FILE...              `meishi scan` in process: per image, one JSON line with
//                                          the time to decode and scan it and the codes with their pass
import Foundation
import MeishiCard
import MeishiCrypto
import MeishiKit
import MeishiStore

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// Runs `body` repeatedly for about `budget` seconds; returns operations per second.
func rate(_ budget: Double, _ body: () -> Void) -> Double {
    var n = 0
    let t = seconds {
        let start = DispatchTime.now().uptimeNanoseconds
        while Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 < budget {
            for _ in 0..<100 { body() }
            n += 100
        }
    }
    return Double(n) / t
}

func crypto(budget: Double) throws {
    let identity = Identity(signingKey: Ed25519.SigningKey(), boxKey: X25519.SecretKey())
    var card = Card()
    try card.set(.name, "Mei Tanaka")
    try card.set(FieldName("title"), "Staff Engineer")
    try card.set(FieldName("org"), "Example Robotics")
    try card.add(.email, "mei.tanaka@example.org")
    try card.add(.phone, "+81 90 1234 5678")
    try card.add(.url, "https://example.org/mei")
    let now = Int64(Date().timeIntervalSince1970)
    let signed = try CardService.sign(card, level: .professional, only: nil, identity: identity, now: now)
    let bytes = signed.bytes
    let message = signed.payload.signingInput
    let signature = identity.signingKey.signature(for: message)
    let rawSign = rate(budget) { _ = identity.signingKey.signature(for: message) }
    let rawVerify = rate(budget) { _ = identity.signingKey.publicKey.isValidSignature(signature, for: message) }
    let paySign = rate(budget) {
        _ = try! CardService.sign(card, level: .professional, only: nil, identity: identity, now: now)
    }
    let verifier = CardVerifier(clock: { now })
    let payVerify = rate(budget) { _ = try! verifier.verify(bytes) }
    print(String(format: "payload size                 %d bytes (signed message %d bytes)", bytes.count, message.count))
    print(String(format: "sign payload (card -> JSON)  %9.0f /s   raw Ed25519 sign   %9.0f /s   ratio %.2f", paySign, rawSign, paySign / rawSign))
    print(String(format: "verify payload (JSON -> ok)  %9.0f /s   raw Ed25519 verify %9.0f /s   ratio %.2f", payVerify, rawVerify, payVerify / rawVerify))
}

func cpace(budget: Double) throws {
    let password = SecureBytes(copying: Array("tulip-anchor".utf8))
    let ci = CPace.lengthValueConcatenation([Array("meishi dialer".utf8), Array("meishi listener".utf8)])
    let sid = SecureRandom.bytes(32)
    let scalar = Ristretto255.Scalar()
    let point = Ristretto255.Point(generatorTimes: Ristretto255.Scalar())
    let digest = SHA512.hash(Array("bench".utf8))
    let scalarMult = rate(budget) { _ = try! point.multiplied(by: scalar) }
    let fromHash = rate(budget) { _ = try! Ristretto255.Point(uniformBytes: digest) }
    let generator = rate(budget) { _ = CPace.generator(password: password, channelID: ci, sessionID: sid) }
    // Every secret lives in its own sodium_malloc'd pages (guard pages, mlock); a run makes six.
    let guarded = rate(budget) { _ = SecureBytes(randomCount: 64) }
    // One side, every step: its message (generator, y·g), then K, ISK and both tags once the peer's
    // message and tag are in. The peer's message is fixed; its tag fails to check here, which costs
    // the same HMAC and comparison as a tag that passes.
    let peer = CPace.Responder(password: password, channelID: ci, sessionID: sid)
    let strangerTag = try CPace.ConfirmationTag(rawRepresentation: [UInt8](repeating: 0, count: 64))
    let initiatorSide = rate(budget) {
        let a = CPace.Initiator(password: password, channelID: ci, sessionID: sid)
        let session = try! a.finish(responderMessage: peer.message)
        _ = session.confirmation
        _ = try? session.verifyPeerConfirmation(strangerTag)
    }
    let other = CPace.Initiator(password: password, channelID: ci, sessionID: sid)
    let responderSide = rate(budget) {
        let b = CPace.Responder(password: password, channelID: ci, sessionID: sid)
        _ = try? b.finish(initiatorMessage: other.message).confirmation(afterVerifying: strangerTag)
    }
    // Both sides in one process, confirmations passing: what a pairing costs in CPU.
    let both = rate(budget) {
        let a = CPace.Initiator(password: password, channelID: ci, sessionID: sid)
        let b = CPace.Responder(password: password, channelID: ci, sessionID: sid)
        let sa = try! a.finish(responderMessage: b.message)
        let tb = try! b.finish(initiatorMessage: a.message).confirmation(afterVerifying: sa.confirmation)
        try! sa.verifyPeerConfirmation(tb)
    }
    let us = { (r: Double) in 1e6 / r }
    print(String(format: "ristretto255 scalarmult      %8.1f us    from_hash (hash to group) %8.1f us", us(scalarMult), us(fromHash)))
    print(String(format: "CPace generator              %8.1f us    (SHA-512 of the generator string + from_hash)", us(generator)))
    print(String(format: "guarded secret (SecureBytes) %8.1f us    (sodium_malloc, 64 random bytes, sodium_free; six a side)", us(guarded)))
    print(String(format: "CPace initiator, one run     %8.1f us    (generator, Ya, K, ISK, tag, check)", us(initiatorSide)))
    print(String(format: "CPace responder, one run     %8.1f us    (generator, Yb, K, ISK, check, tag)", us(responderSide)))
    print(String(format: "CPace both sides, confirmed  %8.1f us", us(both)))
}

func sqlQuote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "''") + "'" }

func store(dir: String, count: Int, sqlPath: String) throws {
    let names = ["Mei", "Ken", "Yui", "Sora", "Hana", "Riku", "Aoi", "Ren", "Emi", "Taro"]
    let family = ["Tanaka", "Sato", "Suzuki", "Takahashi", "Watanabe", "Ito", "Yamamoto", "Nakamura", "Kobayashi", "Kato"]
    var contacts: [Contact] = []
    contacts.reserveCapacity(count)
    for i in 0..<count {
        let raw = Array(SHA256.hash(Array("bench-\(i)".utf8)))
        let key = try Ed25519.PublicKey(rawRepresentation: raw)
        let name = "\(names[i % 10]) \(family[(i / 10) % 10]) \(i)"
        contacts.append(Contact(did: DIDKey.did(for: key), fields: [
            .name: [name], .org: ["Org \(i % 997)"], .email: ["user\(i)@example.org"], .phone: ["+81 90 \(1000_0000 + i)"],
        ], level: .professional, trust: .signed, source: .file, seen: 1_795_000_000, cardTimestamp: 1_795_000_000,
           signPubKey: key, pubKey: try X25519.PublicKey(rawRepresentation: raw)))
    }
    // The same rows as SQL text, for the sqlite3 shell, in one transaction.
    var sql = "BEGIN;\n"
    sql.reserveCapacity(count * 400)
    for (n, c) in contacts.enumerated() {
        let id = n + 1
        let fields = FieldsColumn.encode(c.fields)
        sql += "INSERT INTO contact(id,did,name,org,fields,level,trust,source,firstSeen,lastSeen,cardTimestamp,signPubKey,pubKey) VALUES("
        sql += "\(id),\(sqlQuote(c.did)),\(sqlQuote(c.name!)),\(sqlQuote(c.org!)),\(sqlQuote(fields)),'professional','signed','file',"
        sql += "\(c.firstSeen),\(c.lastSeen),\(c.cardTimestamp),X'\(Hex.encode(c.signPubKey!.rawRepresentation))',X'\(Hex.encode(c.pubKey!.rawRepresentation))');\n"
        sql += "INSERT INTO contact_value VALUES(\(id),'email',\(sqlQuote(c.fields[.email]![0])),\(sqlQuote(c.fields[.email]![0])));\n"
        let phone = c.fields[.phone]![0]
        sql += "INSERT INTO contact_value VALUES(\(id),'phone',\(sqlQuote(phone)),\(sqlQuote(CardText.e164(phone) ?? phone)));\n"
    }
    sql += "COMMIT;\n"
    try sql.write(toFile: sqlPath, atomically: true, encoding: .utf8)
    let db = try ContactStore(path: dir + "/" + ContactStore.fileName)
    let t = try seconds { try db.insertAll(contacts) }
    print(String(format: "meishi bulk insert          %d contacts in %.3f s (%.0f /s)", count, t, Double(count) / t))
}

/// No passphrase: the bench's identities are made without one.
struct NoPassphrase: PassphraseSource {
    func passphrase(forKeyAt path: String) -> SecureBytes? { nil }
    func newPassphrase() throws(MeishiError) -> SecureBytes? { nil }
}

/// Messages per second through one `meishi listen`: handshake, envelope and acknowledgement
/// each, the listener storing every one.
func messages(home: String, ref: String, port: Int, count: Int, parallel: Int) async throws {
    let h = Home(path: home)
    let identity = try IdentityStore(home: h).load(passphrases: NoPassphrase())
    let service = MessageService(home: h, clock: { Int64(Date().timeIntervalSince1970) })
    let recipient = try service.recipient(ref, me: nil)
    let start = DispatchTime.now().uptimeNanoseconds
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<parallel {
            group.addTask {
                for i in stride(from: worker, to: count, by: parallel) {
                    _ = try await service.send(text: "bench note \(i)", to: recipient, identity: identity, lifetime: 3600, once: false,
                                               peer: ("127.0.0.1", port), timeoutSeconds: 10, steps: { _ in })
                }
            }
        }
        try await group.waitForAll()
    }
    let t = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    print(String(format: "%d messages in %.2f s: %.0f messages/s (%d senders at once)", count, t, Double(count) / t, parallel))
}

/// Microseconds per operation of the primitives the PSI is made of, one thread.
func psi(budget: Double) {
    var i = 0
    let hash = rate(budget) { i += 1; _ = PrivateSetIntersection.groupElement(Array("did:key:z6Mk\(i)".utf8)) }
    let k = Ristretto255.Scalar(), p = PrivateSetIntersection.groupElement([1])
    let mult = rate(budget) { _ = try! p.multiplied(by: k) }
    let n = 2_000
    let points = (0..<n).map { PrivateSetIntersection.groupElement(Array("x\($0)".utf8)) }
    let outs = points.map { try! $0.multiplied(by: k) }
    let pk = Ristretto255.Point(generatorTimes: k)
    let prove = seconds { _ = DLEQ.proof(scalar: k, publicKey: pk, inputs: points, outputs: outs, threads: 1) }
    let proof = DLEQ.proof(scalar: k, publicKey: pk, inputs: points, outputs: outs)
    let verify = seconds { _ = DLEQ.isValid(proof, publicKey: pk, inputs: points, outputs: outs, threads: 1) }
    print(String(format: "hash-to-group (SHA-512 + from_hash)  %6.1f us", 1e6 / hash))
    print(String(format: "scalar multiplication                %6.1f us", 1e6 / mult))
    print(String(format: "DLEQ prove, per item (1 thread)      %6.1f us", prove * 1e6 / Double(n)))
    print(String(format: "DLEQ verify, per item (1 thread)     %6.1f us", verify * 1e6 / Double(n)))
    print(String(format: "floor-us %.3f %.3f", 1e6 / hash, 1e6 / mult))
}

/// Signed contacts whose DIDs are those of indices from..<from+count, the same in every home.
func friends(dir: String, from: Int, count: Int) throws {
    let contacts = try (from..<from + count).map { i in
        let key = try Ed25519.PublicKey(rawRepresentation: SHA256.hash(Array("friend-\(i)".utf8)))
        return Contact(did: DIDKey.did(for: key), fields: [.name: ["Friend \(i)"]], level: .professional, trust: .signed, source: .file,
                       seen: 1_795_000_000, cardTimestamp: 1_795_000_000, signPubKey: key)
    }
    try ContactStore(path: dir + "/" + ContactStore.fileName).insertAll(contacts)
}

/// The scanner without a process around it: what `meishi scan` spends on an image once started.
func scan(_ paths: [String]) throws {
    let verifier = CardVerifier(clock: { Int64(Date().timeIntervalSince1970) })
    for path in paths {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        var codes: [ScannedCode] = []
        let t = seconds { codes = (try? QRService.scan(bytes, verifier: verifier)) ?? [] }
        let line: [String: Any] = ["path": path, "ms": (t * 1e5).rounded() / 100,
                                   "codes": codes.map { ["text": $0.text, "pass": $0.pass] }]
        print(String(decoding: try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]), as: UTF8.self))
    }
}

let args = CommandLine.arguments
switch args.dropFirst().first {
case "crypto": try crypto(budget: args.count > 2 ? Double(args[2])! : 1.0)
case "cpace": try cpace(budget: args.count > 2 ? Double(args[2])! : 1.0)
case "store": try store(dir: args[2], count: Int(args[3])!, sqlPath: args[4])
case "messages": try await messages(home: args[2], ref: args[3], port: Int(args[4])!, count: Int(args[5])!, parallel: Int(args[6])!)
case "psi": psi(budget: args.count > 2 ? Double(args[2])! : 1.0)
case "friends": try friends(dir: args[2], from: Int(args[3])!, count: Int(args[4])!)
case "scan": try scan(Array(args.dropFirst(2)))
default:
    FileHandle.standardError.write(Data("usage: meishi-bench crypto [SECONDS] | cpace [SECONDS] | store DIR COUNT SQLFILE | psi [SECONDS] | messages HOME REF PORT COUNT PARALLEL | friends DIR FROM COUNT | scan FILE...\n".utf8))
    exit(64)
}
