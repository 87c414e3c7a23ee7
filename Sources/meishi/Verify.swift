import ArgumentParser
import MeishiCard
import MeishiKit

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a signed card without storing it.",
        discussion: """
            Checks the JSON shape and limits (at most 16 KiB), the version, that senderDID names \
            signPubKey, the Ed25519 signature, and that the timestamp is not too far in the future. \
            Exit status 0 for a valid card, 65 for an invalid one.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The payload file, or - for standard input.", valueName: "file"))
    var file: String

    @Option(help: ArgumentHelp("How far in the future a timestamp may be (e.g. 10m).", valueName: "duration"))
    var maxSkew: DurationArgument = DurationArgument(argument: "10m")!

    @Flag(help: "Print the verdict and the payload as JSON.")
    var json = false

    func run() throws {
        let ctx = try global.context()
        let data = try SecureFile.read(file, limit: ProximityPayload.maximumEncodedSize)
        do {
            let card = try CardService.verify(data, now: ctx.now, maximumSkew: maxSkew.seconds)
            report(card)
        } catch {
            let e = error
            if json {
                Output.json(.object(["valid": .bool(false), "verdict": .string(e.verdict), "reason": .string(e.reason)]))
            }
            throw MeishiFailure(e)
        }
    }

    private func report(_ card: VerifiedCard) {
        let p = card.payload
        let fingerprint = PublicIdentity.fingerprint(of: p.signPubKey)
        if json {
            Output.json(.object([
                "valid": .bool(true), "verdict": .string("valid"), "did": .string(p.senderDID),
                "fingerprint": .string(fingerprint), "level": .string(p.level.rawValue),
                "timestamp": .number(Double(p.timestamp)), "ageSeconds": .number(Double(card.ageSeconds)),
                "shareId": .string(p.shareId), "payload": p.jsonValue(),
            ]))
            return
        }
        print("valid card from \(Output.safe(p.displayName ?? "(no name)"))")
        print(Output.fieldLines(p.orderedFields), terminator: "")
        print("""
              did          \(p.senderDID)
              fingerprint  \(fingerprint)
              level        \(p.level.rawValue)
              signed       \(Output.date(p.timestamp)) (\(Output.age(card.ageSeconds)))
            """)
    }
}
