import Foundation
import Testing
import MeishiCard
@testable import MeishiCrypto

private func bytes(_ hex: String) -> [UInt8] { Hex.decode(hex)! }
private func secret(_ hex: String) -> SecureBytes { SecureBytes(copying: bytes(hex)) }
private func secret(utf8 text: String) -> SecureBytes { SecureBytes(copying: Array(text.utf8)) }

/// The group order ℓ = 2^252 + 27742317777372353535851937790883648493, little-endian.
private let groupOrder = bytes("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")

/// Known-answer tests from draft-irtf-cfrg-cpace-21 (fixtures/external/cpace-ristretto255-sha512.json),
/// checked one step at a time so that a failure names the step.
@Suite struct CPaceVectorTests {
    let root: [String: Any]
    let v: [String: Any]

    init() throws {
        root = try Fixtures.json("external/cpace-ristretto255-sha512.json") as! [String: Any]
        v = root["cpace"] as! [String: Any]
    }

    func h(_ key: String) -> [UInt8] { bytes(v[key] as! String) }
    var password: SecureBytes { SecureBytes(copying: h("PRS")) }

    @Test func prependLenAndLvCat() {
        let cases = root["prepend_len"] as! [[String: String]]
        #expect(cases.count == 4)
        for c in cases { #expect(Hex.encode(CPace.prependingLength(bytes(c["input"]!))) == c["output"]!) }
        for c in root["lv_cat"] as! [[String: Any]] {
            let parts = (c["inputs"] as! [String]).map(bytes)
            #expect(Hex.encode(CPace.lengthValueConcatenation(parts)) == c["output"] as! String)
        }
        // LEB128 beyond the draft's cases: 2^14 - 1 fits two bytes, 2^14 needs three.
        #expect(CPace.lengthPrefix(16383) == [0xff, 0x7f])
        #expect(CPace.lengthPrefix(16384) == [0x80, 0x80, 0x01])
        #expect(CPace.lengthPrefix(300) == [0xac, 0x02])
    }

    @Test func orderedConcatenationAndTranscripts() {
        for c in root["lexiographically_larger"] as! [[String: Any]] {
            #expect(CPace.isLexicographicallyLarger(bytes(c["a"] as! String), than: bytes(c["b"] as! String)) == c["larger"] as! Bool, "\(c)")
        }
        for c in root["o_cat"] as! [[String: String]] {
            #expect(Hex.encode(CPace.orderedConcatenation(bytes(c["a"]!), bytes(c["b"]!))) == c["output"]!)
        }
        for c in root["transcript_ir"] as! [[String: String]] {
            #expect(Hex.encode(CPace.initiatorResponderTranscript(bytes(c["Ya"]!), bytes(c["ADa"]!), bytes(c["Yb"]!), bytes(c["ADb"]!))) == c["output"]!)
        }
        for c in root["transcript_oc"] as! [[String: String]] {
            let out = CPace.orderedTranscript(bytes(c["Ya"]!), bytes(c["ADa"]!), bytes(c["Yb"]!), bytes(c["ADb"]!))
            #expect(Hex.encode(out) == c["output"]!)
            // Ordered: the same whichever side computes it.
            #expect(CPace.orderedTranscript(bytes(c["Yb"]!), bytes(c["ADb"]!), bytes(c["Ya"]!), bytes(c["ADa"]!)) == out)
        }
    }

    @Test func generatorStringAndGenerator() throws {
        #expect(Hex.encode(CPace.domainSeparator) == v["DSI"] as! String)
        #expect(SHA512.blockByteCount == v["s_in_bytes"] as! Int)
        let genStr = CPace.generatorString(password: password, channelID: h("CI"), sessionID: h("sid"))
        #expect(Hex.encode(genStr.exposedBytes()) == v["generator_string"] as! String)
        // The padding field: its length byte sits right after DSI and PRS.
        let zpadAt = CPace.prependingLength(CPace.domainSeparator).count + 1 + h("PRS").count
        #expect(Int(genStr.exposedBytes()[zpadAt]) == v["zpad_length"] as! Int)
        #expect(Hex.encode(SHA512.hash(genStr).exposedBytes()) == v["generator_hash"] as! String)
        let g = CPace.generator(password: password, channelID: h("CI"), sessionID: h("sid"))
        #expect(Hex.encode(g.rawRepresentation.exposedBytes()) == v["g"] as! String)
        // The same element through the public-element API.
        #expect(try Ristretto255.Point(uniformBytes: h("generator_hash")).rawRepresentation == h("g"))
    }

    /// A PRS longer than the first block gets no padding (len_zpad = max(0, …)).
    @Test func generatorStringWithoutPadding() {
        let long = SecureBytes(copying: [UInt8](repeating: 0x61, count: 200))
        let s = CPace.generatorString(password: long, channelID: [], sessionID: []).exposedBytes()
        #expect(s == CPace.lengthValueConcatenation([CPace.domainSeparator, [UInt8](repeating: 0x61, count: 200), [], [], []]))
        // 108 bytes of PRS: prepend_len(DSI) (18) + prepend_len(PRS) (109) + the empty padding field (1) = 128.
        let fill = SecureBytes(copying: [UInt8](repeating: 0x62, count: 108))
        let t = CPace.generatorString(password: fill, channelID: [], sessionID: []).exposedBytes()
        #expect(t.count == 128 + 2, "DSI, PRS and the empty padding field fill one block; CI and sid add a byte each")
    }

    @Test func messagesFromFixedScalars() throws {
        let ya = try Ristretto255.Scalar(rawRepresentation: secret(v["ya"] as! String))
        let yb = try Ristretto255.Scalar(rawRepresentation: secret(v["yb"] as! String))
        let a = CPace.Initiator(password: password, channelID: h("CI"), sessionID: h("sid"), associatedData: h("ADa"), scalar: ya)
        let b = CPace.Responder(password: password, channelID: h("CI"), sessionID: h("sid"), associatedData: h("ADb"), scalar: yb)
        #expect(a.message.share.rawRepresentation == h("Ya"))
        #expect(b.message.share.rawRepresentation == h("Yb"))
        #expect(a.message.associatedData == h("ADa"))
        #expect(a.message.encoded == CPace.lengthValueConcatenation([h("Ya"), h("ADa")]))
    }

    @Test func sharedSecretK() throws {
        let ya = try Ristretto255.Scalar(rawRepresentation: secret(v["ya"] as! String))
        let yb = try Ristretto255.Scalar(rawRepresentation: secret(v["yb"] as! String))
        let kA = try ya.sharedSecret(with: Ristretto255.Point(rawRepresentation: h("Yb")))
        let kB = try yb.sharedSecret(with: Ristretto255.Point(rawRepresentation: h("Ya")))
        #expect(Hex.encode(kA.rawRepresentation.exposedBytes()) == v["K"] as! String)
        #expect(kA.rawRepresentation == kB.rawRepresentation)
    }

    @Test func iskInitiatorResponder() throws {
        let transcript = CPace.initiatorResponderTranscript(h("Ya"), h("ADa"), h("Yb"), h("ADb"))
        #expect(Hex.encode(transcript) == v["transcript_ir"] as! String)
        #expect(Hex.encode(CPace.iskDomainSeparator) == v["DSI_ISK"] as! String)
        let k = try Ristretto255.SecretPoint(rawRepresentation: secret(v["K"] as! String))
        let input = CPace.intermediateSessionKeyInput(sessionID: h("sid"), sharedSecret: k, transcript: transcript)
        #expect(Hex.encode(input.exposedBytes()) == v["isk_input_ir"] as! String)

        let (a, b) = try parties()
        let sa = try a.finish(responderMessage: b.message)
        let sb = try b.finish(initiatorMessage: a.message)
        #expect(Hex.encode(sa.intermediateSessionKey.exposedBytes()) == v["ISK_IR"] as! String)
        #expect(sb.intermediateSessionKey == sa.intermediateSessionKey)
        #expect(Hex.encode(sa.sessionIDOutput) == v["sid_output_ir"] as! String)
        #expect(sb.sessionIDOutput == sa.sessionIDOutput)
    }

    @Test func iskSymmetric() throws {
        let transcript = CPace.orderedTranscript(h("Ya"), h("ADa"), h("Yb"), h("ADb"))
        #expect(Hex.encode(transcript) == v["transcript_oc"] as! String)
        let k = try Ristretto255.SecretPoint(rawRepresentation: secret(v["K"] as! String))
        let input = CPace.intermediateSessionKeyInput(sessionID: h("sid"), sharedSecret: k, transcript: transcript)
        #expect(Hex.encode(input.exposedBytes()) == v["isk_input_oc"] as! String)

        let ya = try Ristretto255.Scalar(rawRepresentation: secret(v["ya"] as! String))
        let yb = try Ristretto255.Scalar(rawRepresentation: secret(v["yb"] as! String))
        let a = CPace.SymmetricParty(password: password, channelID: h("CI"), sessionID: h("sid"), associatedData: h("ADa"), scalar: ya)
        let b = CPace.SymmetricParty(password: password, channelID: h("CI"), sessionID: h("sid"), associatedData: h("ADb"), scalar: yb)
        let sa = try a.finish(peerMessage: b.message), sb = try b.finish(peerMessage: a.message)
        #expect(Hex.encode(sa.intermediateSessionKey.exposedBytes()) == v["ISK_SY"] as! String)
        #expect(sb.intermediateSessionKey == sa.intermediateSessionKey)
        #expect(Hex.encode(sa.sessionIDOutput) == v["sid_output_oc"] as! String)
        try sa.verifyPeerConfirmation(sb.confirmation)
        try sb.verifyPeerConfirmation(sa.confirmation)
    }

    @Test func scalarMultValidAndInvalid() throws {
        let c = root["scalar_mult"] as! [String: String]
        let s = try Ristretto255.Scalar(rawRepresentation: secret(c["s"]!))
        let x = try Ristretto255.Point(rawRepresentation: bytes(c["X"]!))
        #expect(Hex.encode(try x.multiplied(by: s).rawRepresentation) == c["scalar_mult"]!)
        #expect(Hex.encode(try s.sharedSecret(with: x).rawRepresentation.exposedBytes()) == c["scalar_mult_vfy"]!)
        // scalar_mult_vfy returns G.I for these, and the protocol must abort: here they never become a Point.
        let invalid = root["scalar_mult_vfy_invalid"] as! [String]
        #expect(invalid.count == 2)
        for y in invalid {
            #expect(throws: CryptoError.invalidPoint) { try Ristretto255.Point(rawRepresentation: bytes(y)) }
            #expect(throws: CryptoError.invalidPoint) { try CPace.Message(encoded: [32] + bytes(y) + [0]) }
        }
        // And the libsodium call under scalar_mult_vfy fails for them too (no silent G.I).
        for y in invalid {
            let ok = s.rawRepresentation.withUnsafeBytes { n in
                bytes(y).withUnsafeBytes { p in
                    var out = [UInt8](repeating: 0, count: 32)
                    return out.withUnsafeMutableBytes { Ristretto255.multiply(n, p, into: $0) }
                }
            }
            #expect(!ok)
        }
    }

    /// Tags over the draft's run, against values computed independently (Python hashlib/hmac).
    @Test func confirmationTags() throws {
        let tags = try Fixtures.json("cpace-confirmation.json") as! [String: Any]
        let ir = tags["initiator_responder"] as! [String: String]
        let (a, b) = try parties()
        let sa = try a.finish(responderMessage: b.message)
        let sb = try b.finish(initiatorMessage: a.message)
        #expect(Hex.encode(sa.confirmation.rawRepresentation) == ir["Ta"]!)
        let tb = try sb.confirmation(afterVerifying: sa.confirmation)
        #expect(Hex.encode(tb.rawRepresentation) == ir["Tb"]!)
        try sa.verifyPeerConfirmation(tb)
        let mac = CPace.tag(key: secret(ir["mac_key"]!), message: a.message.encoded)
        #expect(Hex.encode(mac.rawRepresentation) == ir["Ta"]!)

        let sy = tags["symmetric"] as! [String: String]
        let ya = try Ristretto255.Scalar(rawRepresentation: secret(v["ya"] as! String))
        let pa = CPace.SymmetricParty(password: password, channelID: h("CI"), sessionID: h("sid"), associatedData: h("ADa"), scalar: ya)
        let yb = try Ristretto255.Scalar(rawRepresentation: secret(v["yb"] as! String))
        let pb = CPace.SymmetricParty(password: password, channelID: h("CI"), sessionID: h("sid"), associatedData: h("ADb"), scalar: yb)
        #expect(Hex.encode(try pa.finish(peerMessage: pb.message).confirmation.rawRepresentation) == sy["Ta"]!)
        #expect(Hex.encode(try pb.finish(peerMessage: pa.message).confirmation.rawRepresentation) == sy["Tb"]!)
    }

    func parties() throws -> (CPace.Initiator, CPace.Responder) {
        let ya = try Ristretto255.Scalar(rawRepresentation: secret(v["ya"] as! String))
        let yb = try Ristretto255.Scalar(rawRepresentation: secret(v["yb"] as! String))
        return (CPace.Initiator(password: password, channelID: h("CI"), sessionID: h("sid"), associatedData: h("ADa"), scalar: ya),
                CPace.Responder(password: password, channelID: h("CI"), sessionID: h("sid"), associatedData: h("ADb"), scalar: yb))
    }
}

/// meishi's own vector (fixtures/cpace-meishi.json, computed outside meishi): the inputs as
/// docs/PROTOCOL.md section 5.6 proposes to build them from a code, then a whole confirmed run.
@Suite struct CPaceMeishiVectorTests {
    @Test func codeSevenTulipAnchor() throws {
        let v = try Fixtures.json("cpace-meishi.json") as! [String: String]
        func h(_ key: String) -> [UInt8] { bytes(v[key]!) }
        let code = v["code"]!
        let dash = code.firstIndex(of: "-")!
        let n = String(code[..<dash])
        let prs = Array(String(code[code.index(after: dash)...]).precomposedStringWithCanonicalMapping.lowercased().utf8)
        #expect(prs == h("PRS"))
        let ci = CPace.lengthValueConcatenation([Array("meishi-cpace-v1".utf8), Array("dialer".utf8), Array("listener".utf8), Array(n.utf8)])
        #expect(ci == h("CI"))
        let sid = CPace.lengthValueConcatenation([h("sid_D"), h("sid_L")])
        #expect(sid == h("sid"))
        let password = SecureBytes(copying: prs)
        #expect(CPace.generatorString(password: password, channelID: ci, sessionID: sid).exposedBytes() == h("generator_string"))
        #expect(CPace.generator(password: password, channelID: ci, sessionID: sid).rawRepresentation.exposedBytes() == h("g"))
        let a = CPace.Initiator(password: password, channelID: ci, sessionID: sid, associatedData: [],
                                scalar: try Ristretto255.Scalar(rawRepresentation: SecureBytes(copying: h("ya"))))
        let b = CPace.Responder(password: password, channelID: ci, sessionID: sid, associatedData: [],
                                scalar: try Ristretto255.Scalar(rawRepresentation: SecureBytes(copying: h("yb"))))
        #expect(a.message.encoded == h("message_D"))
        #expect(b.message.encoded == h("message_L"))
        let sa = try a.finish(responderMessage: CPace.Message(encoded: h("message_L")))
        let sb = try b.finish(initiatorMessage: CPace.Message(encoded: h("message_D")))
        #expect(sa.intermediateSessionKey.exposedBytes() == h("ISK"))
        #expect(sb.intermediateSessionKey.exposedBytes() == h("ISK"))
        #expect(sa.confirmation.rawRepresentation == h("Ta"))
        let tb = try sb.confirmation(afterVerifying: CPace.ConfirmationTag(rawRepresentation: h("Ta")))
        #expect(tb.rawRepresentation == h("Tb"))
        try sa.verifyPeerConfirmation(CPace.ConfirmationTag(rawRepresentation: h("Tb")))
        #expect(sa.sessionIDOutput == h("sid_output"))
    }
}

/// The ristretto255 wrapper: decoding refuses what it must, operations refuse the identity.
@Suite struct Ristretto255Tests {
    /// RFC 9496, Appendix A.2: non-canonical field encodings, negative field elements, non-square x^2,
    /// negative xy, and s = -1.
    static let badEncodings = [
        "00ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "f3ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "0100000000000000000000000000000000000000000000000000000000000080",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "01ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "ed57ffd8c914fb201471d1c3d245ce3c746fcbe63a3679d51b6a516ebebe0e20",
        "c34c4e1826e5d403b78e246e88aa051c36ccf0aafebffe137d148a2bf9104562",
        "c940e5a4404157cfb1628b108db051a8d439e1a421394ec4ebccb9ec92a8ac78",
        "47cfc5497c53dc8e61c91d17fd626ffb1c49e2bca94eed052281b510b1117a24",
        "f1c6165d33367351b0da8f6e4511010c68174a03b6581212c71c0e1d026c3c72",
        "87260f7a2f12495118360f02c26a470f450dadf34a413d21042b43b9d93e1309",
        "26948d35ca62e643e26a83177332e6b6afeb9d08e4268b650f1f5bbd8d81d371",
        "4eac077a713c57b4f4397629a4145982c661f48044dd3f96427d40b147d9742f",
        "de6a7b00deadc788eb6b6c8d20c0ae96c2f2019078fa604fee5b87d6e989ad7b",
        "bcab477be20861e01e4a0e295284146a510150d9817763caf1a6f4b422d67042",
        "2a292df7e32cababbd9de088d1d1abec9fc0440f637ed2fba145094dc14bea08",
        "f4a9e534fc0d216c44b218fa0c42d99635a0127ee2e53c712f70609649fdff22",
        "8268436f8c4126196cf64b3c7ddbda90746a378625f9813dd9b8457077256731",
        "2810e5cbc2cc4d4eece54f61c6f69758e289aa7ab440b3cbeaa21995c2f4232b",
        "3eb858e78f5a7254d8c9731174a94f76755fd3941c0ac93735c07ba14579630e",
        "a45fdc55c76448c049a1ab33f17023edfb2be3581e9c7aade8a6125215e04220",
        "d483fe813c6ba647ebbfd3ec41adca1c6130c2beeee9d9bf065c8d151c5f396e",
        "8a2e1d30050198c65a54483123960ccc38aef6848e1ec8f5f780e8523769ba32",
        "32888462f8b486c68ad7dd9610be5192bbeaf3b443951ac1a8118419d9fa097b",
        "227142501b9d4355ccba290404bde41575b037693cef1f438c47f8fbf35d1165",
        "5c37cc491da847cfeb9281d407efc41e15144c876e0170b499a96a22ed31e01e",
        "445425117cb8c90edcbc7c1cc0e74f747f2c1efa5630a967c64f287792a48a4b",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    ]

