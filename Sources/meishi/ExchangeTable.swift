import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiProximity
import MeishiStore

/// `meishi exchange --table`: everyone holding one code swaps cards with everyone else.
extension Exchange {
    /// The most people `--expect` may name: every pair is one exchange, N·(N−1)/2 in all.
    static let largestTable = 64

    func runTable(_ ctx: Context, code: ExchangeCode, level: DisclosureLevel, fields: FieldListArgument?, timeout: DurationArgument,
                  friends: FriendsMode, alias: String?) async throws {
        let session = try global.session(ctx)
        let event = try meeting.resolved(ctx)
        let note = try message.map { try ctx.readNote($0, example: "echo hi | meishi exchange --table CODE --message -") }
        let identity = try session.loadIdentity()
        let card = try session.cards.loadCard()
        let out = ctx.out, quiet = json, terminal = ctx.terminal
        let endpoint = endpoint(alias: alias)
        // Before anything is said of the table: an unknown field, or a code an earlier table used.
        let only = try fields?.names
        try ExchangeService(home: session.home).refuseSpent(tableCode: code, clock: ctx.unixClock)
        // Discovery makes a table; --listen/--peer a table of two (one exchange, told as `exchange` tells it).
        let atTable = if case .discover = endpoint { true } else { false }
        if !quiet {
            if case .generate? = table {
                out.note("your table's code: \(code) (read it out to the others)")
                out.note("everyone else runs: meishi exchange --table \(code)" + (peer != nil ? " --listen" : ""))
            }
            let ends = [expect.map { "when \($0) people are in" }, terminal.isInteractive ? "when you press Enter" : nil,
                        "after \(timeout.seconds)s"].compactMap { $0 }
            out.note("at table \(code.nameplate): each person is shown as they join; it ends " + ends.joined(separator: ", ")
                     .replacingLastOccurrence(of: ", ", with: " or "))
        }
        let request = ExchangeService.Request(
            endpoint: endpoint, code: code, level: level, only: only, timeoutSeconds: timeout.seconds,
            maximumSkew: maxSkew.seconds, confirmedByPerson: false,
            friends: .init(mode: friends, maximumSetSize: maxSet, matchEmails: match?.emails ?? false, matchPhones: match?.phones ?? false),
            message: note.map { .init(text: $0, lifetime: ttl.seconds, once: once) }, event: event)
        let report = try await ExchangeService(home: session.home).table(
            request, expect: expect, identity: identity, card: card, clock: ctx.unixClock,
            conversation: .init(confirm: { _ in true }, events: { [verbose = global.verbose, listen, atTable] event in
                if case .listening(let port) = event {
                    if listen, !quiet {
                        let hosts = ExchangeTransport.localAddresses()
                        let example = Self.join(hosts.first ?? "THIS-HOST", port)
                        out.note("on the other machine run: meishi exchange --peer \(example) --table \(code)")
                    }
                    return
                }
                guard let (line, step) = ExchangeEvents.line(event) else { return }
                // At a table each pair's chatter ("the codes match") is a step (`--verbose`): the table says who joined.
                if !step, !atTable { out.note(line) } else if verbose { out.debug(line) }
            }),
            table: .init(
                joined: { member in if !quiet { out.line("+ " + Self.joinedLine(member)) } },
                failed: { failure, used in
                    if !quiet {
                        out.note("someone at \(failure.peer) failed to pair: \(ExchangeWording.describe(failure.failure)) "
                                 + "(\(used) of \(ExchangeService.TableReport.allowedFailures) failed pairings)")
                    }
                },
                stop: { await Self.waitForStop(terminal, out) }))
        let failure = Self.failure(report, expect: expect)
        if json {
            tableJSON(report, home: session.home, out, failure: failure)
        } else {
            tableSummary(report, home: session.home, out)
            if let failure { out.report(failure) }
        }
        if let failure { throw ExitCode(failure.status.rawValue) }
    }

    /// "Ken Sato (z6Mk…q2cL) — 2 common friends": the verified card's name and a short form of its DID.
    static func joinedLine(_ member: ExchangeService.Outcome) -> String {
        let c = member.contact
        var line = "\(CardRendering.name(c.name)) (\(shortDID(c.did)))"
        if let friends = member.commonFriends, case .ran = friends.outcome {
            line += " — \(friends.friends.count) common friend\(friends.friends.count == 1 ? "" : "s")"
        }
        return line
    }

    /// `did:key:z6MkhaX…` as `z6Mk…` and its last four characters.
    static func shortDID(_ did: String) -> String {
        let id = did.hasPrefix("did:key:") ? String(did.dropFirst(8)) : did
        return id.count > 12 ? "\(id.prefix(4))…\(id.suffix(4))" : id
    }

