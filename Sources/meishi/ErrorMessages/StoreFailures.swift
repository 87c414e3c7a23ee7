import MeishiStore

/// The contact store.
extension MeishiFailure {
    /// A store failure.
    init(_ e: StoreError) {
        switch e {
        case .notFound(let ref):
            self.init("no contact matches \"\(ref)\"", hint: "see 'meishi contacts list'", status: .noInput)
        case .ambiguous(let ref, let candidates):
            self.init("\"\(ref)\" matches several contacts: "
                      + candidates.joined(separator: "; "),
                      hint: "use the id or the DID", status: .usage)
        case .unavailable(let why):
            self.init("the contact store is unavailable: \(why)", status: .failure)
        case .damaged(let why):
            self.init("the contact store is damaged: \(why)", hint: "delete that contact, or restore meishi.sqlite from a backup",
                      status: .dataError)
        case .nulCharacter(let field):
            self.init("refusing to store a contact whose \(field) holds a NUL character", status: .dataError)
        case .noRecordedMerge(let id, let name):
            self.init("cannot split #\(id) \(Console.safe(name ?? "(no name)")): no merge into it is recorded, so the store cannot "
                      + "tell which of its values came from which card",
                      hint: "merges made before meishi recorded them cannot be undone: delete the contact (meishi contacts delete \(id)) "
                      + "and import the original files again; cards of different names no longer merge",
                      status: .dataError)
        }
    }

    static let notDeleted = MeishiFailure("nothing deleted", status: .failure)
}
