import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct Contacts: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Store, list, show and delete contacts; import, export and share them.",
        discussion: """
            A contact is keyed by its DID. Trust is 'met' (exchanged in person with a confirmed code), \
            'signed' (valid signature, not met) or 'unsigned' (imported). A REF is a contact id, a DID \
            or unique DID prefix, or a unique name match.
            """,
        subcommands: [ContactsAdd.self, ContactsList.self, ContactsShow.self, ContactsDelete.self,
                      ContactsImport.self, ContactsExport.self, ContactsShare.self])
}

/// Prints a stored contact as `contacts show` and `contacts add` do.
func printContact(_ c: Contact) {
    print("\(Output.safe(c.name ?? "(no name)"))  [#\(c.id ?? 0), \(c.trust.rawValue)]")
    print(Output.fieldLines(Output.orderedFields(c.fields)), terminator: "")
    print("  did          \(c.did)")
    if let k = c.signPubKey { print("  fingerprint  \(PublicIdentity.fingerprint(of: Array(k)))") }
    print("  level        \(c.level.rawValue)")
    print("  signed       \(Output.date(c.cardTimestamp))")
    print("  first seen   \(Output.date(c.firstSeen)) via \(c.source)")
    print("  last seen    \(Output.date(c.lastSeen))")
    for (name, values) in Output.orderedFields(c.unsignedFields ?? [:]) {
        for v in values { print("  \(name.padding(toLength: 11, withPad: " ", startingAt: 0))  \(Output.safe(v))  (unsigned: from a vCard, not signed)") }
    }
    let kept = VCardExtras(json: c.vcard).properties.count
    if kept > 0 { print("  vcard        \(kept) other propert\(kept == 1 ? "y" : "ies") kept for 'contacts export'") }
    if !c.conflictIDs.isEmpty {
        print("  warning      same name or email as contact \(c.conflictIDs.map { "#\($0)" }.joined(separator: ", ")): possible impersonation")
    }
}