    /// Returns when the person presses Enter or Ctrl-D (on a terminal), or at Ctrl-C or SIGTERM:
    /// each ends the table as Enter does, with the report of who was stored (as `listen` stops).
    /// Until then, or until cancelled, when the table ends otherwise.
    static func waitForStop(_ terminal: TerminalIO, _ out: Console) async {
        let (pressed, press) = AsyncStream.makeStream(of: Void.self)
        let signals = SignalStop([SIGINT, SIGTERM]) { signal in
            // The terminal echoed ^C: the report starts on a line of its own.
            if signal == SIGINT, terminal.isInteractive { out.endLine() }
            press.yield(())
        }
        defer { signals.release() }
        if terminal.isInteractive {
            Thread.detachNewThread {
                terminal.waitForEndOfLine()
                press.yield(())
            }
        }
        for await _ in pressed { return }
    }

    /// The error a table run ends with, if any: every try used (76), or --timeout before
    /// `--expect` people were in, or before anyone was (75). What was stored stays stored.
    static func failure(_ r: ExchangeService.TableReport, expect: Int?) -> MeishiFailure? {
        let stored = r.members.count
        switch r.ended {
        case .expected, .stopped:
            return nil
        case .triesSpent where stored == 0:
            // Nobody's code matched this one: most likely it was mistyped here, else someone is guessing.
            return MeishiFailure("\(r.triesUsed) pairings at this table failed after the code was tested and none completed: "
                                 + "the code typed here may not be the one read out, or someone is guessing it; the table is closed; nothing was stored",
                                 hint: "check the code with the person who read it out and run it again; if it was right, make a new one (meishi exchange --table)",
                                 status: .protocolError)
        case .triesSpent:
            return MeishiFailure("\(r.triesUsed) pairings at this table failed after the code was tested: someone may be guessing it; "
                                 + "the table is closed (\(stored) stored)",
                                 hint: "make a new code (meishi exchange --table) and read it out again", status: .protocolError)
        case .timedOut:
            if let expect, stored + 1 < expect {
                return MeishiFailure("timed out: \(stored + 1) of \(expect) people are in (you included); \(stored) stored",
                                     hint: "check that everyone typed the same code, or raise --timeout", status: .timedOut)
            }
            guard stored == 0 else { return nil }
            return MeishiFailure("timed out: nobody joined the table; nothing was stored",
                                 hint: "check that the others run 'meishi exchange --table' with the same code", status: .timedOut)
        }
    }

    func tableSummary(_ r: ExchangeService.TableReport, home: Home, _ out: Console) {
        for m in r.members { out.warnConflicts(m.stored) }
        if r.members.isEmpty {
            out.line("Nobody stored")
        } else {
            out.line("Stored \(r.members.count) \(r.members.count == 1 ? "person" : "people") (met) in \(home.databasePath):")
            for m in r.members.sorted(by: { ($0.contact.id ?? 0) < ($1.contact.id ?? 0) }) {
                var line = "  #\(m.contact.id ?? 0) " + Self.joinedLine(m)
                if let f = m.commonFriends, case .ran = f.outcome, !f.friends.isEmpty {
                    line += ": " + f.friends.map { CardRendering.name($0.name) }.joined(separator: ", ")
                }
                out.line(line)
                if let messages = m.messages { MessageWording.report(messages, peer: CardRendering.who(m.contact), out) }
            }
        }
        for f in r.failures {
            out.line("Failed: \(f.peer): \(Console.safe(ExchangeWording.describe(f.failure)))" + (f.usedATry ? " (a failed pairing)" : ""))
        }
        if r.triesUsed > 0 { out.line("Failed pairings: \(r.triesUsed) of \(ExchangeService.TableReport.allowedFailures)") }
    }

    func tableJSON(_ r: ExchangeService.TableReport, home: Home, _ out: Console, failure: MeishiFailure?) {
        out.json(.object([
            "result": .string("table"), "ended": .string(r.ended.rawValue), "store": .string(home.databasePath),
            "stored": .array(r.members.map { m in
                .object([
                    "result": .string(m.stored.name), "peer": .string(m.peerAddress), "trust": .string(m.contact.trust.rawValue),
                    "contact": CardRendering.json(m.contact),
                    "commonFriends": m.commonFriends.map(Self.json) ?? .null,
                    "messages": m.messages.map(MessageWording.json) ?? .null,
                ])
            }),
            "failed": .array(r.failures.map { f in
                .object(["peer": .string(f.peer), "reason": .string(ExchangeWording.describe(f.failure)), "usedATry": .bool(f.usedATry)])
            }),
            "failedPairings": .number(Double(r.triesUsed)), "failedPairingsAllowed": .number(Double(ExchangeService.TableReport.allowedFailures)),
            "error": failure.map { .string($0.message) } ?? .null, "status": .number(Double(failure?.status.rawValue ?? 0)),
        ]))
    }
}

extension String {
    /// The text with its last `target` replaced (", " → " or " in a list).
    func replacingLastOccurrence(of target: String, with replacement: String) -> String {
        guard let r = range(of: target, options: .backwards) else { return self }
        return replacingCharacters(in: r, with: replacement)
    }
}
