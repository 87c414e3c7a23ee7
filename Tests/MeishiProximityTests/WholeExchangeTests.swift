import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiProximity

/// A whole exchange in memory: two sessions, each with both post-card phases, fed only through
/// `handle` and connected by two arrays of frames, the way the driver connects them to a socket.
/// Then the same exchange with one frame altered, at every position in turn.
@Suite struct WholeExchangeTests {
    typealias S = ExchangeSessionTests

    static func element(_ i: Int) -> [UInt8] { Array("did:key:z6MkFriend\(i)".utf8) }

    /// One side: its session and what the driver would hold.
    final class Side {
        let session: ExchangeSession
        let card: SignedCard
        let key: Ed25519.SigningKey
        var outbox: [[UInt8]] = []
        var digits: String?
        var asked = false
        var stored: VerifiedCard?
        var outcome: ExchangeSession.Outcome?
        var spentGuesses = 0

        init(_ role: ExchangeSession.Role, name: String, friends: [[UInt8]], code: ExchangeCode?) {
            let person = S.Person()
            card = person.card(name)
            key = person.key
            let request = CommonFriendsRequest(mode: .verified, maximumSetSize: 100, codeComparedByPerson: true,
                                               elements: { _ in CommonFriendsElements(dids: friends, extras: []) })
            let messages = ExchangeMessages(authenticated: true, outgoing: { _ in nil }, incoming: { _, _ in .refused(.malformed) })
            session = ExchangeSession(role: role, verifier: S.verifier, binding: code.map { ExchangeSession.CodeBinding(code: $0) },
                                      phases: [CommonFriendsExchangePhase(request), ExchangeMessagePhase(messages)])
        }

        /// Feeds one input and performs the actions as the driver does (the card is signed at once).
        func feed(_ input: ExchangeSession.Input) {
            var inputs = [input]
            while !inputs.isEmpty {
                for action in session.handle(inputs.removeFirst()) {
                    #expect(outcome == nil, "an action after .finish")
                    switch action {
                    case .send(let frame): outbox.append(frame)
                    case .askPerson(let d): digits = d
                    case .signCard: inputs.append(.cardSigned(card, key))
                    case .store(let card):
                        #expect(stored == nil && session.isComplete)
                        stored = card
                    case .spendGuess: spentGuesses += 1
                    case .perform(let work): Issue.record("unexpected work \(work)")
                    case .finish(let o): outcome = o
                    case .arm, .event: break
                    }
                }
            }
        }

        var exchanged: (card: VerifiedCard, phases: [any PostCardPhase])? {
            if case .exchanged(let card, _, let phases)? = outcome { (card, phases) } else { nil }
        }
        var friends: CommonFriendsOutcome? {
            exchanged?.phases.lazy.compactMap { $0 as? CommonFriendsExchangePhase }.first?.outcome
        }
        var message: ExchangeMessageOutcome? {
            exchanged?.phases.lazy.compactMap { $0 as? ExchangeMessagePhase }.first?.outcome
        }
    }

    /// What happened to the frame altered: who got it, and whether that side had both cards by then.
    struct Alteration { var receiver: ObjectIdentifier; var receiverWasComplete: Bool }

    /// Runs both sides until neither can move; the frame numbered `alter` (counting every frame
    /// delivered, both ways) has one byte flipped. People answer by comparing both screens.
    static func run(code: ExchangeCode?, alter: Int? = nil) -> (dialer: Side, listener: Side, frames: Int, altered: Alteration?) {
        let d = Side(.dialer, name: "Mei", friends: (0..<6).map(element), code: code)
        let l = Side(.listener, name: "Ken", friends: (3..<9).map(element), code: code)
        d.feed(.connected)
        l.feed(.connected)
        var delivered = 0
        var altered: Alteration?
        var moved = true
        while moved {
            moved = false
            for (from, to) in [(d, l), (l, d)] where !from.outbox.isEmpty && to.outcome == nil {
                var frame = from.outbox.removeFirst()
                if delivered == alter {
                    frame[frame.count / 2] ^= 0x01
                    altered = Alteration(receiver: ObjectIdentifier(to), receiverWasComplete: to.session.isComplete)
                }
                delivered += 1
                to.feed(.frame(frame))
                moved = true
            }
            for (me, other) in [(d, l), (l, d)] where me.digits != nil && !me.asked && me.outcome == nil {
                // A person answers once the other screen shows digits too (or the other side has ended).
                guard other.digits != nil || other.outcome != nil else { continue }
                me.asked = true
                me.feed(.personAnswered(me.digits == other.digits))
                moved = true
            }
        }
        // A side that ended closes the connection: the other reads its end.
        for side in [d, l] where side.outcome == nil { side.feed(.connectionClosed(error: nil)) }
        return (d, l, delivered, altered)
    }

    @Test(arguments: [nil, "7-tulip-anchor"])
    func bothSidesRunEveryPhaseThroughHandleAlone(_ code: String?) throws {
        let (d, l, frames, _) = Self.run(code: try code.map { try ExchangeCode(parsing: $0) })
        #expect(d.stored?.payload == l.card.payload && l.stored?.payload == d.card.payload)
        #expect(d.exchanged?.card.payload == l.card.payload && l.exchanged?.card.payload == d.card.payload)
        guard case .ran(.verified, let dShared, 6)? = d.friends, case .ran(.verified, let lShared, 6)? = l.friends else {
            Issue.record("common friends: \(String(describing: d.friends)), \(String(describing: l.friends))")
            return
        }
        #expect(dShared == [3, 4, 5] && lShared == [0, 1, 2])
        #expect(d.message?.failure == nil && l.message?.failure == nil && d.message?.received == nil)
        #expect(d.spentGuesses == 1 && l.spentGuesses == 1)
        #expect(frames > 10)
    }

    /// One byte flipped in one frame, at every position: no side ever stores a card the other did
    /// not send; a side that gets the altered frame before both cards are acknowledged stores
    /// nothing and fails; after them, it keeps the card and the phase running then fails.
    @Test(arguments: [nil, "7-tulip-anchor"])
    func aFlippedByteAtEveryPosition(_ code: String?) throws {
        let parsed = try code.map { try ExchangeCode(parsing: $0) }
        let honest = Self.run(code: parsed).frames
        for position in 0..<honest {
            let (d, l, _, altered) = Self.run(code: parsed, alter: position)
            let what = "frame \(position) of \(honest)"
            #expect(d.stored == nil || d.stored?.payload == l.card.payload, "\(what)")
            #expect(l.stored == nil || l.stored?.payload == d.card.payload, "\(what)")
            #expect(d.outcome != nil && l.outcome != nil, "\(what): a side was left running")
            guard let altered else { Issue.record("\(what) was never delivered"); continue }
            let receiver = ObjectIdentifier(d) == altered.receiver ? d : l
            if altered.receiverWasComplete {
                #expect(receiver.exchanged != nil, "\(what): the cards were undone")
                let failedPhase = (receiver.exchanged?.phases ?? []).contains { phase in
                    if let f = phase as? CommonFriendsExchangePhase, case .failed? = f.outcome { return true }
                    if let m = phase as? ExchangeMessagePhase, m.outcome.failure != nil { return true }
                    return false
                }
                #expect(failedPhase, "\(what): no phase noticed the altered frame")
            } else {
                #expect(receiver.stored == nil, "\(what): a card was stored after an altered frame")
                guard case .failed? = receiver.outcome else { Issue.record("\(what): \(String(describing: receiver.outcome))"); continue }
            }
        }
    }
}
