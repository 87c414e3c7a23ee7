import ArgumentParser
import MeishiCard
import MeishiKit

struct Verify: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a signed card without storing it.",
        discussion: """
            Checks the JSON shape and limits (at most 16 KiB), the version, that senderDID names \
            signPubKey, the Ed25519 signature, and that the timestamp is not too far in the future. \
            The QR text form (MEISHI1:…) is read too, and so is the Solidarity app's signed card (the \
            compact JWS its QR holds: ES256, P-256 did:key, its times). Exit status 0 for a valid \
            card, 65 for an invalid one.

            Examples:
              meishi verify mei.json
              meishi verify --json - < mei.json
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The payload file, or - for standard input.", valueName: "file"), completion: .file())
    var file: String

    @Option(help: ArgumentHelp("How far in the future a timestamp may be (e.g. 10m).", valueName: "duration"))
    var maxSkew: DurationArgument = .defaultMaximumSkew

    @Flag(help: "Print the verdict and the payload as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        _ = try global.session(ctx, needsIdentity: false)
        let data: [UInt8]
        do throws(MeishiError) { data = try ctx.readAtMost(file, limit: ProximityPayload.maximumEncodedSize) } catch {
            // Too large to be a payload: the verdict is "malformed", as the card layer says.
            var failure = MeishiFailure(error)
            if case .fileTooLarge = error { failure.details = ["valid": .bool(false), "verdict": .string("malformed"), "reason": .string(failure.message)] }
            throw failure
        }
        let verifier = CardVerifier(maximumSkew: maxSkew.seconds, clock: ctx.unixClock)
        // The Solidarity app's signed card (a compact JWS, as its QR holds) is checked by its own rules.
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if SolidarityCard.looksLikeJWS(text) { return try verifySolidarity(text, verifier, ctx.out) }
        do {
            let card = try verifier.verify(data)
            report(card, ctx.out)
        } catch {
            // With --json the error document carries the verdict too (printed where failures are).
            var failure = MeishiFailure(error)
            failure.details = ["valid": .bool(false), "verdict": .string(error.verdict), "reason": .string(error.reason)]
            if String(decoding: data.prefix(200), as: UTF8.self).contains("\"format\":\"meishi-identity") { failure.hint = MeishiFailure.identityFileNotACard }
            throw failure
        }
    }

    private func verifySolidarity(_ text: String, _ verifier: CardVerifier, _ out: Console) throws {
        let verified: VerifiedSolidarityCard
        do { verified = try verifier.verify(solidarity: text) } catch {
            var failure = MeishiFailure(error)
            failure.details = ["valid": .bool(false), "format": .string("solidarity"), "verdict": .string(error.verdict),
                               "reason": .string(error.reason)]
            throw failure
        }
        if json {
            out.json(.object(["valid": .bool(true), "verdict": .string("valid"), "format": .string("solidarity"),
                              "did": .string(verified.did), "solidarity": CardRendering.solidarityJSON(verified)]))
            return
        }
        CardRendering.printSolidarity(verified, note: "", out)
    }

    private func report(_ card: VerifiedCard, _ out: Console) {
        let p = card.payload
        let fingerprint = p.signPubKey.fingerprint
        if json {
            out.json(.object([
                "valid": .bool(true), "verdict": .string("valid"), "did": .string(p.senderDID),
                "fingerprint": .string(fingerprint), "level": .string(p.level.rawValue),
                "timestamp": .string(CardRendering.date(p.timestamp)), "ageSeconds": .number(Double(card.ageSeconds)),
                "shareId": .string(p.shareId), "payload": p.jsonValue(),
            ]))
            return
        }
        out.line("valid card from \(CardRendering.name(p.displayName))\n" + CardRendering.block(CardRendering.fields(of: p), rows: [
            ("did", p.senderDID), ("fingerprint", fingerprint), ("level", p.level.rawValue),
            ("signed", "\(CardRendering.date(p.timestamp)) (\(CardRendering.age(card.ageSeconds)))"),
        ]))
    }
}