    @Test func rfc9496BadEncodingsRefused() {
        #expect(Self.badEncodings.count == 30)
        for e in Self.badEncodings {
            #expect(throws: CryptoError.invalidPoint, "\(e)") { try Ristretto255.Point(rawRepresentation: bytes(e)) }
            #expect(throws: CryptoError.invalidPoint, "\(e)") { try Ristretto255.SecretPoint(rawRepresentation: secret(e)) }
        }
    }

    @Test func identityAndAllZeroRefused() {
        let zero = [UInt8](repeating: 0, count: 32)
        // libsodium alone accepts the identity as a valid point; the wrapper must not.
        #expect(zero.withUnsafeBytes { Ristretto255.isValidNonIdentity($0) } == false)
        #expect(throws: CryptoError.invalidPoint) { try Ristretto255.Point(rawRepresentation: zero) }
        #expect(throws: CryptoError.invalidPoint) { try Ristretto255.SecretPoint(rawRepresentation: SecureBytes(copying: zero)) }
        #expect(throws: CryptoError.invalidPoint) { try CPace.Message(encoded: [32] + zero + [0]) }
        // x + (-x) and x - x are the identity: refused.
        let b = Ristretto255.Point.generator
        #expect(throws: CryptoError.invalidPoint) { try b.subtracting(b) }
    }

