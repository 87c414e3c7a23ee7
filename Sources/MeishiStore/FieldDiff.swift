import MeishiCard

// Comparing the fields of cards, values compared as emails and phones compare
// (`Contact.normalized`): what changed from the card a contact held to the one that replaced it
// (`FieldChange`, shown by card updates), and what one card holds that others lack
// (`ContactStore.missing`: what an import merges in, what earlier cards said).

/// One difference between the card a contact held and the newer card that replaced it.
public enum FieldChange: Equatable, Sendable {
    /// Values of the field the older card did not have (`count` of them).
    case added(FieldName, count: Int)
    /// A single-valued field holds another value, or a multi-valued one as many other values
    /// as it lost (one email replaced by another: "email changed", not "+email, email fewer").
    case changed(FieldName)
    /// Values of the field the newer card no longer shares; `all` when it shares none of it.
    case withdrawn(FieldName, count: Int, all: Bool)
    /// The card is shared at another level.
    case level(from: DisclosureLevel, to: DisclosureLevel)

    /// The changes from `old` (fields and level) to `new`, in field order.
    public static func between(_ old: [FieldName: [String]], _ oldLevel: DisclosureLevel,
                               and new: [FieldName: [String]], _ newLevel: DisclosureLevel) -> [FieldChange] {
        var out: [FieldChange] = []
        for field in Set(old.keys).union(new.keys).sorted() {
            let before = (old[field] ?? []).map { Contact.normalized(field, $0) }, after = (new[field] ?? []).map { Contact.normalized(field, $0) }
            if !field.isMultiValued {
                switch (before.first, after.first) {
                case (nil, _?): out.append(.added(field, count: 1))
                case (_?, nil): out.append(.withdrawn(field, count: 1, all: true))
                case (let b?, let a?) where a != b: out.append(.changed(field))
                default: break
                }
                continue
            }
            let added = after.filter { !before.contains($0) }.count, gone = before.filter { !after.contains($0) }.count
            if added > 0, added == gone {
                out.append(.changed(field))
                continue
            }
            if added > 0 { out.append(.added(field, count: added)) }
            if gone > 0 { out.append(.withdrawn(field, count: gone, all: after.isEmpty)) }
        }
        if oldLevel != newLevel { out.append(.level(from: oldLevel, to: newLevel)) }
        return out
    }
}

extension ContactStore {
    /// Values of `incoming` missing from `existing` (compared as emails and phones compare, and
    /// as a vCard export writes them).
    /// A merge (`everyValue`) keeps each value not held yet, a second title or note too, so that
    /// no value a card brought is lost; of a name only when there is none (merges are of one
    /// name). A card's history (not `everyValue`) lists of a single-valued field only what the
    /// current and newer cards leave empty: their title replaced the earlier one.
    static func missing(_ incoming: [FieldName: [String]], from existing: [[FieldName: [String]]],
                        everyValue: Bool) -> [FieldName: [String]] {
        var out: [FieldName: [String]] = [:]
        for (field, values) in incoming {
            // A value also as an export writes it (control characters left out), so that reading
            // meishi's own export back finds the value held.
            let have = Set(existing.flatMap { $0[field] ?? [] }.flatMap { [Contact.normalized(field, $0), Contact.normalized(field, VCard.asWritten($0))] })
            if field == .name || !(everyValue || field.isMultiValued) {
                if have.isEmpty, let v = values.first { out[field] = [v] }
                continue
            }
            var seen = have
            for v in values where !seen.contains(Contact.normalized(field, v)) {
                seen.insert(Contact.normalized(field, v))
                out[field, default: []].append(v)
            }
        }
        return out
    }
}
