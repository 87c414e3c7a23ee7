import Foundation
import Testing
@testable import MeishiCard

@Suite struct VCardTests {
    @Test func makeAndParseRoundTrip() throws {
        let did = "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"
        let text = VCard.make(fields: [.name: ["田中 芽衣"], .org: ["Example; Robotics, Inc"], .email: ["a@example.org", "b@example.org"],
                                       .phone: ["+81 90 1234 5678"], .note: [String(repeating: "長い", count: 35) + "\nsecond line"],
                                       try FieldName("x-handle"): ["@mei"]],
                              did: did, timestamp: 1_795_000_000)
        #expect(text.hasPrefix("BEGIN:VCARD\r\nVERSION:4.0\r\n"))
        #expect(text.split(separator: "\r\n").allSatisfy { $0.utf8.count <= 75 })
        let parsed = try #require(VCard.parse(text))
        #expect(parsed.did == did)
        #expect(parsed.revision == 1_795_000_000)
        #expect(parsed.fields[.name] == ["田中 芽衣"])
        #expect(parsed.fields[.org] == ["Example; Robotics, Inc"])
        #expect(parsed.fields[.email] == ["a@example.org", "b@example.org"])
        #expect(parsed.fields[.phone] == ["+81 90 1234 5678"])
        #expect(parsed.fields[.note]?.first?.hasSuffix("\nsecond line") == true)
        #expect(parsed.fields[try FieldName("x-handle")] == ["@mei"])
    }

    @Test func parsesVersion21QuotedPrintableShiftJIS() throws {
        let sjis: [UInt8] = [0x93, 0x63, 0x92, 0x86]  // 田中 in Shift_JIS
        let qp = sjis.map { "=" + String(format: "%02X", $0) }.joined()
        let text = "BEGIN:VCARD\r\nVERSION:2.1\r\nN;CHARSET=SHIFT_JIS;ENCODING=QUOTED-PRINTABLE:\(qp);=\r\n\(qp)\r\nTEL;CELL:090-1234-5678\r\nEND:VCARD\r\n"
        let parsed = try #require(VCard.parse(text))
        #expect(parsed.fields[.name] == ["田中 田中"])
        #expect(parsed.fields[.phone] == ["090-1234-5678"])
    }

    /// A comma inside an ORG component is text (RFC 6350 6.6.4): vCard 2.1 writes it bare
    /// (`ORG:Company, The;TheDepartment`, Outlook 2003); the export escapes it, or khard and
    /// vobject split "Company, The" away. The other structured properties keep their lists.
    @Test func aCommaInsideAnOrgComponentIsEscaped() throws {
        let text = "BEGIN:VCARD\r\nVERSION:2.1\r\nN:Doe;John\r\nFN:John Doe\r\nORG:Company, The;TheDepartment\r\n"
            + "ADR;WORK:;;Main St 1;Town;;;\r\nEND:VCARD\r\n"
        let parsed = try #require(VCard.parse(text))
        #expect(parsed.fields[.org] == ["Company, The, TheDepartment"])
        let entry = VCardEntry(uid: "urn:uuid:0", fields: parsed.fields, did: nil, trust: "unsigned", revision: 0, extras: parsed.extras)
        for version in VCardVersion.allCases {
            let written = VCard.write(entry, version: version)
            #expect(written.contains("\r\nORG:Company\\, The;TheDepartment\r\n"), "\(written)")
            let back = try #require(VCard.parse(written))
            #expect(back.fields[.org] == parsed.fields[.org])
            #expect(back.extras.holds(parsed.extras) && parsed.extras.holds(back.extras))
        }
        var own = entry
        own.fields[.org] = ["Smith, Jones; Partners"]
        own.extras = VCardExtras()
        own.categories = ["a,b", "c;d"]
        let written = VCard.write(own, version: .v4)
        #expect(written.contains("\r\nORG:Smith\\, Jones\\; Partners\r\n") && written.contains("\r\nCATEGORIES;X-MEISHI-OWN=true:a\\,b,c\\;d\r\n"), "\(written)")
    }

    @Test func parsesMECARD() throws {
        let m = try #require(VCard.parseMECARD("MECARD:N:Tanaka,Mei;TEL:+81901234567;EMAIL:mei@example.org;NOTE:a\\;b;;"))
        #expect(m.fields[.name] == ["Mei Tanaka"])
        #expect(m.fields[.note] == ["a;b"])
        #expect(m.fields[.email] == ["mei@example.org"])
    }

    @Test func ignoresInvalidDIDAndPhotos() throws {
        let text = "BEGIN:VCARD\nVERSION:3.0\nFN:X\nPHOTO;ENCODING=b;TYPE=JPEG:AAAA\nX-MEISHI-DID:did:key:nonsense\nEND:VCARD\n"
        let parsed = try #require(VCard.parse(text))
        #expect(parsed.did == nil)
        #expect(parsed.fields.keys.sorted() == [.name])
    }

    /// Real vCards written by Android, iPhone, Outlook, Evolution, Lotus Notes… (../shared/corpus/vcard).
    @Test(.enabled(if: FileManager.default.fileExists(atPath: Self.corpus), "skipped: ../shared/corpus/vcard is not present"))
    func realWorldCorpus() throws {
        let files = FileManager.default.enumerator(atPath: Self.corpus)!.compactMap { $0 as? String }.filter { $0.hasSuffix(".vcf") }
        #expect(files.count > 50)
        var named = 0
        for file in files {
            let data = try Data(contentsOf: URL(fileURLWithPath: Self.corpus + "/" + file))
            let text = TextDecoding.decode(Array(data))
            // Never crashes; most cards yield a name.
            if let c = VCard.parse(text), c.name != nil { named += 1 }
        }
        #expect(Double(named) / Double(files.count) > 0.8, "\(named) of \(files.count) named")
        let john = try #require(VCard.parse(try String(contentsOfFile: Self.corpus + "/ez-vcard/John_Doe_IPHONE.vcf", encoding: .utf8)))
        #expect(john.name?.contains("John") == true)
        #expect((john.fields[.email] ?? []).count >= 1)
    }

    static var corpus: String { Fixtures.root.deletingLastPathComponent().appendingPathComponent("shared/corpus/vcard").path }
}

@Suite struct TextDecodingTests {
    @Test func utf8ThenShiftJISThenLatin1() {
        #expect(TextDecoding.decode(Array("日本".utf8)) == "日本")
        #expect(TextDecoding.decode([0x93, 0xFA, 0x96, 0x7B]) == "日本")  // Shift_JIS
        #expect(TextDecoding.decode([0x4B, 0xF6, 0x6C, 0x6E]) == "Köln")  // Latin-1, not Shift_JIS
        #expect(TextDecoding.decode([0x53, 0x74, 0x72, 0x61, 0xDF, 0x65]) == "Straße")  // 0xDF alone is not katakana text
        #expect(TextDecoding.rawOutput([0x01, 0xFF, 0x80]) == [0x01, 0xFF, 0x80])
    }
}
