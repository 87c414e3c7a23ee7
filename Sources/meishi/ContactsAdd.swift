import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsAdd: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Verify a signed card and store it as a 'signed' contact.",
        discussion: """
            A newer card from a known DID replaces the stored fields; an older one never does. Several \
            files are verified first and stored only when every one verifies: one that does not adds \
            nothing. --json prints {"result", "contact"} for one file and {"added": [{"file", "result", \
            "contact"}, ...]} for several.

            Examples:
              meishi contacts add ken.json
              meishi contacts add ken.json --event "PyCon JP 2026"
              meishi contacts add cards/*.json
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The payload files, or - for standard input.", valueName: "file"), completion: .file())
    var files: [String]

    @OptionGroup var meeting: EventOption

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        if files.isEmpty { throw ValidationError("name the card file to add, or - for standard input") }
        if files.filter({ $0 == "-" }).count > 1 { throw ValidationError("standard input (-) can be read only once") }
    }

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        // Every card is read and verified before any is stored.
        var cards: [(file: String, card: VerifiedCard)] = []
        for file in files {
            do throws(MeishiError) {
                let data = try ctx.readAtMost(file, limit: ProximityPayload.maximumEncodedSize)
                do { cards.append((file, try CardVerifier(clock: ctx.unixClock).verify(data))) } catch { throw .payload(error) }
            } catch {
                guard files.count > 1 else { throw error }
                throw MeishiFailure.noneAdded(MeishiFailure(error), file: file == "-" ? "standard input" : file, of: files.count)
            }
        }
        if files.count > 1, let me = try? IdentityStore(home: session.home).loadPublic(),
           let mine = cards.first(where: { $0.card.payload.senderDID == me.did }) {
            throw MeishiFailure.noneAdded(MeishiFailure(MeishiError.ownCard), file: mine.file, of: files.count)
        }
        let event = try meeting.resolved(ctx)
        var added: [(file: String, outcome: StoreOutcome)] = []
        for (file, card) in cards {
            added.append((file, try session.contacts.add(card, trust: .signed, source: file == "-" ? .stdin : .file, now: ctx.unixNow,
                                                         meeting: Meeting(at: ctx.unixNow, how: .file, event: event))))
        }
        if json {
            for (_, outcome) in added { ctx.out.warnConflicts(outcome) }
            func document(_ outcome: StoreOutcome) -> [String: JSONValue] {
                ["result": .string(outcome.name), "contact": CardRendering.json(outcome.contact)]
            }
            if files.count == 1 {
                ctx.out.json(.object(document(added[0].outcome)))
            } else {
                ctx.out.json(.object(["added": .array(added.map { .object(document($1).merging(["file": .string($0)]) { $1 }) })]))
            }
        } else {
            for (_, outcome) in added { ctx.out.reportStored(outcome) }
        }
    }
}
