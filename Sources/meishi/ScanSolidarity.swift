import Foundation
import MeishiCard
import MeishiKit

/// What `scan` does with the Solidarity app's codes (docs/PROTOCOL.md section 6).
extension Scan {
    func handleSolidarity(_ verified: VerifiedSolidarityCard, into obj: inout [String: JSONValue], ctx: Context) throws {
        let card = verified.card
        obj["verdict"] = .string("valid")
        var summary: [String: JSONValue] = [
            "did": .string(verified.did),
            "issuedAt": .number(Double(card.issuedAt)),
            "ageSeconds": .number(Double(verified.ageSeconds)),
            "fields": .object(card.fields.mapValues { .array($0.map(JSONValue.string)) }),
            "linkedDIDs": .array(card.linkedDIDs.map(JSONValue.string)),
            "droppedValues": .number(Double(card.droppedValues)),
        ]
        if let exp = card.expires { summary["expires"] = .number(Double(exp)) }
        if let id = card.id { summary["jti"] = .string(id) }
        obj["solidarity"] = .object(summary)
        guard !dryRun else {
            obj["stored"] = .bool(false)
            if !json { printSolidarity(verified, heading: "valid Solidarity card from %@ (not stored: --dry-run)") }
            return
        }
        let outcome = try SolidarityService.store(verified, home: ctx.home, now: ctx.now)
        obj["stored"] = .bool(true)
        obj["result"] = .string(outcome.name)
        obj["contact"] = Output.contactJSON(outcome.contact)
        if !json {
            printSolidarity(verified, heading: "valid Solidarity card from %@")
            Output.reportStored(outcome)
        }
    }

    func handleInvalidSolidarity(_ e: SolidarityError, file: String, into obj: inout [String: JSONValue]) throws {
        obj["verdict"] = .string(e.verdict)
        obj["reason"] = .string(e.reason)
        let hint: String? = switch e {
        case .expired: "ask them to show a fresh card"
        case .notYetValid, .fromTheFuture: "check this computer's clock"
        default: nil
        }
        let failure = MeishiFailure(e)
        throw MeishiFailure("\(file): \(failure.message)", hint: hint, status: failure.status)
    }

    func handleUnsupported(_ kind: SolidarityQR.Unsupported, file: String, into obj: inout [String: JSONValue]) throws {
        obj["verdict"] = .string("unsupported")
        obj["reason"] = .string(kind.explanation)
        throw MeishiFailure("\(file): \(kind.explanation)", hint: kind.hint, status: .dataError)
    }

    /// The card's fields, its DID and its age: a static QR can be replayed, so `iat` says when it
    /// was signed, not when it was shown.
    private func printSolidarity(_ verified: VerifiedSolidarityCard, heading: String) {
        let card = verified.card
        print(heading.replacingOccurrences(of: "%@", with: Output.safe(card.name ?? "(no name)")))
        print(Output.fieldLines(Output.orderedFields(card.fields)), terminator: "")
        print("  did          \(verified.did)")
        print("  issued       \(Output.date(card.issuedAt)) (\(Output.age(verified.ageSeconds)); a QR can be shown again later)")
        if let exp = card.expires { print("  expires      \(Output.date(exp))") }
        for did in card.linkedDIDs { print("  same as      \(Output.safe(did)) (claimed by the card, not proven)") }
        if card.droppedValues > 0 { Output.note("left out \(card.droppedValues) empty or over-long values") }
    }
}