    /// Ed25519's small-order points (the 8-torsion) as encodings: ristretto255 has no small-order
    /// elements, so each is refused or decodes to an ordinary element whose multiples are never the identity.
    @Test func smallOrderEd25519EncodingsRefusedOrHarmless() throws {
        let torsion = [
            "0000000000000000000000000000000000000000000000000000000000000000",
            "0100000000000000000000000000000000000000000000000000000000000000",
            "0000000000000000000000000000000000000000000000000000000000000080",
            "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
            "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
            "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
            "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
        ]
        var refused = 0
        for e in torsion {
            do {
                let p = try Ristretto255.Point(rawRepresentation: bytes(e))
                let q = try p.multiplied(by: Ristretto255.Scalar())
                #expect(q != p)
                #expect(!Ristretto255.isIdentity(q.rawRepresentation))
            } catch {
                #expect(error == .invalidPoint, "\(e)")
                refused += 1
            }
        }
        #expect(refused >= 7, "the identity, negative zero, s = 1, s = -1, odd s and set high bits are refused")
    }

    /// RFC 9496 rejects any encoding of 2^255 or more; libsodium 1.0.18 ignores that top bit.
    @Test func topBitSetRefused() throws {
        let b = Ristretto255.Point.generator.rawRepresentation
        var high = b
        high[31] |= 0x80
        #expect(throws: CryptoError.invalidPoint) { try Ristretto255.Point(rawRepresentation: high) }
        #expect(throws: CryptoError.invalidPoint) { try Ristretto255.SecretPoint(rawRepresentation: SecureBytes(copying: high)) }
        #expect(throws: CryptoError.invalidPoint) { try CPace.Message(encoded: [32] + high + [0]) }
        // Why the wrapper checks the bit itself: libsodium 1.0.18 multiplies `high` as if it were B.
        // (If this fails after an upgrade, libsodium now refuses it too; the check above stays.)
        let one = SecureBytes(copying: [1] + [UInt8](repeating: 0, count: 31))
        var out = [UInt8](repeating: 0, count: 32)
        let accepted = one.withUnsafeBytes { n in high.withUnsafeBytes { p in out.withUnsafeMutableBytes { Ristretto255.multiply(n, p, into: $0) } } }
        #expect(accepted && out == b)
        // Random valid elements with the bit set: all refused.
        for _ in 0..<64 {
            var e = Ristretto255.Point(generatorTimes: Ristretto255.Scalar()).rawRepresentation
            e[31] |= 0x80
            #expect(throws: CryptoError.invalidPoint) { try Ristretto255.Point(rawRepresentation: e) }
        }
    }

