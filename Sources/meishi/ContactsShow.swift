import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsShow: SynchronousCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one contact.",
        discussion: """
            Shows the contact's current card, then what its earlier signed cards said that the current \
            one does not ("from an earlier card, DATE: email, phone ×2"): a newer card that shares less \
            erases nothing. --json gives them apart: "fields", "earlierFields" and "earlierCards". \
            Then every meeting: when, how (exchange, code, qr, file, import) and at which event \
            (--event of exchange, scan and contacts add); --json: "meetings". Last, your own tags and \
            note ('contacts tag', 'contacts note'); --json: "tags" and "note".

            Examples:
              meishi contacts show ken
              meishi contacts show 3 --json
            """)

    @OptionGroup var global: GlobalOptions

    @OptionGroup var options: OneContactOptions

    func run(_ ctx: Context) throws {
        let (c, earlier, meetings, notes, firstSource, rotations) = try global.session(ctx).contacts.show(options.ref)
        guard options.json else {
            return ctx.out.line(CardRendering.contact(c, earlier: earlier, meetings: meetings, notes: notes, firstSource: firstSource, rotations: rotations))
        }
        ctx.out.json(CardRendering.json(c, earlier: earlier, meetings: meetings, notes: notes, firstSource: firstSource, rotations: rotations))
    }
}
