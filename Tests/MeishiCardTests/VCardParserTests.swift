import Foundation
import Testing
@testable import MeishiCard
import MeishiText

/// The vCard parser against what real address books write, and against hostile input.
@Suite struct VCardParserTests {
    func read(_ text: String) -> (contacts: [(line: Int, contact: ImportedContact)], problems: [VCardProblem]) {
        VCard.read(Array(text.utf8))
    }

    @Test func version21QuotedPrintableSoftBreaksAndBareTypes() throws {
        let text = """
            BEGIN:VCARD\r
            VERSION:2.1\r
            N;CHARSET=UTF-8;ENCODING=QUOTED-PRINTABLE:=E7=94=B0=E4=B8=AD;=E8=8A=BD=E8=A1=A3\r
            TEL;CELL;PREF:+81 90 1234 5678\r
            TEL;WORK;VOICE:03-1111-2222\r
            NOTE;ENCODING=QUOTED-PRINTABLE:first line=0D=0A=\r
            second =\r
            line\r
            END:VCARD\r

            """
        let (contacts, problems) = read(text)
        #expect(problems.isEmpty)
        let c = try #require(contacts.first?.contact)
        #expect(c.format == .vcard(version: "2.1") && c.format.description == "vCard 2.1")
        #expect(c.name == "芽衣 田中")
        #expect(c.fields[.phone] == ["+81 90 1234 5678", "03-1111-2222"])
        #expect(c.fields[.note] == ["first line\nsecond line"])
        #expect(c.extras.decoration(.phone, "03-1111-2222")?.parameters == ";TYPE=WORK;TYPE=VOICE")
    }

    @Test func foldingWithSpaceOrTabAndEveryLineEnd() throws {
        for end in ["\r\n", "\n", "\r"] {
            let text = ["BEGIN:VCARD", "VERSION:3.0", "FN:Mei", " Tanaka", "NOTE:a", "\tb", "EMAIL:mei@example.org", "END:VCARD"]
                .joined(separator: end) + end
            let (contacts, problems) = read(text)
            #expect(problems.isEmpty, "\(end.debugDescription)")
            #expect(contacts.first?.contact.name == "MeiTanaka")
            #expect(contacts.first?.contact.fields[.note] == ["ab"])
        }
    }

    @Test func charsetsAndFilesThatAreNotUTF8() throws {
        // A Shift_JIS file without CHARSET, a Latin-1 file, and CHARSET on one property.
        var sjis = Array("BEGIN:VCARD\r\nVERSION:2.1\r\nFN:".utf8) + [0x93, 0x63, 0x92, 0x86] + Array("\r\nEND:VCARD\r\n".utf8)
        #expect(VCard.read(sjis).contacts.first?.contact.name == "田中")
        let latin1 = Array("BEGIN:VCARD\nVERSION:3.0\nFN:J".utf8) + [0xFC] + Array("rgen K".utf8) + [0xF6] + Array("ln\nEND:VCARD\n".utf8)
        #expect(VCard.read(latin1).contacts.first?.contact.name == "Jürgen Köln")
        sjis = Array("BEGIN:VCARD\nVERSION:2.1\nFN;CHARSET=SHIFT_JIS;ENCODING=QUOTED-PRINTABLE:=93=63=92=86\nN;CHARSET=ISO-8859-1:".utf8)
            + [0xD6] + Array("zt\nEND:VCARD\n".utf8)
        let c = try #require(VCard.read(sjis).contacts.first?.contact)
        #expect(c.name == "田中")
        #expect(c.extras.properties.contains("N:Özt"))
        let unknown = read("BEGIN:VCARD\nVERSION:2.1\nFN;CHARSET=X-KLINGON:Worf\nEND:VCARD\n")
        #expect(unknown.contacts.first?.contact.name == "Worf")
        #expect(unknown.problems.map(\.reason) == [.unknownCharset("X-KLINGON")])
    }