    @Test func wrongLengthsRefused() throws {
        for n in [0, 1, 31, 33, 64] {
            #expect(throws: CryptoError.invalidLength(what: "ristretto255 element", expected: 32, actual: n)) {
                try Ristretto255.Point(rawRepresentation: [UInt8](repeating: 0x42, count: n))
            }
            #expect(throws: CryptoError.invalidLength(what: "ristretto255 scalar", expected: 32, actual: n)) {
                try Ristretto255.Scalar(rawRepresentation: SecureBytes(copying: [UInt8](repeating: 1, count: n)))
            }
            #expect(throws: CryptoError.invalidLength(what: "CPace confirmation tag", expected: 64, actual: n == 64 ? 65 : n)) {
                try CPace.ConfirmationTag(rawRepresentation: [UInt8](repeating: 1, count: n == 64 ? 65 : n))
            }
        }
        // A valid element with one byte more or less is refused, not truncated.
        let b = Ristretto255.Point.generator.rawRepresentation
        #expect(throws: CryptoError.self) { try Ristretto255.Point(rawRepresentation: b + [0]) }
        #expect(throws: CryptoError.self) { try Ristretto255.Point(rawRepresentation: b.dropLast()) }
    }

    /// RFC 9496, Appendix A.1 (B and 2B) and A.3 (the first element-derivation vector).
    @Test func knownElements() throws {
        let b = Ristretto255.Point.generator
        #expect(try Ristretto255.Point(rawRepresentation: b.rawRepresentation) == b)
        let two = try Ristretto255.Scalar(rawRepresentation: SecureBytes(copying: [2] + [UInt8](repeating: 0, count: 31)))
        let twoB = "6a493210f7499cd17fecb510ae0cea23a110e8d5b901f8acadd3095c73a3b919"
        #expect(Hex.encode(Ristretto255.Point(generatorTimes: two).rawRepresentation) == twoB)
        #expect(Hex.encode(try b.multiplied(by: two).rawRepresentation) == twoB)
        #expect(Hex.encode(try b.adding(b).rawRepresentation) == twoB)
        #expect(try b.adding(b).subtracting(b) == b)
        let hash = bytes("5d1be09e3d0c82fc538112490e35701979d99e06ca3e2b5b54bffe8b4dc772c1"
                         + "4d98b696a1bbfb5ca32c436cc61c16563790306c79eaca7705668b47dffe5bb6")
        #expect(Hex.encode(try Ristretto255.Point(uniformBytes: hash).rawRepresentation)
                == "3066f82a1a747d45120d1740f14358531a8f04bbffe6a819f86dfe50f44a0a46")
        let secretElement = try Ristretto255.SecretPoint(uniformBytes: SecureBytes(copying: hash))
        #expect(Hex.encode(secretElement.rawRepresentation.exposedBytes()) == "3066f82a1a747d45120d1740f14358531a8f04bbffe6a819f86dfe50f44a0a46")
    }

    @Test func scalarsRefuseZeroAndUnreduced() throws {
        func scalar(_ raw: [UInt8]) throws(CryptoError) -> Ristretto255.Scalar {
            try Ristretto255.Scalar(rawRepresentation: SecureBytes(copying: raw))
        }
        var orderMinusOne = groupOrder
        orderMinusOne[0] -= 1
        var orderPlusOne = groupOrder
        orderPlusOne[0] += 1
        _ = try scalar(orderMinusOne)
        _ = try scalar([1] + [UInt8](repeating: 0, count: 31))
        for bad in [[UInt8](repeating: 0, count: 32), groupOrder, orderPlusOne, [UInt8](repeating: 0xff, count: 32),
                    // A scalar with the top bit set: libsodium would silently clear it.
                    [5] + [UInt8](repeating: 0, count: 30) + [0x80]] {
            #expect(throws: CryptoError.invalidScalar, "\(Hex.encode(bad))") { try scalar(bad) }
        }
        // Reduction: ℓ + 1 reduces to 1; 64 zero bytes reduce to zero and are refused.
        let reduced = try Ristretto255.Scalar(reducing: SecureBytes(copying: orderPlusOne + [UInt8](repeating: 0, count: 32)))
        #expect(reduced.rawRepresentation.exposedBytes() == [1] + [UInt8](repeating: 0, count: 31))
        #expect(throws: CryptoError.invalidScalar) { try Ristretto255.Scalar(reducing: SecureBytes(copying: [UInt8](repeating: 0, count: 64))) }
        #expect(throws: CryptoError.invalidScalar) {
            try Ristretto255.Scalar(reducing: SecureBytes(copying: groupOrder + [UInt8](repeating: 0, count: 32)))
        }
    }

    @Test func scalarArithmeticAndBlinding() throws {
        // The PSI pattern: blind an element with r, unblind with r⁻¹.
        let p = try Ristretto255.Point(uniformBytes: SHA512.hash(Array("mei@example.org".utf8)))
        let r = Ristretto255.Scalar(), s = Ristretto255.Scalar()
        let blinded = try p.multiplied(by: r)
        #expect(blinded != p)
        #expect(try blinded.multiplied(by: r.inverted()) == p)
        #expect(try p.multiplied(by: r).multiplied(by: s) == p.multiplied(by: r.multiplied(by: s)))
        #expect(try p.multiplied(by: s).multiplied(by: r) == p.multiplied(by: r).multiplied(by: s))
        #expect(r.multiplied(by: r.inverted()).rawRepresentation.exposedBytes() == [1] + [UInt8](repeating: 0, count: 31))
        // Diffie-Hellman agrees, and keeps the result secret.
        let a = Ristretto255.Scalar(), b = Ristretto255.Scalar()
        let ka = try a.sharedSecret(with: Ristretto255.Point(generatorTimes: b))
        let kb = try b.sharedSecret(with: Ristretto255.Point(generatorTimes: a))
        #expect(ka.rawRepresentation == kb.rawRepresentation)
        #expect(Ristretto255.Scalar().rawRepresentation != Ristretto255.Scalar().rawRepresentation)
    }

    /// An identity result throws: reached here through a scalar only tests can build (ℓ itself).
    @Test func identityResultThrows() throws {
        let order = Ristretto255.Scalar(unchecked: SecureBytes(copying: groupOrder))
        let p = Ristretto255.Point.generator
        #expect(throws: CryptoError.weakSharedSecret) { try p.multiplied(by: order) }
        #expect(throws: CryptoError.weakSharedSecret) { try order.sharedSecret(with: p) }
        let g = try Ristretto255.SecretPoint(uniformBytes: SecureBytes(randomCount: 64))
        #expect(throws: CryptoError.weakSharedSecret) { try g.multiplied(by: order) }
        // Element derivation of 64 zero bytes is the identity (both halves map to it): refused.
        #expect(throws: CryptoError.invalidPoint) { try Ristretto255.Point(uniformBytes: [UInt8](repeating: 0, count: 64)) }
    }
}

