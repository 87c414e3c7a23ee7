import Foundation
import Testing

/// One JSON convention (issue 27): times are ISO 8601 strings everywhere (`exchange --json`
/// printed epoch integers for the contact), and every error carries `error`, `hint` and `status`
/// (`scan --json` gave only the message).
@Suite struct JSONConventionTests {
    static func isISOTime(_ value: Any?) -> Bool {
        guard let s = value as? String else { return false }
        return s.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"#, options: .regularExpression) != nil
    }

    @Test func contactAndCardTimesAreISO() throws {
        let mei = try CLI.withCard()
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let card = try mei.file("ken.json", try ken.export())
        let added = try mei("contacts", "add", card, "--json")
        let contact = try #require(added.json["contact"] as? [String: Any], "\(added.stdout)")
        for key in ["firstSeen", "lastSeen", "cardTimestamp"] { #expect(Self.isISOTime(contact[key]), "\(key): \(contact[key] ?? "nil")") }
        let shown = try mei("contacts", "show", "Ken", "--json").json
        #expect(Self.isISOTime(shown["lastSeen"] ?? (shown["contact"] as? [String: Any])?["lastSeen"]), "\(shown)")
        let verified = try mei("verify", card, "--json").json
        #expect(Self.isISOTime(verified["timestamp"]), "\(verified)")
        // The signed payload itself is the wire format and keeps its integer (PROTOCOL §2).
        #expect((verified["payload"] as? [String: Any])?["timestamp"] is NSNumber)
    }

    @Test func scanErrorsCarryHintAndStatus() throws {
        let mei = try CLI.withCard()
        let empty = try mei.file("empty.png", Data())
        let notImage = try mei.file("notes.png", Data("just text, not a picture".utf8))
        let r = try mei("scan", "--json", empty, notImage)
        #expect(r.status == 65, "\(r.stderr)")
        let files = try #require(r.json["files"] as? [[String: Any]], "\(r.stdout)")
        #expect(files.count == 2)
        for entry in files {
            #expect(entry["error"] is String && entry["status"] as? Int == 65 && entry.keys.contains("hint"), "\(entry)")
        }
        #expect(files[1]["hint"] is String, "\(files[1])")
    }
}
