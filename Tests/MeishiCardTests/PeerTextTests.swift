import Foundation
import Testing
import MeishiCrypto
@testable import MeishiCard
import MeishiText

/// What peer text may do inside a card: member names that are canonically equivalent to real
/// ones, NUL (issue 8, section 4; terminal escapes and look-alike names: MeishiTextTests).
@Suite struct PeerTextTests {
    // MARK: Member names are bytes

    @Test func kelvinSignIsNotK() throws {
        let kelvin = "pub\u{212A}ey"
        #expect(kelvin == "pubKey")  // what Swift's String == says: canonical equivalence
        #expect(!JSONValue.sameName(kelvin, "pubKey"))
        let obj = try StrictJSONParser.parse(Array(#"{"pub\u212aey":1,"pubKey":2}"#.utf8))
        #expect(obj["pubKey"] == .number(2))
        #expect(obj[kelvin] == .number(1))
        #expect(try StrictJSONParser.parse(Array(#"{"pub\u212aey":1}"#.utf8))["pubKey"] == nil)
        #expect(JSONValue.object([(key: kelvin, value: .null)]) != JSONValue.object([(key: "pubKey", value: .null)]))
        #expect(throws: JSONParseError.self) { try StrictJSONParser.parse(Array(#"{"a\u0041":1,"aA":2}"#.utf8)) }
    }

    @Test func fieldNamesAreBytes() {
        #expect(throws: CardError.self) { try FieldName("x-\u{212A}") }
        #expect((try? FieldName("note")) != nil)
        #expect(throws: CardError.self) { try FieldName("note\u{301}") }
    }

    static func signedPayload(_ fields: [FieldName: FieldValue]) -> ProximityPayload {
        let key = Ed25519.SigningKey()
        var p = try! ProximityPayload.sign(disclosed: [.name: ["Eve"]], level: .public, signingKey: key,
                                           boxKey: X25519.SecretKey().publicKey, timestamp: 1_800_000_000).payload
        p.cardFields = fields
        return p.signed(with: key).payload
    }

    @Test func aKelvinMemberIsMalformedEvenWhenTheSignatureCoversPubKey() throws {
        let p = Self.signedPayload([.name: .single("Eve")])
        let text = String(decoding: p.canonicalJSON, as: UTF8.self).replacingOccurrences(of: "\"pubKey\":", with: "\"pub\\u212aey\":")
        let verifier = CardVerifier(clock: { 1_800_000_000 })
        #expect(throws: PayloadError.self) { try verifier.verify(Array(text.utf8)) }
        do { _ = try verifier.verify(Array(text.utf8)) } catch { #expect(error.verdict == "malformed") }
        #expect(try verifier.verify(p.canonicalJSON).payload == p)
    }

    // MARK: NUL

    @Test func aNULInAValueIsMalformedInJSONAndQRText() throws {
        let p = Self.signedPayload([.name: .single("Eve\u{0}Mallory"), .email: .multiple(["e@example.org"])])
        let verifier = CardVerifier(clock: { 1_800_000_000 })
        for bytes in [p.canonicalJSON, Array(CardQRText.encode(p).utf8)] {
            do {
                _ = try verifier.verify(bytes)
                Issue.record("a NUL value was accepted")
            } catch {
                #expect(error.verdict == "malformed")
                #expect(error.reason.contains("NUL"))
            }
        }
        #expect(throws: CardError.self) { var c = Card(); try c.set(.name, "Eve\u{0}") }
    }

    /// Trial 7, F20: a reason quotes peer text as it came; it is escaped where it leaves (the
    /// terminal's `\u{1B}` by the CLI's Console, `\u001b` by its JSON printer), so `--json`
    /// carries the name itself rather than the terminal's escape of it.
    @Test func reasonsQuotePeerTextAsItCame() throws {
        let evil = Array(#"{"version":1,"\u001b]0;PWNED\u0007":1}"#.utf8)
        do { _ = try ProximityPayload.parse(evil) } catch {
            #expect(error.reason == "malformed payload: unknown member \"\u{1B}]0;PWNED\u{7}\"")
        }
        do { _ = try StrictJSONParser.parse(Array(#"{"\u009b":1,"\u009b":2}"#.utf8)) } catch {
            #expect(error.reason.contains("duplicate member name \"\u{9B}\""))
        }
    }
}