/// CPace runs as meishi will drive them, honest and attacked.
@Suite struct CPaceProtocolTests {
    let ci = CPace.lengthValueConcatenation([Array("meishi dialer".utf8), Array("meishi listener".utf8)])
    let sid = SecureRandom.bytes(32)

    func run(_ pwA: String, _ pwB: String, ciB: [UInt8]? = nil, sidB: [UInt8]? = nil) throws
        -> (CPace.Initiator, CPace.Responder, CPace.Session, CPace.ResponderSession) {
        let a = CPace.Initiator(password: secret(utf8: pwA), channelID: ci, sessionID: sid, associatedData: Array("A".utf8))
        let b = CPace.Responder(password: secret(utf8: pwB), channelID: ciB ?? ci, sessionID: sidB ?? sid, associatedData: Array("B".utf8))
        // Both messages cross the wire encoded.
        let sa = try a.finish(responderMessage: CPace.Message(encoded: b.message.encoded))
        let sb = try b.finish(initiatorMessage: CPace.Message(encoded: a.message.encoded))
        return (a, b, sa, sb)
    }

    @Test func honestRunAgreesAndConfirms() throws {
        let (_, _, sa, sb) = try run("tulip-anchor", "tulip-anchor")
        #expect(sa.intermediateSessionKey == sb.intermediateSessionKey)
        #expect(sa.intermediateSessionKey.count == CPace.intermediateSessionKeyByteCount)
        let tb = try sb.confirmation(afterVerifying: CPace.ConfirmationTag(rawRepresentation: sa.confirmation.rawRepresentation))
        try sa.verifyPeerConfirmation(CPace.ConfirmationTag(rawRepresentation: tb.rawRepresentation))
        #expect(tb != sa.confirmation, "each side tags its own message")
        #expect(sa.sessionIDOutput == sb.sessionIDOutput)
    }

