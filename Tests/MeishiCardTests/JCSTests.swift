import Foundation
import Testing
@testable import MeishiCard
import MeishiCrypto

/// RFC 8785 examples: section 3.2.2 (sample), 3.2.3 (sorting) and Appendix B (numbers).
@Suite struct JCSTests {
    @Test func rfc8785SampleObject() throws {
        let input = #"""
            {
              "numbers": [333333333.33333329, 1E30, 4.50,
                          2e-3, 0.000000000000000000000000001],
              "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
              "literals": [null, true, false]
            }
            """#
        let expected = #"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        let value = try StrictJSONParser.parse(Array(input.utf8))
        #expect(String(decoding: JCS.canonicalize(value), as: UTF8.self) == expected)
    }

    @Test func rfc8785SortingByUTF16() throws {
        let input = #"""
            {"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
             "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}
            """#
        let value = try StrictJSONParser.parse(Array(input.utf8))
        guard case .object = value else { Issue.record("not an object"); return }
        let text = String(decoding: JCS.canonicalize(value), as: UTF8.self)
        let order = ["Carriage Return", "One", "Control", "Latin Small Letter O With Diaeresis", "Euro Sign",
                     "Emoji: Grinning Face", "Hebrew Letter Dalet With Dagesh"]
        let positions = order.map { text.range(of: $0)!.lowerBound }
        #expect(positions == positions.sorted())
    }

    @Test(arguments: [
        (UInt64(0x0000000000000000), "0"), (0x8000000000000000, "0"), (0x0000000000000001, "5e-324"),
        (0x8000000000000001, "-5e-324"), (0x7fefffffffffffff, "1.7976931348623157e+308"),
        (0xffefffffffffffff, "-1.7976931348623157e+308"), (0x4340000000000000, "9007199254740992"),
        (0xc340000000000000, "-9007199254740992"), (0x4430000000000000, "295147905179352830000"),
        (0x44b52d02c7e14af5, "9.999999999999997e+22"), (0x44b52d02c7e14af6, "1e+23"),
        (0x44b52d02c7e14af7, "1.0000000000000001e+23"), (0x444b1ae4d6e2ef4e, "999999999999999700000"),
        (0x444b1ae4d6e2ef4f, "999999999999999900000"), (0x444b1ae4d6e2ef50, "1e+21"),
        (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"), (0x3eb0c6f7a0b5ed8d, "0.000001"),
        (0x41b3de4355555553, "333333333.3333332"), (0x41b3de4355555554, "333333333.33333325"),
        (0x41b3de4355555555, "333333333.3333333"), (0x41b3de4355555556, "333333333.3333334"),
        (0x41b3de4355555557, "333333333.33333343"), (0xbecbf647612f3696, "-0.0000033333333333333333"),
        (0x43143ff3c1cb0959, "1424953923781206.2"),
    ])
    func rfc8785Numbers(bits: UInt64, expected: String) {
        #expect(JCS.serialize(number: Double(bitPattern: bits)) == expected)
    }

    @Test func controlCharactersAreEscapedLowercase() {
        let s = JSONValue.string("a\u{1}\u{1F}\t\u{7F}é")
        #expect(String(decoding: JCS.canonicalize(s), as: UTF8.self) == "\"a\\u0001\\u001f\\t\u{7F}é\"")
    }
}

@Suite struct StrictJSONTests {
    @Test(arguments: [
        #"{"a":1,"a":2}"#, #"{"a":"\ud800"}"#, #"{"a":"\udc00x"}"#, "[01]", "[1.]", "{\"a\":1,}", "[1] x",
        "\"\u{1}\"", "{'a':1}", "nul", "[1e999]", "",
    ])
    func refuses(_ text: String) {
        #expect(throws: JSONParseError.self) { try StrictJSONParser.parse(Array(text.utf8)) }
    }

    @Test func refusesInvalidUTF8() {
        #expect(throws: JSONParseError.self) { try StrictJSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
    }

    @Test func refusesDeepNesting() {
        let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        #expect(throws: JSONParseError.self) { try StrictJSONParser.parse(Array(deep.utf8)) }
    }

    @Test func parsesSurrogatePairs() throws {
        #expect(try StrictJSONParser.parse(Array(#""\ud83d\ude00""#.utf8)) == .string("😀"))
    }
}

@Suite struct EncodingTests {
    @Test func base64URLRoundTripsAndIsStrict() {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Base64URL.decode(text) == bytes)
        }
        #expect(Base64URL.decode("AA==") == nil)
        #expect(Base64URL.decode("AB") == nil)  // non-zero trailing bits
        #expect(Base64URL.decode("A") == nil)
        #expect(Base64URL.decode("a+b/") == nil)
    }

    @Test func base58KnownValues() {
        #expect(Base58.encode([0, 0, 0x28, 0x7f, 0xb4, 0xcd]) == "11233QC4")
        #expect(Base58.encode(Array("Hello World!".utf8)) == "2NEpo7TZRRrLZSi2U")
        #expect(Base58.decode("2NEpo7TZRRrLZSi2U") == Array("Hello World!".utf8))
        #expect(Base58.decode("0OIl") == nil)
    }

    /// W3C did:key Ed25519 examples (fixtures/external/did_key_ed25519.json).
    @Test func didKeyW3CExamples() throws {
        let vectors = try Fixtures.json("external/did_key_ed25519.json") as! [[String: Any]]
        #expect(vectors.count >= 5)
        for v in vectors {
            let key = try Ed25519.PublicKey(rawRepresentation: Hex.decode(v["ed25519_public_key"] as! String)!)
            let did = v["did"] as! String
            #expect(DIDKey.did(for: key) == did)
            #expect(did.hasPrefix("did:key:z6Mk"))
            #expect(DIDKey.ed25519PublicKey(from: did) == key)
        }
        #expect(DIDKey.ed25519PublicKey(from: "did:key:z6LShs9GGnqk85isEBzzshkuVWrVKsRp24GnDuHk8QWkARMW") == nil)
        #expect(DIDKey.ed25519PublicKey(from: "did:web:example.org") == nil)
    }
}
