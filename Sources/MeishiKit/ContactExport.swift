import Foundation
import MeishiCard
import MeishiCrypto
import MeishiStore

/// Turning stored contacts into vCards.
public enum ContactExport {
    /// The vCard of a stored contact: its fields, then what its earlier cards said that the
    /// current one does not (newest first), then any unsigned additions; its DID as `UID`
    /// and `X-MEISHI-DID` (a `urn:uuid:` for a contact without one), its trust, and whatever
    /// an imported vCard held beyond meishi's fields.
    public static func entry(for c: Contact) -> VCardEntry {
        var fields = c.fields
        for (name, values) in c.earlierFields ?? [:] {
            for v in values where !(fields[name] ?? []).contains(v) { fields[name, default: []].append(v) }
        }
        for (name, values) in c.unsignedFields ?? [:] {
            for v in values where !(fields[name] ?? []).contains(v) { fields[name, default: []].append(v) }
        }
        let claimed = c.did.hasPrefix("unsigned:") ? String(c.did.dropFirst(9)) : c.did
        let did = DIDKey.ed25519PublicKey(from: claimed) != nil ? claimed : nil
        return VCardEntry(uid: c.trust > .unsigned && did != nil ? did! : uuidURN(c.did), fields: fields, did: did,
                          trust: c.trust.rawValue, revision: c.cardTimestamp, extras: VCardExtras(json: c.vcard))
    }

    /// All of `contacts` as one vCard file.
    public static func vcards(_ contacts: [Contact], version: VCardVersion) -> String {
        contacts.map { VCard.write(entry(for: $0), version: version) }.joined()
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