    @Test func wrongPasswordDiffersAndFailsConfirmation() throws {
        for other in ["tulip-anchors", "tulip anchor", "Tulip-anchor", "anchor-tulip", "", "tulip-anchor\u{0}"] {
            let (_, _, sa, sb) = try run("tulip-anchor", other)
            #expect(sa.intermediateSessionKey != sb.intermediateSessionKey, "\(other)")
            #expect(throws: CryptoError.confirmationFailed) { try sb.confirmation(afterVerifying: sa.confirmation) }
        }
    }

    @Test func otherChannelOrSessionFails() throws {
        let otherCI = CPace.lengthValueConcatenation([Array("meishi listener".utf8), Array("meishi dialer".utf8)])
        let (_, _, sa, sb) = try run("tulip-anchor", "tulip-anchor", ciB: otherCI)
        #expect(sa.intermediateSessionKey != sb.intermediateSessionKey)
        #expect(throws: CryptoError.confirmationFailed) { try sb.confirmation(afterVerifying: sa.confirmation) }
        let (_, _, sc, sd) = try run("tulip-anchor", "tulip-anchor", sidB: SecureRandom.bytes(32))
        #expect(sc.intermediateSessionKey != sd.intermediateSessionKey)
        #expect(throws: CryptoError.confirmationFailed) { try sd.confirmation(afterVerifying: sc.confirmation) }
    }

