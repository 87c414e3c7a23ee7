import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsExport: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write contacts as vCards (or JSON) for phones and address books.",
        discussion: """
            Without REF, every contact. vCard 4.0 (RFC 6350) by default, 3.0 (RFC 2426) with \
            --vcard-version 3.0: CRLF line ends, lines folded at 75 octets, UID the contact's DID (or a \
            urn:uuid), X-MEISHI-DID and X-MEISHI-TRUST for meishi, and what an imported vCard held \
            beyond meishi's fields written back (a picture as base64 with ENCODING=b in 3.0, a data: URI \
            in 4.0; control characters are never written). A vCard carries no signature: to pass on a \
            verified card, use 'meishi contacts share'. Your own notes and tags on contacts are written \
            only with --with-notes (as NOTE and CATEGORIES marked X-MEISHI-OWN=true, which 'contacts \
            import' reads back as your note and tags; "note" and "tags" in JSON).

            With --vdir DIR, one file per contact in DIR (a vdir, as khard and vdirsyncer read it), \
            named after its UID: a file is rewritten only when the contact changed. Without REF, the \
            files of contacts no longer in the store are removed; with REF, only those contacts are \
            written. meishi records what it wrote in DIR/.meishi-export.json and never replaces or \
            removes a file changed since (a note added in khard) or one it did not write: it says \
            which it kept; --overwrite replaces and removes them anyway.

            Examples:
              meishi contacts export -o all.vcf
              meishi contacts export --vcard-version 3.0 ken -o ken.vcf
              meishi contacts export --vdir ~/.contacts/meishi
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case vcard, json
    }

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Contacts to export (id, DID or unique DID prefix, or unique name match); all when none.", valueName: "ref"),
              completion: .custom(ContactCompletion.refs))
    var refs: [String] = []

    @Option(help: "Output format.")
    var format: Format = .vcard

    @Option(name: .customLong("vcard-version"), help: ArgumentHelp("vCard version: 4.0 or 3.0.", valueName: "version"))
    var vcardVersion: String = VCardVersion.v4.rawValue

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE instead of standard output ('-' for standard output).", valueName: "file"), completion: .file())
    var output: String?

    @Option(help: ArgumentHelp("Write one vCard file per contact into DIR, kept in step with the store.", valueName: "dir"),
            completion: .directory)
    var vdir: String?

    @Flag(help: "With --vdir, replace (or remove) files changed since meishi wrote them.")
    var overwrite = false
    @Flag(name: .customLong("with-notes"), help: "Also write your own note and tags on each contact (vCard NOTE and CATEGORIES).")
    var withNotes = false

    @Option(name: .customLong("mode"), help: FileModeArgument.help)
    var fileMode: FileModeArgument?

    func validate() throws {
        guard VCardVersion(rawValue: vcardVersion) != nil else { throw ValidationError("--vcard-version must be 4.0 or 3.0") }
        if vdir != nil, output != nil { throw ValidationError("--vdir and --output cannot be used together") }
        if overwrite, vdir == nil { throw ValidationError("--overwrite is for --vdir") }
        if vdir != nil, format == .json { throw ValidationError("--vdir writes vCards: it cannot be used with --format json") }
    }

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        let store = try session.contacts.open(readOnly: true)
        var contacts: [Contact] = []
        do {
            if refs.isEmpty {
                contacts = try store.list(ContactQuery())
            } else {
                for ref in refs {
                    let c = try store.resolve(ref)
                    if !contacts.contains(where: { $0.id == c.id }) { contacts.append(c) }
                }
            }
        } catch { throw MeishiError.store(error) }
        // Your own words leave the home only when asked for.
        var notes: [Int64: PrivateNotes] = [:]
        if withNotes { do { notes = try store.allPrivateNotes() } catch { throw MeishiError.store(error) } }
        let version = VCardVersion(rawValue: vcardVersion)!
        if let vdir {
            let r = try ContactExport.writeDirectory(contacts, to: vdir, version: version, pruning: refs.isEmpty,
                                                     overwriting: overwrite, notes: notes, home: session.home)
            Self.noteDropped(r.dropped, ctx)
            if !r.kept.isEmpty { ctx.out.warn(MeishiFailure.vdirFilesKept(r.kept)) }
            ctx.out.note("wrote \(contacts.count) contact\(contacts.count == 1 ? "" : "s") (vCard \(vcardVersion)) to \(vdir): "
                         + "\(r.created) new, \(r.updated) updated, \(r.unchanged) unchanged, \(r.removed) removed"
                         + (r.kept.isEmpty ? "" : ", \(r.kept.count) kept"))
            return
        }
        let bytes: [UInt8]
        switch format {
        case .vcard:
            let (text, dropped) = ContactExport.vcards(contacts, version: version, notes: notes)
            Self.noteDropped(dropped, ctx)
            bytes = Array(text.utf8)
        case .json:
            let listed = contacts.map { c in withNotes ? CardRendering.json(c, earlier: nil, notes: notes[c.id ?? 0] ?? PrivateNotes()) : CardRendering.json(c) }
            bytes = Array((JSONText.pretty(.object(["contacts": .array(listed)])) + "\n").utf8)
        }
        try FileOutput.write(bytes, to: output, mode: fileMode, ctx: ctx, home: session.home, text: true)
        if let output, output != "-" {
            ctx.out.note("wrote \(contacts.count) contact\(contacts.count == 1 ? "" : "s") (\(format == .vcard ? "vCard \(vcardVersion)" : "JSON")) to \(output)")
        }
    }

    /// One note per contact whose kept properties could not be written.
    static func noteDropped(_ dropped: [ContactExport.Dropped], _ ctx: Context) {
        for d in dropped { ctx.out.note(Self.exportDropped(d.contact, d.omissions)) }
    }
}

/// `contacts export`'s notes.
extension ContactsExport {
    /// Kept properties of `contact` that a vCard cannot hold.
    static func exportDropped(_ contact: Contact, _ omissions: [VCardOmission]) -> String {
        let binary = omissions.filter { $0.reason == .binaryAsText }.map(\.property)
        let second = omissions.filter { $0.reason == .second }.map(\.property)
        var why: [String] = []
        if !binary.isEmpty { why.append("\(binary.joined(separator: ", ")) (binary data an earlier meishi imported as text)") }
        if !second.isEmpty { why.append("a second \(second.joined(separator: ", ")) (a vCard holds one; the store keeps both)") }
        let links = omissions.compactMap { if case .notAWebAddress(let v) = $0.reason { "\"\(v)\"" } else { nil } }
        if !links.isEmpty {
            why.append("the url \(links.joined(separator: ", ")) (not an http or https address, which a phone would open as a link; the store keeps it)")
        }
        return "#\(contact.id ?? 0) \(CardRendering.name(contact.name)): left out " + Console.safe(why.joined(separator: " and "))
    }
}
