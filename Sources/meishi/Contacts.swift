import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct Contacts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "contacts",
        abstract: "Store, list, show and delete contacts; import, export and share them.",
        discussion: """
            A contact is keyed by its DID. Trust is 'met' (exchanged in person with a confirmed code), \
            'signed' (valid signature, not met) or 'unsigned' (imported). A REF is a contact id (all \
            digits, or '#' and digits: only ever an id, so a deleted id names nobody), a DID or unique \
            DID prefix, or a unique name match (exact ignoring case, else a unique part of a name).

            Examples:
              meishi contacts list
              meishi contacts show ken
              meishi contacts tag ken pycon
            """,
        subcommands: [ContactsAdd.self, ContactsList.self, ContactsSearch.self, ContactsShow.self, ContactsDelete.self, ContactsSplit.self,
                      ContactsImport.self, ContactsExport.self, ContactsShare.self, ContactsNote.self, ContactsTag.self,
                      ContactsEdit.self, ContactsChanges.self])
}
