import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsAdd: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Verify a signed card and store it as a 'signed' contact.",
        discussion: """
            A newer card from a known DID replaces the stored fields; an older one never does.

            Example:
              meishi contacts add ken.json
              meishi contacts add ken.json --event "PyCon JP 2026"
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The payload file, or - for standard input.", valueName: "file"), completion: .file())
    var file: String

    @OptionGroup var meeting: EventOption

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        let data = try ctx.readAtMost(file, limit: ProximityPayload.maximumEncodedSize)
        let card: VerifiedCard
        do { card = try CardVerifier(clock: ctx.unixClock).verify(data) } catch { throw MeishiError.payload(error) }
        let event = try meeting.resolved(ctx)
        let outcome = try session.contacts.add(card, trust: .signed, source: file == "-" ? .stdin : .file, now: ctx.unixNow,
                                               meeting: Meeting(at: ctx.unixNow, how: .file, event: event))
        if json {
            ctx.out.warnConflicts(outcome)
            ctx.out.json(.object(["result": .string(outcome.name), "contact": CardRendering.json(outcome.contact)]))
        } else {
            ctx.out.reportStored(outcome)
        }
    }
}
