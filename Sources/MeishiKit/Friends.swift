import MeishiStore

/// `meishi friends`: the common friends recorded by exchanges.
extension ContactsService {
    /// The contact `ref` names and its last comparison (nil: never compared, e.g. added by QR or import).
    public func commonFriends(of ref: String) throws(MeishiError) -> (contact: Contact, friends: CommonFriends?) {
        let store = try open()
        do {
            let c = try store.resolve(ref)
            return (c, try store.commonFriends(of: c.id!))
        } catch { throw .store(error) }
    }

    /// Every contact with how many friends it shares with me (nil: never compared) and the mode used.
    public func commonFriendCounts() throws(MeishiError) -> [ContactStore.FriendCount] {
        let store = try open()
        do { return try store.commonFriendCounts() } catch { throw .store(error) }
    }
}
