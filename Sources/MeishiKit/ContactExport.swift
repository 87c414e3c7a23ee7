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
        var entry = VCardEntry(uid: c.exportUID, fields: fields, did: did, trust: c.trust.rawValue, revision: c.cardTimestamp,
                               extras: VCardExtras(json: c.vcard), unsigned: c.trust > .unsigned ? c.unsignedFields ?? [:] : [:])
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
        /// Files meishi wrote that were changed since (by khard, an editor, a sync), or that it
        /// did not write, left as they are: their names, sorted.
        public var kept: [String] = []
        public var dropped: [Dropped] = []
    }

    /// The file in a vdir in which meishi records what it wrote there: each file's name and the
    /// SHA-256 of its bytes. A dot file, so khard and vdirsyncer (which read `*.vcf`) skip it.
    public static let stateFileName = ".meishi-export.json"

    struct DirectoryState: Codable {
        static let format = "meishi-vdir-state-v1"
        var format = Self.format
        /// File name -> hex SHA-256 of the bytes meishi wrote.
        var files: [String: String] = [:]
    }

    /// Writes `contacts` into a vdir (the vdirsyncer storage format khard and others read): one
    /// file per contact named after its `UID` (`did-key-z6Mk….vcf`, or the UID it was imported
    /// with), so the same contact
    /// always lands in the same file; a file is rewritten only when its text changed, each
    /// atomically, mode 0600. meishi records what it wrote in `stateFileName`, and touches only
    /// files it wrote and that still hold what it wrote: a file changed since (a note added in
    /// khard) or one it did not write is kept and listed in `kept`, unless `overwriting`. With
    /// `pruning` (every contact is being written), files meishi wrote whose contact is not
    /// among `contacts` are removed, on the same terms; other programs' files are always left.
    public static func writeDirectory(_ contacts: [Contact], to dir: String, version: VCardVersion, pruning: Bool,
                                      overwriting: Bool = false, notes: [Int64: PrivateNotes] = [:], home: Home) throws(MeishiError) -> DirectoryResult {
        if !SecureFile.exists(dir), mkdir(dir, 0o700) != 0 { throw .cannotWrite(path: dir, reason: String(cString: strerror(errno))) }
        guard SecureFile.isDirectory(dir) else { throw .cannotWrite(path: dir, reason: "it is not a directory") }
        let statePath = dir + "/" + stateFileName
        var state = DirectoryState()
        if SecureFile.exists(statePath) {
            let bytes = try SecureFile.read(statePath, limit: maximumFileBytes)
            guard let s = try? JSONDecoder().decode(DirectoryState.self, from: Data(bytes)), s.format == DirectoryState.format else {
                throw .cannotRead(path: statePath, reason: "not a meishi export record (\(DirectoryState.format))", missing: false)
            }
            state = s
        }
        func digest(_ bytes: [UInt8]) -> String { Hex.encode(SHA256.hash(bytes)) }
        var result = DirectoryResult()
        var written = Set<String>()
        defer {
            // Recorded even when a write failed half-way, so that what was written is known.
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            if let data = try? encoder.encode(state) { try? SecureFile.write(Array(data) + [0x0A], to: statePath) }
        }
        for c in contacts {
            var omitted: [VCardOmission] = []
            let e = entry(for: c, notes: c.id.flatMap { notes[$0] })
            let bytes = Array(VCard.write(e, version: version, dropped: &omitted).utf8)
            if !omitted.isEmpty { result.dropped.append(Dropped(contact: c, omissions: omitted)) }
            // Imported UIDs may spell the same file name (`a/b`, `a:b`): the later contact's file
            // takes its id too.
            var name = fileName(uid: e.uid)
            if written.contains(name) { name = fileName(uid: e.uid + "-\(c.id ?? 0)") }
            written.insert(name)
            let path = dir + "/" + name
            let old = try? SecureFile.read(path, limit: maximumFileBytes)
            if old == bytes {
                state.files[name] = digest(bytes)
                result.unchanged += 1
                continue
            }
            if let old, !overwriting, state.files[name] != digest(old) {
                result.kept.append(name)
                continue
            }
            try SecureFile.writeOutput(bytes, to: path, mode: 0o600, home: home)
            state.files[name] = digest(bytes)
            if old == nil { result.created += 1 } else { result.updated += 1 }
        }
        if pruning {
            for (name, recorded) in state.files.sorted(by: { $0.key < $1.key }) where !written.contains(name) {
                let path = dir + "/" + name
                guard let bytes = try? SecureFile.read(path, limit: maximumFileBytes) else {
                    if !SecureFile.exists(path) { state.files[name] = nil }
                    continue
                }
                if !overwriting, digest(bytes) != recorded {
                    result.kept.append(name)
                    continue
                }
                if unlink(path) == 0 {
                    state.files[name] = nil
                    result.removed += 1
                }
            }
        }
        result.kept.sort()
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
}