    /// Associated data is authenticated: altered in transit, the keys differ and confirmation fails.
    @Test func tamperedAssociatedDataFails() throws {
        let pw = secret(utf8: "tulip-anchor")
        let a = CPace.Initiator(password: pw, channelID: ci, sessionID: sid, associatedData: Array("A".utf8))
        let b = CPace.Responder(password: pw, channelID: ci, sessionID: sid, associatedData: Array("B".utf8))
        let forged = CPace.Message(share: a.message.share, associatedData: Array("Mallory".utf8))
        let sa = try a.finish(responderMessage: b.message)
        let sb = try b.finish(initiatorMessage: forged)
        #expect(sa.intermediateSessionKey != sb.intermediateSessionKey)
        #expect(throws: CryptoError.confirmationFailed) { try sb.confirmation(afterVerifying: sa.confirmation) }
    }

    /// Two initiators (or two responders) do not agree: the transcript order carries the roles.
    @Test func roleConfusionFails() throws {
        let pw = secret(utf8: "tulip-anchor")
        let a = CPace.Initiator(password: pw, channelID: ci, sessionID: sid)
        let b = CPace.Initiator(password: pw, channelID: ci, sessionID: sid)
        let sa = try a.finish(responderMessage: b.message), sb = try b.finish(responderMessage: a.message)
        #expect(sa.intermediateSessionKey != sb.intermediateSessionKey)
        #expect(throws: CryptoError.confirmationFailed) { try sa.verifyPeerConfirmation(sb.confirmation) }
    }

    /// A reflected message (our own share back) is refused before any key exists, in every role.
    @Test func reflectionRefused() throws {
        let pw = secret(utf8: "tulip-anchor")
        let a = CPace.Initiator(password: pw, channelID: ci, sessionID: sid, associatedData: [1])
        #expect(throws: CryptoError.reflectedMessage) { try a.finish(responderMessage: a.message) }
        #expect(throws: CryptoError.reflectedMessage) {
            try a.finish(responderMessage: CPace.Message(share: a.message.share, associatedData: [2]))
        }
        let b = CPace.Responder(password: pw, channelID: ci, sessionID: sid)
        #expect(throws: CryptoError.reflectedMessage) { try b.finish(initiatorMessage: b.message) }
        let s = CPace.SymmetricParty(password: pw, channelID: ci, sessionID: sid)
        #expect(throws: CryptoError.reflectedMessage) { try s.finish(peerMessage: s.message) }
    }

    /// The responder gives nothing key-derived for a wrong, truncated-then-padded or bit-flipped tag.
    @Test func badTagsRefused() throws {
        let (_, _, sa, sb) = try run("tulip-anchor", "tulip-anchor")
        let good = sa.confirmation.rawRepresentation
        for i in 0..<good.count {
            var flipped = good
            flipped[i] ^= 0x01
            #expect(throws: CryptoError.confirmationFailed) { try sb.confirmation(afterVerifying: CPace.ConfirmationTag(rawRepresentation: flipped)) }
        }
        #expect(throws: CryptoError.confirmationFailed) {
            try sb.confirmation(afterVerifying: CPace.ConfirmationTag(rawRepresentation: [UInt8](repeating: 0, count: 64)))
        }
        // The initiator's own tag is not the responder's: echoing it back fails.
        #expect(throws: CryptoError.confirmationFailed) { try sa.verifyPeerConfirmation(sa.confirmation) }
        // After all that, the genuine tag still confirms (verification keeps no state).
        _ = try sb.confirmation(afterVerifying: sa.confirmation)
    }

    @Test func freshScalarsGiveFreshMessages() {
        let pw = secret(utf8: "tulip-anchor")
        var shares = Set<[UInt8]>()
        for _ in 0..<16 { shares.insert(CPace.Initiator(password: pw, channelID: ci, sessionID: sid).message.share.rawRepresentation) }
        for _ in 0..<16 { shares.insert(CPace.Responder(password: pw, channelID: ci, sessionID: sid).message.share.rawRepresentation) }
        #expect(shares.count == 32)
        // Nor does a share reveal the generator: it is never g itself.
        let g = CPace.generator(password: pw, channelID: ci, sessionID: sid).rawRepresentation.exposedBytes()
        #expect(!shares.contains(g))
    }

    /// `Message(encoded:)` against hostile bytes: every prefix, every suffix, bad lengths, bad points.
    @Test func messageDecoderAttacks() throws {
        let a = CPace.Initiator(password: secret(utf8: "tulip-anchor"), associatedData: Array("meishi/1".utf8))
        let wire = a.message.encoded
        #expect(wire.count == 1 + 32 + 1 + 8)
        #expect(try CPace.Message(encoded: wire) == a.message)
        // Fed one byte at a time: no prefix decodes.
        for n in 0..<wire.count {
            #expect(throws: CryptoError.self, "prefix \(n)") { try CPace.Message(encoded: wire.prefix(n)) }
        }
        #expect(throws: CryptoError.malformedMessage) { try CPace.Message(encoded: wire + [0]) }
        #expect(throws: CryptoError.malformedMessage) { try CPace.Message(encoded: [UInt8]()) }
        let share = a.message.share.rawRepresentation
        // Share length prefixes other than 32.
        for n in [0, 31, 33, 64] {
            #expect(throws: CryptoError.invalidLength(what: "CPace share", expected: 32, actual: n)) {
                try CPace.Message(encoded: [UInt8(n)] + [UInt8](repeating: 0x11, count: n) + [0])
            }
        }
        // Non-minimal LEB128 (32 as a0 00) and an AD length of 0 as 80 00.
        #expect(throws: CryptoError.malformedMessage) { try CPace.Message(encoded: [0xa0, 0x00] + share + [0]) }
        #expect(throws: CryptoError.malformedMessage) { try CPace.Message(encoded: [32] + share + [0x80, 0x00]) }
        // Lengths that never end, or overflow: refused, no crash.
        #expect(throws: CryptoError.malformedMessage) { try CPace.Message(encoded: [32] + share + [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]) }
        #expect(throws: CryptoError.malformedMessage) { try CPace.Message(encoded: [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]) }
        #expect(throws: CryptoError.malformedMessage) { try CPace.Message(encoded: [32] + share + [0x80]) }
        // AD length claims more or fewer bytes than follow.
        #expect(throws: CryptoError.malformedMessage) { try CPace.Message(encoded: [32] + share + [5, 1, 2, 3, 4]) }
        #expect(throws: CryptoError.malformedMessage) { try CPace.Message(encoded: [32] + share + [3, 1, 2, 3, 4]) }
        // AD up to the limit decodes; one byte over is refused.
        let max = CPace.maximumAssociatedDataByteCount
        let atMax = [32] + share + CPace.lengthPrefix(max) + [UInt8](repeating: 7, count: max)
        #expect(try CPace.Message(encoded: atMax).associatedData.count == max)
        #expect(throws: CryptoError.malformedMessage) {
            try CPace.Message(encoded: [32] + share + CPace.lengthPrefix(max + 1) + [UInt8](repeating: 7, count: max + 1))
        }
        // Invalid shares inside a well-formed frame.
        for e in Ristretto255Tests.badEncodings + [String(repeating: "00", count: 32)] {
            #expect(throws: CryptoError.invalidPoint, "\(e)") { try CPace.Message(encoded: [32] + bytes(e) + [0]) }
        }
    }

    /// Random and mutated input: decoding either throws or gives a message that encodes to the same bytes.
    @Test func messageDecoderIsCanonical() {
        let wire = CPace.Initiator(password: secret(utf8: "x"), associatedData: [9, 9]).message.encoded
        var inputs: [[UInt8]] = []
        for i in 0..<wire.count {
            for bit in 0..<8 {
                var m = wire
                m[i] ^= UInt8(1 << bit)
                inputs.append(m)
            }
        }
        for _ in 0..<500 { inputs.append(SecureRandom.bytes(Int.random(in: 0...80))) }
        for _ in 0..<500 { inputs.append([32] + SecureRandom.bytes(32) + [0]) }
        var decoded = 0
        for input in inputs {
            if let m = try? CPace.Message(encoded: input) {
                #expect(m.encoded == input)
                decoded += 1
            }
        }
        #expect(decoded < inputs.count / 2, "most mutations and random shares are refused")
    }
}

