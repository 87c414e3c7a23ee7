import Foundation
import Testing
@testable import MeishiCard

@Suite struct CardTests {
    @Test func setAddUnsetAndDisclose() throws {
        var card = Card()
        try card.set(.name, "Mei Tanaka")
        try card.add(.email, "mei@example.org")
        try card.add(.email, "private@example.org", level: .personal)
        try card.set(FieldName("x-mastodon"), "@mei@example.social", level: .public)
        #expect(card.valueCount == 4)
        #expect(card.fields[.name]?.first?.level == .public)
        #expect(card.fields[.email]?.first?.level == .professional)
        #expect(card.disclosed(at: .public)[.email] == nil)
        #expect(card.disclosed(at: .professional)[.email] == ["mei@example.org"])
        #expect(card.disclosed(at: .personal)[.email] == ["mei@example.org", "private@example.org"])
        #expect(card.disclosed(at: .personal, only: [.name]).keys.sorted() == [.name])
        #expect(try card.unset(.email, value: "mei@example.org") == 1)
        #expect(card.fields[.email]?.count == 1)
        #expect(throws: CardError.noSuchValue(.email)) { try card.unset(.email, value: "nobody@example.org") }
        #expect(try card.unset(.email) == 1)
        #expect(throws: CardError.noSuchField(.email)) { try card.unset(.email) }
    }

    @Test func refusesBadValues() throws {
        var card = Card()
        #expect(throws: CardError.notMultiValued(.name)) { try card.add(.name, "A") }
        #expect(throws: CardError.empty(.name)) { try card.set(.name, "   ") }
        #expect(throws: CardError.controlCharacter(.name)) { try card.set(.name, "Mei\u{1B}[31m") }
        #expect(throws: CardError.controlCharacter(.name)) { try card.set(.name, "Mei\u{202E}") }
        #expect(throws: CardError.tooLong(.name, bytes: 257)) { try card.set(.name, String(repeating: "a", count: 257)) }
        #expect(throws: CardError.invalidEmail("mei at example.org")) { try card.add(.email, "mei at example.org") }
        #expect(throws: CardError.invalidEmail("mei@localhost")) { try card.add(.email, "mei@localhost") }
        #expect(throws: CardError.invalidPhone("call me")) { try card.add(.phone, "call me") }
        #expect(throws: CardError.invalidURL("example.org")) { try card.add(.url, "example.org") }
        try card.add(.email, "mei@example.org")
        #expect(throws: CardError.duplicateValue(.email)) { try card.add(.email, "mei@example.org") }
        #expect(throws: CardError.invalidFieldName("nickname")) { try FieldName("nickname") }
        #expect(throws: CardError.invalidFieldName("x-")) { try FieldName("x-") }
        #expect(throws: CardError.invalidFieldName("x-Upper")) { try FieldName("x-Upper") }
    }

    /// Trial 7, F17: `card set url "javascript:alert(1)"` was signed and exported as a link.
    /// A url on your card is an http or https address now; one already in card.json still loads
    /// (so that it can be unset), and only a new value is held to the rule.
    @Test func aURLOnYourCardIsAWebAddress() throws {
        var card = Card()
        for v in ["javascript:alert(1)", "mailto:mei@example.org", "tel:+81901234", "file:///etc/passwd", "data:text/html,x", "http:/x"] {
            #expect(throws: CardError.notAWebAddress(v)) { try card.add(.url, v) }
            #expect(throws: CardError.notAWebAddress(v)) { try card.set(.url, v) }
        }
        for v in ["https://example.org", "HTTP://Example.org/a?b=c", "https://例え.jp/"] { try card.add(.url, v) }
        #expect(throws: CardError.notAWebAddress("javascript:x")) { try card.replace(.url, "https://example.org", with: "javascript:x") }
        let stored = #"{"version":1,"fields":{"name":[{"value":"Mei","level":"public"}],"url":[{"value":"javascript:alert(1)","level":"public"}]}}"#
        let loaded = try JSONDecoder().decode(Card.self, from: Data(stored.utf8))
        #expect(loaded.fields[.url]?.map(\.value) == ["javascript:alert(1)"])
        var unset = loaded
        #expect(try unset.unset(.url, value: "javascript:alert(1)") == 1)
    }

    @Test func limitsValueCount() throws {
        var card = Card()
        for n in 0..<Card.maximumValueCount { try card.add(.email, "m\(n)@example.org") }
        #expect(throws: CardError.tooManyValues(limit: 64)) { try card.add(.phone, "+81 90 1234 5678") }
    }

    @Test func normalisesToNFC() throws {
        var card = Card()
        try card.set(.name, "Cafe\u{301}")  // e + combining acute
        #expect(card.name == "Caf\u{E9}")
        #expect(card.name!.unicodeScalars.count == 4)
    }

