import Foundation
import Testing

/// Issue 26, "one person, two cards": a Solidarity card whose `sameAs` names a meishi DID and a
/// meishi card of that DID naming the Solidarity DID back (`card qr --solidarity` adds it) are
/// one contact, in either order, without a look-alike warning; a claim one way stays a claim.
@Suite struct SameAsTests {
    /// Mei's meishi card from before and after `card qr --solidarity`, and the Solidarity QR.
    static func mei() throws -> (cli: CLI, before: String, png: String, after: String, did: String, p256: String) {
        let mei = try QRCommandTests.typicalCLI()
        let before = try mei.file("mei-before.json", try mei.export())
        let png = (mei.home as NSString).deletingLastPathComponent + "/mei-solidarity.png"
        let made = try mei("card", "qr", "--solidarity", "-o", png)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stderr.contains("your meishi card now names this Solidarity identity (x-same-as did:key:zDn"), "\(made.stderr)")
        // Made again: the card names it already, nothing more is said.
        #expect(!(try mei("card", "qr", "--solidarity", "-o", png)).stderr.contains("now names"))
        let shown = try mei("card", "show").stdout
        let p256 = try #require(shown.split(whereSeparator: { $0 == " " || $0 == "\n" }).first { $0.hasPrefix("did:key:zDn") }).description
        #expect(p256.hasPrefix("did:key:zDn"), "\(shown)")
        let after = try mei.file("mei-after.json", try mei.export())
        let did = try #require(try mei("id", "--json").json["did"] as? String)
        return (mei, before, png, after, did, p256)
    }

    static func contacts(_ cli: CLI) throws -> [[String: Any]] {
        try #require(try cli("contacts", "list", "--json").json["contacts"] as? [[String: Any]])
    }

    @Test func aLinkProvenBothWaysIsOneContactInEitherOrder() throws {
        let m = try Self.mei()
        // The Solidarity card first, then the meishi card naming it back.
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        #expect(try ken("scan", m.png).status == 0)
        let added = try ken("contacts", "add", m.after)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(!added.stderr.contains("possible impersonation"), "\(added.stderr)")
        var list = try Self.contacts(ken)
        #expect(list.count == 1 && list.first?["did"] as? String == m.did, "\(list)")
        let shown = try ken("contacts", "show", "Mei", "--json").json
        // The Solidarity contact was folded in: its meeting (the scan) is the meishi contact's now.
        #expect((shown["meetings"] as? [[String: Any]])?.map { $0["how"] as? String } == ["qr", "file"], "\(shown)")
        #expect((shown["fields"] as? [String: Any])?["x-same-as"] as? [String] == [m.p256], "\(shown)")
        #expect(shown["possibleImpersonationOf"] as? [Int] == [] && shown["possiblyImpersonatedBy"] as? [Int] == [])

        // The meishi card first, then the Solidarity card: kept with the meishi contact.
        let ann = try CLI.withCard(name: "Ann Lee", email: "ann@example.org")
        #expect(try ann("contacts", "add", m.after).status == 0)
        let scanned = try ann("scan", m.png)
        #expect(scanned.status == 0 && !scanned.stderr.contains("possible impersonation"), "\(scanned.stderr)")
        #expect(scanned.stdout.contains("kept with Mei Tanaka (#1), \(m.did): the same person, each card naming the other"), "\(scanned.stdout)")
        list = try Self.contacts(ann)
        #expect(list.count == 1 && list.first?["did"] as? String == m.did, "\(list)")
    }

    /// Mei's meishi card from before she made a Solidarity card does not name it: the
    /// Solidarity card's claim is one-sided, two contacts, flagged as today.
    @Test func aClaimOneWayStaysAClaim() throws {
        let m = try Self.mei()
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        #expect(try ken("contacts", "add", m.before).status == 0)
        let scanned = try ken("scan", m.png)
        #expect(scanned.status == 0)
        #expect(scanned.stderr.contains("possible impersonation"), "\(scanned.stderr)")
        #expect(try Self.contacts(ken).count == 2)
    }
}