    @Test func bomUTF16LowercaseBlankLinesAndManyCards() throws {
        let body = "begin:vcard\n\nversion:3.0\nfn:One\n\nend:vcard\n\n\nBEGIN:VCARD\nVERSION:4.0\nFN:Two\nEND:VCARD\n"
        #expect(VCard.read([0xEF, 0xBB, 0xBF] + Array(body.utf8)).contacts.map(\.contact.name) == ["One", "Two"])
        var utf16: [UInt8] = [0xFF, 0xFE]
        for u in body.utf16 { utf16 += [UInt8(u & 0xFF), UInt8(u >> 8)] }
        #expect(VCard.read(utf16).contacts.map(\.contact.name) == ["One", "Two"])
        let many = String(repeating: "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:X\r\nEND:VCARD\r\n", count: 500)
        #expect(read(many).contacts.count == 500)
        #expect(read(many).contacts[499].line == 1997)
    }

    @Test func groupsTypesAndUnknownPropertiesAreKept() throws {
        let text = """
            BEGIN:VCARD
            VERSION:3.0
            FN:Mei Tanaka
            N:Tanaka;Mei;;;
            item1.EMAIL;type=INTERNET;type=pref:mei@example.org
            item1.X-ABLabel:_$!<Work>!$_
            EMAIL;TYPE=home:MEI@home.example
            TEL;TYPE="cell,voice":+81 90 1234 5678
            URL:https://example.org/mei
            URL;TYPE=blog:https://blog.example.org
            BDAY:1990-01-31
            X-SOCIALPROFILE;type=twitter:https://x.example/mei
            CATEGORIES:friends,work
            ORG:Example;Robotics
            PHOTO;ENCODING=b;TYPE=JPEG:/9j/4AAQSkZJRgABAQ
            END:VCARD
            """
        let (contacts, problems) = read(text)
        #expect(problems.isEmpty)
        let c = try #require(contacts.first?.contact)
        #expect(c.fields[.email] == ["mei@example.org", "MEI@home.example"])
        #expect(c.fields[.url] == ["https://example.org/mei", "https://blog.example.org"])
        #expect(c.fields[.org] == ["Example, Robotics"])
        #expect(c.extras.decoration(.email, "mei@example.org") == .init(group: "item1", parameters: ";TYPE=INTERNET;TYPE=pref"))
        #expect(c.extras.decoration(.phone, "+81 90 1234 5678")?.parameters == ";TYPE=\"cell,voice\"")
        #expect(c.extras.properties == ["N:Tanaka;Mei;;;", "item1.X-ABLabel:_$!<Work>!$_", "BDAY:1990-01-31",
                                        "X-SOCIALPROFILE;TYPE=twitter:https://x.example/mei", "CATEGORIES:friends,work",
                                        "ORG:Example;Robotics"])
        #expect(!c.extras.properties.contains { $0.hasPrefix("PHOTO") })
        let back = VCardExtras(json: c.extras.json)
        #expect(back == c.extras)
    }

    @Test func escapesAndControlCharactersInValues() throws {
        let (contacts, _) = read("BEGIN:VCARD\nVERSION:4.0\nFN:a\\,b\\;c\\\\d\\ne\nNOTE:\u{1B}[31mred\u{7}\nEND:VCARD\n")
        let c = try #require(contacts.first?.contact)
        #expect(c.name == "a,b;c\\d\ne")
        #expect(c.fields[.note] == ["\u{1B}[31mred\u{7}"])  // kept; every display sanitises it
        #expect(TerminalText.sanitized(c.fields[.note]![0]) == "\\u{1B}[31mred\\u{7}")
    }

    // MARK: Located problems; the rest of the file still imports

    @Test func unterminatedCardIsLocatedAndTheNextOneImports() {
        let (contacts, problems) = read("BEGIN:VCARD\nVERSION:3.0\nFN:Lost\nBEGIN:VCARD\nVERSION:3.0\nFN:Kept\nEND:VCARD\nBEGIN:VCARD\nFN:Tail\n")
        #expect(contacts.map(\.contact.name) == ["Kept"])
        #expect(problems == [VCardProblem(line: 1, reason: .unterminatedCard), VCardProblem(line: 8, reason: .unterminatedCard)])
    }

    @Test func emptyBinaryAndOtherFilesSayThereIsNoCard() {
        #expect(VCard.read([]).problems == [VCardProblem(line: 1, reason: .noCard)])
        var rng = SystemRandomNumberGenerator()
        let binary = (0..<100_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let r = VCard.read(binary)
        #expect(r.contacts.isEmpty)
        #expect(r.problems.contains(VCardProblem(line: 1, reason: .noCard)))
        #expect(VCard.read(Array("hello\nworld\n".utf8)).problems == [VCardProblem(line: 1, reason: .noCard)])
    }

    @Test func nulBytesSkipOnlyTheirCard() {
        let bytes = Array("BEGIN:VCARD\nFN:Bad\nNOTE:a".utf8) + [0] + Array("b\nEND:VCARD\nBEGIN:VCARD\nFN:Good\nEND:VCARD\n".utf8)
        let r = VCard.read(bytes)
        #expect(r.contacts.map(\.contact.name) == ["Good"])
        #expect(r.problems == [VCardProblem(line: 3, reason: .binaryData)])
    }

    @Test func hugeLinesAreSkippedInLinearTime() {
        let huge = String(repeating: "x", count: 20 << 20)
        let folded = (0..<200_000).map { _ in " " + String(repeating: "y", count: 70) }.joined(separator: "\n")
        let text = "BEGIN:VCARD\nFN:Big\nNOTE:\(huge)\nX-FOLDED:\(folded)\nEMAIL:big@example.org\nEND:VCARD\n"
        let r = VCard.read(Array(text.utf8))
        #expect(r.contacts.first?.contact.fields[.email] == ["big@example.org"])
        #expect(r.contacts.first?.contact.fields[.note] == nil)
        #expect(r.problems == [VCardProblem(line: 3, reason: .lineTooLong(limit: VCardParser.maximumLineBytes)),
                               VCardProblem(line: 4, reason: .lineTooLong(limit: VCardParser.maximumLineBytes))])
        // A whole file on one line without any line end.
        #expect(VCard.read(Array(huge.utf8)).problems == [VCardProblem(line: 1, reason: .noCard)])
    }

    @Test func photosAreSkippedAndSizeLimited() throws {
        let big = (0..<80_000).map { _ in " " + String(repeating: "A", count: 72) }.joined(separator: "\r\n")
        let text = "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Pic\r\nPHOTO;ENCODING=b;TYPE=JPEG:\r\n\(big)\r\nEMAIL:pic@example.org\r\nEND:VCARD\r\n"
        let r = read(text)
        let c = try #require(r.contacts.first?.contact)
        #expect(c.fields[.email] == ["pic@example.org"])
        #expect(c.extras.properties.isEmpty)
        #expect(r.problems == [VCardProblem(line: 4, reason: .binaryTooLarge(property: "PHOTO", limit: VCardParser.maximumBinaryBytes))])
    }

    @Test func invalidQuotedPrintableIsReadLiterallyAndReported() throws {
        let r = read("BEGIN:VCARD\nVERSION:2.1\nFN;ENCODING=QUOTED-PRINTABLE:100=ZZ=4\nEND:VCARD\n")
        #expect(r.contacts.first?.contact.name == "100=ZZ=4")
        #expect(r.problems == [VCardProblem(line: 3, reason: .invalidQuotedPrintable)])
        // A soft break on the last line of the file ends cleanly.
        #expect(read("BEGIN:VCARD\nFN;ENCODING=QUOTED-PRINTABLE:a=").problems == [VCardProblem(line: 1, reason: .unterminatedCard)])
    }

    @Test func repeatedPropertiesAreBounded() throws {
        let many = (0..<5000).map { "EMAIL:u\($0)@example.org" }.joined(separator: "\n")
        let r = read("BEGIN:VCARD\nFN:Spam\n\(many)\nEND:VCARD\nBEGIN:VCARD\nFN:After\nEND:VCARD\n")
        #expect(r.contacts.map(\.contact.name) == ["After"])
        #expect(r.problems.map(\.reason) == [.tooManyProperties(limit: VCardParser.maximumProperties)])
        // Within the limit, a field keeps at most 64 values and the rest stay as properties.
        let some = (0..<200).map { "EMAIL:u\($0)@example.org" }.joined(separator: "\n")
        let c = try #require(read("BEGIN:VCARD\nFN:Many\n\(some)\nEND:VCARD\n").contacts.first?.contact)
        #expect(c.fields[.email]?.count == ImportedContact.maximumValuesPerField)
        #expect(c.extras.properties.count == 200 - ImportedContact.maximumValuesPerField)
    }

    @Test func nestedAgentCardsAreSkipped() throws {
        let r = read("BEGIN:VCARD\nVERSION:2.1\nFN:Boss\nAGENT:\nBEGIN:VCARD\nFN:Assistant\nEND:VCARD\nEMAIL:boss@example.org\nEND:VCARD\n")
        #expect(r.problems.isEmpty)
        #expect(r.contacts.map(\.contact.name) == ["Boss"])
        #expect(r.contacts.first?.contact.fields[.email] == ["boss@example.org"])
    }

    /// Android writes cards nested in a card without AGENT (its v21_nest.vcf): each nested card is
    /// a card of its own and the outer one continues after them, in document order (as Android's
    /// VCardParser_V21 reads it); nesting deeper than the limit ends the card it is in.
    @Test func androidNestedCardsAreCardsOfTheirOwn() {
        let (contacts, problems) = read("BEGIN:VCARD\nVERSION:2.1\nN:parent\nBEGIN:VCARD\nVERSION:2.1\nN:nest1\nEND:VCARD\n"
                                        + "BEGIN:VCARD\nVERSION:2.1\nN:nest2\nEND:VCARD\nTEL:1\nEND:VCARD\n")
        #expect(problems.isEmpty, "\(problems)")
        #expect(contacts.map(\.contact.name) == ["parent", "nest1", "nest2"])
        #expect(contacts.first?.contact.fields[.phone] == ["1"])
        let depth = VCardParser.maximumNesting + 2
        let deep = String(repeating: "BEGIN:VCARD\nFN:x\n", count: depth) + String(repeating: "END:VCARD\n", count: depth)
        let r = read(deep)
        #expect(r.contacts.count <= depth && !r.contacts.isEmpty)
        #expect(r.problems.allSatisfy { $0.reason == .unterminatedCard } && !r.problems.isEmpty)
    }

    @Test func everyBytePrefixParsesWithoutTrapping() {
        let text = Array("BEGIN:VCARD\r\nVERSION:2.1\r\nN;ENCODING=QUOTED-PRINTABLE;CHARSET=UTF-8:=E7=94=B0;=\r\n=E4=B8=AD\r\nitem1.TEL;CELL:1\r\n 2\r\nEND:VCARD\r\n".utf8)
        for n in 0...text.count { _ = VCard.read(Array(text.prefix(n))) }
    }

    // MARK: Writing

    /// Every line of `text` is a valid content line: CRLF ends, at most 75 octets, UTF-8 whole at
    /// each fold, and no control character other than the line breaks.
    func expectValidLines(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let bytes = Array(text.utf8)
        #expect(!bytes.contains { ($0 < 0x20 && $0 != 0x0D && $0 != 0x0A && $0 != 0x09) || $0 == 0x7F }, sourceLocation: sourceLocation)
        #expect(!text.unicodeScalars.contains { (0x80...0x9F).contains($0.value) }, sourceLocation: sourceLocation)
        #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains { $0 == "\n" || $0 == "\r" }, sourceLocation: sourceLocation)
        for line in text.components(separatedBy: "\r\n") {
            #expect(line.utf8.count <= 75, sourceLocation: sourceLocation)
        }
    }

    /// Issue 21: a quoted-printable LABEL was written back with raw line breaks, and a base64
    /// X-MS-CARDPICTURE as raw binary (NUL, ESC): khard and vobject refused the export.
    @Test func quotedPrintableAndBinaryPropertiesAreWrittenBackValid() throws {
        let picture: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x1B, 0x4A, 0x46, 0x49, 0x46, 0x00] + (0..<200).map { UInt8($0) }
        let text = """
            BEGIN:VCARD\r
            VERSION:2.1\r
            FN:Antoni Outlook\r
            LABEL;WORK;ENCODING=QUOTED-PRINTABLE:Rue 1=0D=0A1000 Bruxelles=0D=0ABelgium\r
            X-MS-CARDPICTURE;TYPE=JPEG;ENCODING=BASE64:\r
             \(Data(picture).base64EncodedString())\r
            \r
            X-ODD;ENCODING=QUOTED-PRINTABLE:bell=07 and tab=09end\r
            END:VCARD\r

            """
        let imported = try #require(read(text).contacts.first?.contact)
        let entry = VCardEntry(uid: "urn:uuid:00000000-0000-4000-8000-000000000000", fields: imported.fields, did: nil, trust: "unsigned",
                               revision: 1_795_000_000, extras: imported.extras)
        for version in VCardVersion.allCases {
            var dropped: [VCardOmission] = []
            let out = VCard.write(entry, version: version, dropped: &dropped)
            #expect(dropped.isEmpty)
            expectValidLines(out)
            let unfolded = out.replacingOccurrences(of: "\r\n ", with: "")
            #expect(unfolded.contains("LABEL;TYPE=WORK:Rue 1\\n1000 Bruxelles\\nBelgium\r\n"))
            #expect(unfolded.contains("X-ODD:bell and tab\tend\r\n"))
            switch version {
            case .v3: #expect(unfolded.contains("X-MS-CARDPICTURE;TYPE=JPEG;ENCODING=b:" + Data(picture).base64EncodedString() + "\r\n"))
            case .v4: #expect(unfolded.contains("X-MS-CARDPICTURE;VALUE=uri:data:image/jpeg;base64," + Data(picture).base64EncodedString() + "\r\n"))
            }
            // Read back: the label's lines and the picture's bytes are whole.
            let parsed = try #require(VCardParser.parse(Array(out.utf8)).cards.first)
            #expect(parsed.properties.first { $0.name == "LABEL" }?.text == "Rue 1\n1000 Bruxelles\nBelgium")
            let pic = try #require(parsed.properties.first { $0.name == "X-MS-CARDPICTURE" })
            if version == .v3 {
                #expect(pic.isBinary && Data(base64Encoded: pic.value).map(Array.init) == picture)
            } else {
                #expect(pic.value == "data:image/jpeg;base64," + Data(picture).base64EncodedString())
            }
            // Written again from what it read, nothing changes.
            let again = try #require(VCard.read(Array(out.utf8)).contacts.first?.contact)
            #expect(VCard.write(VCardEntry(uid: entry.uid, fields: again.fields, did: nil, trust: "unsigned", revision: 1_795_000_000,
                                           extras: again.extras), version: version) == out)
        }
    }

    /// Binary data an earlier version kept as text (with NUL and ESC in it) cannot be written as
    /// a vCard value, nor a second N (two cards merged), nor PROFILE: they are left out and
    /// named, the rest of the card is written.
    @Test func whatNoVCardCanHoldIsLeftOutAndNamed() {
        var extras = VCardExtras()
        extras.properties = ["N:Tanaka;Mei;;;", "X-MS-CARDPICTURE;TYPE=JPEG:\u{FF}\u{D8}\u{0}\u{1B}JFIF", "X-PHONETIC-FIRST-NAME:Mei", "LABEL:a\r\nb",
                             "PROFILE:VCard", "N:Tanaka;Mei;;Dr.;"]
        let entry = VCardEntry(uid: "urn:uuid:00000000-0000-4000-8000-000000000000", fields: [.name: ["Mei"]], did: nil, trust: "unsigned",
                               revision: 0, extras: extras)
        for version in VCardVersion.allCases {
            var dropped: [VCardOmission] = []
            let out = VCard.write(entry, version: version, dropped: &dropped)
            #expect(dropped == [VCardOmission(property: "X-MS-CARDPICTURE", reason: .binaryAsText), VCardOmission(property: "N", reason: .second)])
            expectValidLines(out)
            #expect(out.contains("X-PHONETIC-FIRST-NAME:Mei\r\n") && out.contains("LABEL:a\\nb\r\n"))
            #expect(out.contains("\r\nN:Tanaka;Mei;;;\r\n") && !out.contains("Dr.") && !out.contains("PROFILE"))
        }
    }

    @Test func textValuesLoseControlCharactersButKeepLineBreaks() {
        let entry = VCardEntry(uid: "urn:uuid:00000000-0000-4000-8000-000000000000",
                               fields: [.name: ["Mei\u{1B}[31m Tanaka"], .note: ["one\r\ntwo\rthree\u{7}\u{85}"]], did: nil, trust: "unsigned", revision: 0)
        for version in VCardVersion.allCases {
            let out = VCard.write(entry, version: version)
            expectValidLines(out)
            #expect(out.contains("FN:Mei[31m Tanaka\r\n") && out.contains("NOTE:one\\ntwo\\nthree\r\n"))
        }
    }

    @Test func writerEscapesFoldsAndRoundTrips() throws {
        let note = String(repeating: "長い", count: 20) + "\nsecond; line, with \\ backslash" + String(repeating: "👩‍👩‍👧", count: 3)
        let entry = VCardEntry(uid: "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp",
                               fields: [.name: ["田中 芽衣"], .org: ["Example; Robotics, Inc"], .email: ["a@example.org"],
                                        .phone: ["+81 90 1234 5678"], .url: ["https://example.org/a,b"],
                                        .address: ["1-2-3 \"Shibuya\"\nTokyo"], .note: [note], try FieldName("x-handle"): ["@mei"]],
                               did: "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp", trust: "met", revision: 1_795_000_000)
        for version in VCardVersion.allCases {
            let text = VCard.write(entry, version: version)
            #expect(text.hasSuffix("END:VCARD\r\n"))
            #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
            for line in Array(text.utf8).split(separator: 0x0A) {
                #expect(line.count <= 76)  // 75 octets and the CR
                #expect(String(validating: line, as: UTF8.self) != nil, "a fold split a UTF-8 sequence")
            }
            #expect(text.contains("NOTE:" + "長い"))
            #expect(text.contains("ORG:Example\\; Robotics\\, Inc"))
            let c = try #require(VCard.parse(text))
            #expect(c.fields[.name] == ["田中 芽衣"])
            #expect(c.fields[.org] == ["Example; Robotics, Inc"])
            #expect(c.fields[.note] == [note])
            #expect(c.fields[.url] == ["https://example.org/a,b"])
            #expect(c.fields[.address] == ["1-2-3 \"Shibuya\"\nTokyo"])
            #expect(c.fields[try FieldName("x-handle")] == ["@mei"])
            #expect(c.did == entry.did)
            #expect(c.revision == 1_795_000_000)
        }
    }
}
