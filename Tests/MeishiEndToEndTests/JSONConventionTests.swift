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

    /// Every value under a time's name in `json`, outside a signed payload, is an ISO 8601
    /// string: the keys (as paths) holding anything else.
    static func nonISOTimes(_ json: Any, path: String = "") -> [String] {
        let timeKeys: Set<String> = ["at", "received", "cardTimestamp", "firstSeen", "lastSeen", "created", "expires", "timestamp", "time"]
        if let object = json as? [String: Any] {
            return object.flatMap { key, value -> [String] in
                if key == "payload" { return [] }
                if timeKeys.contains(key), !(value is NSNull), !isISOTime(value) { return [path + "." + key + "=\(value)"] }
                return nonISOTimes(value, path: path + "." + key)
            }
        }
        if let array = json as? [Any] { return array.enumerated().flatMap { nonISOTimes($1, path: path + "[\($0)]") } }
        return []
    }

    /// `contacts changes --json` and the meetings of `contacts show --json` gave Unix integers
    /// (a tester's finding): every JSON output that holds a time gives ISO 8601.
    @Test func everyJSONTimeIsISO() throws {
        let mei = try CLI.withCard()
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        try #require(try mei("contacts", "add", try mei.file("ken.json", try ken.export())).status == 0)
        try #require(try ken("card", "set", "title", "Lead").status == 0)
        Thread.sleep(forTimeInterval: 1.1)  // a newer card needs a later signed second
        try #require(try mei("contacts", "add", try mei.file("ken2.json", try ken.export())).status == 0)
        for command in [["contacts", "show", "1", "--json"], ["contacts", "changes", "--json"], ["contacts", "list", "--json"],
                        ["contacts", "export", "--format", "json"], ["contacts", "export", "--format", "json", "--with-notes"],
                        ["inbox", "--json"], ["id", "--json"], ["card", "show", "--json"]] {
            let r = try mei.run(command)
            #expect(r.status == 0, "\(command): \(r.stderr)")
            let json = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8))
            #expect(Self.nonISOTimes(json).isEmpty, "\(command): \(Self.nonISOTimes(json))")
        }
        let shown = try mei("contacts", "show", "1", "--json").json
        #expect((shown["meetings"] as? [[String: Any]])?.first.map { Self.isISOTime($0["at"]) } == true, "\(shown)")
        #expect((try mei("contacts", "changes", "--json").json["changes"] as? [Any])?.count == 1)
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