/// The two primitives CPace adds beside SHA-256: SHA-512 (FIPS 180-4 example "abc") and
/// HMAC-SHA512 (RFC 4231 test cases 1, 2 and 6, the last with a key longer than a block).
@Suite struct SHA512AndHMACTests {
    @Test func sha512() {
        let abc = "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
        #expect(Hex.encode(SHA512.hash(Array("abc".utf8))) == abc)
        #expect(Hex.encode(SHA512.hash(SecureBytes(copying: Array("abc".utf8))).exposedBytes()) == abc)
        // In pieces, secret or not, the digest is that of the concatenation.
        let parts: [HashPart] = [.plain([0x61]), .secret(SecureBytes(copying: [0x62])), .plain([]), .plain([0x63])]
        #expect(Hex.encode(SHA512.hash(parts: parts).exposedBytes()) == abc)
        #expect(SecureBytes(joining: parts).exposedBytes() == Array("abc".utf8))
    }

    @Test func hmacSHA512() {
        let cases: [([UInt8], String, String)] = [
            ([UInt8](repeating: 0x0b, count: 20), "Hi There",
             "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"),
            (Array("Jefe".utf8), "what do ya want for nothing?",
             "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"),
            ([UInt8](repeating: 0xaa, count: 131), "Test Using Larger Than Block-Size Key - Hash Key First",
             "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f3526b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598"),
        ]
        for (key, data, tag) in cases {
            let k = SecureBytes(copying: key)
            #expect(Hex.encode(HMACSHA512.authenticationCode(for: Array(data.utf8), key: k)) == tag)
            #expect(HMACSHA512.isValidAuthenticationCode(bytes(tag), for: Array(data.utf8), key: k))
            var wrong = bytes(tag)
            wrong[63] ^= 0x80
            #expect(!HMACSHA512.isValidAuthenticationCode(wrong, for: Array(data.utf8), key: k))
            #expect(!HMACSHA512.isValidAuthenticationCode(Array(bytes(tag).prefix(32)), for: Array(data.utf8), key: k))
            #expect(!HMACSHA512.isValidAuthenticationCode(bytes(tag), for: Array((data + ".").utf8), key: k))
        }
    }
}