    @Test(arguments: [
        ("+81 90 1234 5678", "+819012345678"), ("0081 90-1234-5678", "+819012345678"),
        ("+1 (415) 555-0100", "+14155550100"), ("090 1234 5678", nil), ("+0 123 4567 89", nil), ("+12", nil),
    ] as [(String, String?)])
    func e164(_ typed: String, _ expected: String?) {
        #expect(CardText.e164(typed) == expected)
    }

    @Test func phoneKeepsTypedFormAndE164() throws {
        var card = Card()
        try card.add(.phone, "+81 90 1234 5678")
        #expect(card.fields[.phone]?.first?.value == "+81 90 1234 5678")
        #expect(card.fields[.phone]?.first?.e164 == "+819012345678")
    }

    @Test func codableRoundTrip() throws {
        var card = Card()
        try card.set(.name, "芽衣")
        try card.add(.phone, "+81 90 1234 5678", level: .personal)
        let data = try JSONEncoder().encode(card)
        #expect(try JSONDecoder().decode(Card.self, from: data) == card)
    }

    @Test func fieldOrder() throws {
        let names = try ["x-a", "note", "email", "name", "org"].map(FieldName.init).sorted().map(\.rawValue)
        #expect(names == ["name", "org", "email", "note", "x-a"])
    }
}

@Suite struct PayloadShapeTests {
    static let base: [String: JSONValue] = [
        "version": .number(1), "shareId": .string("0f8fad5b-d9cb-469f-a165-70867728950e"),
        "senderDID": .string("did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"),
        "signPubKey": .string(Base64URL.encode(Hex.decode("3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29")!)),
        "pubKey": .string(Base64URL.encode([UInt8](repeating: 9, count: 32))),
        "timestamp": .number(1_700_000_000), "level": .string("public"),
        "cardFields": .object(["name": .string("Mei"), "email": .array([.string("m@example.org")])]),
        "payloadSignature": .string(Base64URL.encode([UInt8](repeating: 1, count: 64))),
    ]

    func parse(_ change: (inout [String: JSONValue]) -> Void) throws(PayloadError) -> ProximityPayload {
        var obj = Self.base
        change(&obj)
        return try ProximityPayload.parse(JCS.canonicalize(.object(obj)))
    }

    @Test func parsesAndRoundTrips() throws {
        let p = try parse { _ in }
        #expect(p.cardFields[.email] == .multiple(["m@example.org"]))
        #expect(p.jsonValue() == .object(Self.base))
        #expect(p.canonicalJSON == JCS.canonicalize(.object(Self.base)))
        let input = p.signingInput
        #expect(Array(input.prefix(15)) == Array("meishi-card-v1".utf8) + [0])
        #expect(!String(decoding: input, as: UTF8.self).contains("payloadSignature"))
    }

    @Test func verdicts() {
        func verdict(_ change: (inout [String: JSONValue]) -> Void) -> String? {
            do { _ = try parse(change); return nil } catch { return error.verdict }
        }
        #expect(verdict { $0["version"] = .number(2) } == "unsupported-version")
        #expect(verdict { $0["version"] = .string("1") } == "malformed")
        #expect(verdict { $0["pubKey"] = .null } == "malformed")
        #expect(verdict { $0["extra"] = .bool(true) } == "malformed")
        #expect(verdict { $0["timestamp"] = .number(1.5) } == "malformed")
        #expect(verdict { $0["timestamp"] = .number(-1) } == "malformed")
        #expect(verdict { $0["level"] = .string("secret") } == "malformed")
        #expect(verdict { $0["shareId"] = .string("0F8FAD5B-D9CB-469F-A165-70867728950E") } == "malformed")
        #expect(verdict { $0["cardFields"] = .object(["email": .string("m@example.org")]) } == "malformed")
        #expect(verdict { $0["cardFields"] = .object(["name": .array([.string("a")])]) } == "malformed")
        #expect(verdict { $0["cardFields"] = .object(["nick": .string("a")]) } == "malformed")
        #expect(verdict { $0["cardFields"] = .object(["name": .string(String(repeating: "a", count: 257))]) } == "malformed")
        #expect(verdict { $0["payloadSignature"] = .string("AAAA") } == "malformed")
        #expect(verdict { $0["senderDID"] = .string("did:web:example.org") } == "malformed")
        #expect(verdict { $0.removeValue(forKey: "shareId") } == "malformed")
    }

    @Test func refusesOversizedInput() {
        let big = [UInt8](repeating: 0x20, count: ProximityPayload.maximumEncodedSize + 1)
        #expect(throws: PayloadError.tooLarge(bytes: big.count)) { try ProximityPayload.parse(big) }
    }
}
