import Foundation
import MeishiCard
import MeishiCrypto
import MeishiStore

/// Turning stored contacts into vCards.
public enum ContactExport {
    /// The vCard of a stored contact: its fields, then what its earlier cards said that the
    /// current one does not (newest first), then any unsigned additions; its DID as `UID`
    /// and `X-MEISHI-DID` (a `urn:uuid:` for a contact without one), its trust, and whatever
    /// an imported vCard held beyond meishi's fields; with `notes`, my own note as a NOTE and my
    /// tags as CATEGORIES (`--with-notes` only: never otherwise).
    public static func entry(for c: Contact, notes: PrivateNotes? = nil) -> VCardEntry {
        var fields = c.fields
        for (name, values) in c.earlierFields ?? [:] {
            for v in values where !(fields[name] ?? []).contains(v) { fields[name, default: []].append(v) }
        }
        for (name, values) in c.unsignedFields ?? [:] {
            for v in values where !(fields[name] ?? []).contains(v) { fields[name, default: []].append(v) }
        }
        let claimed = c.did.hasPrefix("unsigned:") ? String(c.did.dropFirst(9)) : c.did
        let did = DIDKey.ed25519PublicKey(from: claimed) != nil ? claimed : nil
        var entry = VCardEntry(uid: c.trust > .unsigned && did != nil ? did! : uuidURN(c.did), fields: fields, did: did,
                               trust: c.trust.rawValue, revision: c.cardTimestamp, extras: VCardExtras(json: c.vcard))
        entry.ownNote = notes?.note
        entry.categories = notes?.tags ?? []
        return entry
    }

    /// Kept properties of one contact left out of an export (see `VCardOmission`).
    public struct Dropped: Equatable, Sendable {
        public var contact: Contact
        public var omissions: [VCardOmission]
    }

    /// All of `contacts` as one vCard file, and what had to be left out.
    /// `notes` (by contact id) only for `--with-notes`.
    public static func vcards(_ contacts: [Contact], version: VCardVersion,
                              notes: [Int64: PrivateNotes] = [:]) -> (text: String, dropped: [Dropped]) {
        var text = ""
        var dropped: [Dropped] = []
        for c in contacts {
            var omitted: [VCardOmission] = []
            text += VCard.write(entry(for: c, notes: c.id.flatMap { notes[$0] }), version: version, dropped: &omitted)
            if !omitted.isEmpty { dropped.append(Dropped(contact: c, omissions: omitted)) }
        }
        return (text, dropped)
    }

    /// What `writeDirectory` did.
    public struct DirectoryResult: Equatable, Sendable {
        public var created = 0
        public var updated = 0
        public var unchanged = 0
        /// Files of contacts no longer exported (deleted since, or not named this time).
        public var removed = 0
        public var dropped: [Dropped] = []
    }

    /// Writes `contacts` into a vdir (the vdirsyncer storage format khard and others read): one
    /// file per contact named after its `UID` (`did-key-z6Mk….vcf`), so the same contact
    /// always lands in the same file; a file is rewritten only when its text changed, each
    /// atomically, mode 0600. With `pruning` (every contact is being written), files meishi
    /// wrote before (they hold `X-MEISHI-TRUST`) whose contact is not among `contacts` are
    /// removed; other programs' files are always left alone.
    public static func writeDirectory(_ contacts: [Contact], to dir: String, version: VCardVersion, pruning: Bool,
                                      notes: [Int64: PrivateNotes] = [:], home: Home) throws(MeishiError) -> DirectoryResult {
        if !SecureFile.exists(dir), mkdir(dir, 0o700) != 0 { throw .cannotWrite(path: dir, reason: String(cString: strerror(errno))) }
        guard SecureFile.isDirectory(dir) else { throw .cannotWrite(path: dir, reason: "it is not a directory") }
        var result = DirectoryResult()
        var written = Set<String>()
        for c in contacts {
            var omitted: [VCardOmission] = []
            let e = entry(for: c, notes: c.id.flatMap { notes[$0] })
            let bytes = Array(VCard.write(e, version: version, dropped: &omitted).utf8)
            if !omitted.isEmpty { result.dropped.append(Dropped(contact: c, omissions: omitted)) }
            let name = fileName(uid: e.uid)
            written.insert(name)
            let path = dir + "/" + name
            let old = try? SecureFile.read(path, limit: maximumFileBytes)
            if old == bytes { result.unchanged += 1; continue }
            try SecureFile.writeOutput(bytes, to: path, mode: 0o600, home: home)
            if old == nil { result.created += 1 } else { result.updated += 1 }
        }
        guard pruning else { return result }
        let entries: [String]
        do { entries = try FileManager.default.contentsOfDirectory(atPath: dir) } catch {
            throw .cannotRead(path: dir, reason: "cannot list it", missing: false)
        }
        for name in entries.sorted() where name.hasSuffix(".vcf") && !written.contains(name) {
            let path = dir + "/" + name
            guard let bytes = try? SecureFile.read(path, limit: maximumFileBytes), bytes.count <= maximumFileBytes,
                  String(decoding: bytes, as: UTF8.self).contains("\r\nX-MEISHI-TRUST:") else { continue }
            if unlink(path) == 0 { result.removed += 1 }
        }
        return result
    }

    /// Largest vdir file read back to compare (a contact's vCard is far smaller).
    static let maximumFileBytes = 4 << 20

    /// A vdir file name for `uid`: letters, digits, `-`, `_` and `.` kept, anything else `-`.
    public static func fileName(uid: String) -> String {
        String(uid.unicodeScalars.map { s -> Character in
            s.isASCII && (CharacterSet.alphanumerics.contains(s) || s == "_" || s == ".") ? Character(s) : "-"
        }) + ".vcf"
    }

    /// A stable `urn:uuid:` (version 4 layout) derived from a contact's key.
    static func uuidURN(_ key: String) -> String {
        var b = Array(SHA256.hash(Array(key.utf8)).prefix(16))
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        let h = Array(Hex.encode(b))
        return "urn:uuid:" + [h[0..<8], h[8..<12], h[12..<16], h[16..<20], h[20..<32]].map { String($0) }.joined(separator: "-")
    }
}
