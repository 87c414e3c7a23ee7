import Foundation
import Testing
import MeishiCard
import MeishiKit
import MeishiStore

/// `contacts export` writes the union of a contact's cards: the current card's values first,
/// then what earlier cards said that it does not, newest first (issue 21).
@Suite struct ContactExportHistoryTests {
    @Test func exportWritesTheCurrentValuesThenTheEarlierOnes() {
        var mei = Contact(did: "did:key:z6MkMei", fields: [.name: ["Mei Tanaka"], .email: ["mei@new.example"]], level: .public,
                          trust: .met, source: .exchange, seen: 200, cardTimestamp: 200)
        mei.earlierFields = [.email: ["mei@example.org", "mei@old.example"], .phone: ["+81 90 1234 5678"], .title: ["Engineer"]]
        let entry = ContactExport.entry(for: mei)
        #expect(entry.fields[.email] == ["mei@new.example", "mei@example.org", "mei@old.example"])
        #expect(entry.fields[.phone] == ["+81 90 1234 5678"])
        #expect(entry.fields[.title] == ["Engineer"])
        let text = VCard.write(entry, version: .v4)
        #expect(text.contains("mei@old.example") && text.contains("TITLE:Engineer"))
    }
}
