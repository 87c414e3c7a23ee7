import MeishiCard
import MeishiKit

/// What `scan` does with the Solidarity app's codes (docs/PROTOCOL.md section 6).
extension Scan {
    func handleSolidarity(_ verified: VerifiedSolidarityCard, session: HomeSession, event: String?,
                          into obj: inout [String: JSONValue]) throws {
        obj["verdict"] = .string("valid")
        obj["solidarity"] = CardRendering.solidarityJSON(verified)
        let out = session.ctx.out
        guard !dryRun else {
            obj["stored"] = .bool(false)
            if !json { CardRendering.printSolidarity(verified, note: " (not stored: --dry-run)", out) }
            return
        }
        let outcome = try session.contacts.add(verified, now: session.ctx.unixNow, event: event)
        obj["stored"] = .bool(true)
        obj["result"] = .string(outcome.name)
        obj["contact"] = CardRendering.json(outcome.contact)
        // Kept with the meishi contact whose card names this one back (PROTOCOL §6.5).
        let linked = outcome.contact.did != verified.did
        if linked { obj["sameAs"] = .string(outcome.contact.did) }
        if !json {
            CardRendering.printSolidarity(verified, note: "", out)
            if linked {
                out.line("kept with \(CardRendering.name(outcome.contact.name)) (#\(outcome.contact.id ?? 0)), \(outcome.contact.did): "
                         + "the same person, each card naming the other")
            } else {
                out.reportStored(outcome)
            }
        }
    }

    func handleInvalidSolidarity(_ e: SolidarityError, file: String, into obj: inout [String: JSONValue]) throws {
        obj["verdict"] = .string(e.verdict)
        obj["reason"] = .string(e.reason)
        throw MeishiFailure(e).located(file)
    }

    func handleUnsupported(_ kind: SolidarityQR.Unsupported, file: String, into obj: inout [String: JSONValue]) throws {
        let failure = MeishiFailure(kind)
        obj["verdict"] = .string("unsupported")
        obj["reason"] = .string(failure.message)
        throw failure.located(file)
    }
}

/// A verified Solidarity card as `scan` and `verify` show it.
extension CardRendering {
    static func solidarityJSON(_ verified: VerifiedSolidarityCard) -> JSONValue {
        let card = verified.card
        var summary: [String: JSONValue] = [
            "did": .string(verified.did),
            "issuedAt": .string(date(card.issuedAt)),
            "ageSeconds": .number(Double(verified.ageSeconds)),
            "fields": fields(card.fields),
            "linkedDIDs": .array(card.linkedDIDs.map(JSONValue.string)),
            "droppedValues": .number(Double(card.droppedValues)),
        ]
        if let exp = card.expires { summary["expires"] = .string(date(exp)) }
        if let id = card.id { summary["jti"] = .string(id) }
        return .object(summary)
    }

    /// The card's fields, its DID and its age: a static QR can be replayed, so `iat` says when it
    /// was signed, not when it was shown. `note` follows the heading.
    static func printSolidarity(_ verified: VerifiedSolidarityCard, note: String, _ out: Console) {
        let card = verified.card
        var rows: [(label: String, value: String)] = [
            ("did", verified.did),
            ("issued", "\(date(card.issuedAt)) (\(age(verified.ageSeconds)); a QR can be shown again later)"),
        ]
        if let exp = card.expires { rows.append(("expires", date(exp))) }
        for did in card.linkedDIDs { rows.append(("same as", "\(Console.safe(did)) (claimed by the card, not proven)")) }
        out.line("valid Solidarity card from \(name(card.name))" + note + "\n" + block(card.fields, rows: rows))
        if card.droppedValues > 0 { out.note("left out \(card.droppedValues) empty or over-long values") }
    }
}
