import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsSplit: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "split", abstract: "Undo the latest merge of an imported card into a contact.",
        discussion: """
            'contacts import' merges a card into an unsigned contact of the same name sharing an email \
            or phone (or into a verified contact whose DID and name it carries, as unsigned \
            information), and records each merge. split takes the latest one out again: the values \
            that merge added leave the contact, and the card stands alone as a contact of its own. Run \
            it again for the merge before. With nothing to undo it says why (never merged, or every \
            merge undone already) and exits 65. Merges made before meishi recorded them (older \
            stores, where cards of different names could merge) cannot be told apart: where one may \
            have happened meishi says so, and the way back is to delete the contact and import the \
            original files again.

            Examples:
              meishi contacts split "Alice Smith"
              meishi contacts split 1 --json
            """)

    @OptionGroup var global: GlobalOptions

    @OptionGroup var options: OneContactOptions

    func run(_ ctx: Context) throws {
        let s = try global.session(ctx).contacts.split(options.ref, now: ctx.unixNow)
        if options.json {
            ctx.out.json(.object(["remaining": CardRendering.json(s.remaining), "separated": CardRendering.json(s.separated),
                                  "removed": CardRendering.fields(s.removed), "mergesLeft": .number(Double(s.mergesLeft))]))
            return
        }
        let what = s.removed.keys.sorted().map { "\($0) -\(s.removed[$0]!.count)" }.joined(separator: ", ")
        ctx.out.line("split \(CardRendering.name(s.separated.name)) out of #\(s.remaining.id ?? 0) \(CardRendering.name(s.remaining.name))"
                     + (what.isEmpty ? "" : " (\(what))") + ": now #\(s.separated.id ?? 0) (unsigned)")
        if s.mergesLeft > 0 {
            ctx.out.note("#\(s.remaining.id ?? 0) holds \(s.mergesLeft) more recorded merge\(s.mergesLeft == 1 ? "" : "s"): "
                         + "run 'meishi contacts split \(s.remaining.id ?? 0)' again to undo the one before")
        }
    }
}
