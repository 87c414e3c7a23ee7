import MeishiCard
import MeishiKit

/// What `scan` does with the Solidarity app's codes (docs/PROTOCOL.md section 6).
extension Scan {
    func handleSolidarity(_ verified: VerifiedSolidarityCard, session: HomeSession, into obj: inout [String: JSONValue]) throws {
        let card = verified.card
        obj["verdict"] = .string("valid")
        var summary: [String: JSONValue] = [
            "did": .string(verified.did),
            "issuedAt": .number(Double(card.issuedAt)),
            "ageSeconds": .number(Double(verified.ageSeconds)),
            "fields": CardRendering.fields(card.fields),
            "linkedDIDs": .array(card.linkedDIDs.map(JSONValue.string)),
            "droppedValues": .number(Double(card.droppedValues)),
        ]
        if let exp = card.expires { summary["expires"] = .number(Double(exp)) }
        if let id = card.id { summary["jti"] = .string(id) }
        obj["solidarity"] = .object(summary)
        let out = session.ctx.out
        guard !dryRun else {
            obj["stored"] = .bool(false)
            if !json { printSolidarity(verified, stored: false, out) }
            return
        }
        let outcome = try session.contacts.add(verified, now: session.ctx.unixNow)
        obj["stored"] = .bool(true)
        obj["result"] = .string(outcome.name)
        obj["contact"] = CardRendering.json(outcome.contact)
        if !json {
            printSolidarity(verified, stored: true, out)
            out.reportStored(outcome)
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

    /// The card's fields, its DID and its age: a static QR can be replayed, so `iat` says when it
    /// was signed, not when it was shown.
    private func printSolidarity(_ verified: VerifiedSolidarityCard, stored: Bool, _ out: Console) {
        let card = verified.card
        var rows: [(label: String, value: String)] = [
            ("did", verified.did),
            ("issued", "\(CardRendering.date(card.issuedAt)) (\(CardRendering.age(verified.ageSeconds)); a QR can be shown again later)"),
        ]
        if let exp = card.expires { rows.append(("expires", CardRendering.date(exp))) }
        for did in card.linkedDIDs { rows.append(("same as", "\(Console.safe(did)) (claimed by the card, not proven)")) }
        out.line("valid Solidarity card from \(CardRendering.name(card.name))" + (stored ? "" : " (not stored: --dry-run)") + "\n"
                 + CardRendering.block(card.fields, rows: rows))
        if card.droppedValues > 0 { out.note("left out \(card.droppedValues) empty or over-long values") }
    }
}
