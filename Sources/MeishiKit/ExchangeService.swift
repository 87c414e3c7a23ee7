import Foundation
import MeishiCard
import MeishiCrypto
import MeishiProximity
import MeishiStore

/// `meishi exchange`: runs the protocol with a peer and stores its card once both sides are done.
public struct ExchangeService: Sendable {
    public struct Outcome: Sendable {
        public let contact: Contact
        public let stored: StoreOutcome
        /// The 6-digit code shown; nil when `--code` was confirmed by the PAKE.
        public let code: String?
        public let peerAddress: String
        /// How the session was authenticated.
        public let authentication: Authentication
        /// The common-friends phase: how it ended and, when it ran, my contacts the peer also knows.
        public let commonFriends: CommonFriendsReport?
        /// The message phase: ours delivered or not, theirs stored or not.
        public let messages: ExchangeMessageOutcome?
        /// The peer handed over key rotations from a DID held here: the contact moved to the card's DID.
        public var rotated: RotationApplied?
        /// Through `--relay`: whether the session went direct or through the transit relay.
        public var path: RelayPath? = nil
    }

    /// `exchange --message`: a note for the person met, sealed for their card's key once it verified.
    public struct MessageOptions: Sendable {
        public var text: String
        public var lifetime: Int64
        public var once: Bool

        public init(text: String, lifetime: Int64, once: Bool) {
            self.text = text
            self.lifetime = lifetime
            self.once = once
        }
    }

    /// What `--friends`, `--max-set` and `--match` asked for.
    public struct FriendsOptions: Sendable {
        public var mode: FriendsMode
        public var maximumSetSize: Int
        public var matchEmails: Bool
        public var matchPhones: Bool
        public static let defaultMaximumSetSize = 10_000
        public static let standard = FriendsOptions(mode: .ecdh, maximumSetSize: defaultMaximumSetSize, matchEmails: false, matchPhones: false)

        public init(mode: FriendsMode, maximumSetSize: Int, matchEmails: Bool, matchPhones: Bool) {
            self.mode = mode
            self.maximumSetSize = maximumSetSize
            self.matchEmails = matchEmails
            self.matchPhones = matchPhones
        }
    }

    /// How the common-friends phase ended, with the shared contacts resolved (my names for them).
    public struct CommonFriendsReport: Sendable {
        public let outcome: CommonFriendsOutcome
        /// My contacts the peer also knows, by name; empty unless it ran.
        public let friends: [Contact]
        /// Bytes on the wire and wall time of the phase, this side.
        public let cost: CommonFriendsCost
    }

    /// What stood between the peers and a machine in the middle.
    public enum Authentication: String, Sendable {
        /// Both typed the same code and the PAKE confirmed it: trust `met`.
        case code
        /// A person compared the 6 digits: trust `met`.
        case digits
        /// Nobody compared anything (`--yes` without a code): trust `signed`.
        case none
    }

    /// What one exchange is asked to do: where the peer is, how the session is authenticated,
    /// what to share, the limits, and the post-card phases' options.
    public struct Request: Sendable {
        public var endpoint: ExchangeEndpoint
        /// With a code, the PAKE authenticates the session (trust `met`).
        public var code: ExchangeCode?
        public var level: DisclosureLevel
        public var only: Set<FieldName>?
        public var timeoutSeconds: Int64
        /// The peer's card must be signed within this many seconds of now, either way.
        public var maximumSkew: Int64
        /// Without a code: a person compares the digits (trust `met`), or `--yes` skips that (trust `signed`).
        public var confirmedByPerson: Bool
        public var friends: FriendsOptions = .standard
        public var message: MessageOptions?
        /// `--event`: recorded on the contact's meeting.
        public var event: String?

        public init(endpoint: ExchangeEndpoint, code: ExchangeCode?, level: DisclosureLevel, only: Set<FieldName>?, timeoutSeconds: Int64,
                    maximumSkew: Int64, confirmedByPerson: Bool, friends: FriendsOptions = .standard, message: MessageOptions? = nil,
                    event: String? = nil) {
            self.endpoint = endpoint
            self.code = code
            self.level = level
            self.only = only
            self.timeoutSeconds = timeoutSeconds
            self.maximumSkew = maximumSkew
            self.confirmedByPerson = confirmedByPerson
            self.friends = friends
            self.message = message
            self.event = event
        }
    }

    /// The person's side of an exchange as it happens: the digit question (its answer flows
    /// back), and what happens as values the application words (the TCP port once bound, a peer
    /// that failed, the `--verbose` steps).
    public struct Conversation: Sendable {
        public var confirm: @Sendable (String) async -> CodeAnswer
        public var events: @Sendable (ExchangeEvent) -> Void

        public init(confirm: @escaping @Sendable (String) async -> CodeAnswer, events: @escaping @Sendable (ExchangeEvent) -> Void) {
            self.confirm = confirm
            self.events = events
        }
    }

    public let home: Home

    public init(home: Home) { self.home = home }

    /// Runs one exchange as `request` says. Our card is signed when it is about to be sent; the
    /// peer's card is checked against `clock`.
    public func run(_ request: Request, identity: Identity, card: Card, clock: @escaping @Sendable () -> Int64,
                    conversation: Conversation) async throws(MeishiError) -> Outcome {
        let pairings = try Pairings(request, home: home, identity: identity, card: card, clock: clock, conversation: conversation, table: false)
        let result: ExchangeResult
        do {
            result = try await ExchangeTransport.exchange(request.endpoint, timeoutSeconds: request.timeoutSeconds,
                                                          participant: pairings.participant)
        } catch {
            throw .exchange(error)
        }
        conversation.events(.step(.storingCard(database: home.databasePath)))
        return try pairings.store(result)
    }
}

/// What every pairing of one run shares: the participant (our card, the verifier, the code, the
/// post-card phases, each session its own), and how a finished pairing's card is stored.
struct Pairings: Sendable {
    var participant: ExchangeParticipant
    let request: ExchangeService.Request
    let contacts: ContactsService
    let store: ContactStore
    let friendSet: FriendSet
    let early: StoredOnce
    let clock: @Sendable () -> Int64
    /// How the meeting is recorded when it is not told by the code: at a table or through a relay.
    let meetingPlace: MeetingKind?
    /// Ours: a card of this DID is refused (`ownCard`) without reading the identity file again.
    let ownDID: String

    /// The meeting's kind: a table or a relay, else a code (CPace) or an exchange (digits, --yes).
    func meetingKind(code: Bool) -> MeetingKind { meetingPlace ?? (code ? .code : .exchange) }

    /// At a table (`table`) each pair blinds its own common-friends set (no blinding is shared
    /// between peers), and every pair compares the contacts held before the table began.
    init(_ request: ExchangeService.Request, home: Home, identity: Identity, card: Card, clock: @escaping @Sendable () -> Int64,
         conversation: ExchangeService.Conversation, table: Bool) throws(MeishiError) {
        let (code, level, only, maximumSkew, confirmedByPerson, friends, message, event) = (
            request.code, request.level, request.only, request.maximumSkew, request.confirmedByPerson, request.friends, request.message,
            request.event)
        let place: MeetingKind? = if table { .table } else if case .relay = request.endpoint { .relay } else { nil }
        // Fail before the network if the share or the store cannot be had; store into it afterwards.
        // Signed, not only disclosed: a share too big to carry ends here, before a code is spent on it.
        _ = try CardService.sign(card, level: level, only: only, identity: identity, now: clock())
        let contacts = ContactsService(home: home)
        let store = try contacts.open()
        var participant = ExchangeParticipant(
            card: {
                (try CardService.sign(card, level: level, only: only, identity: identity, now: clock()), identity.signingKey)
            },
            verifier: CardVerifier(maximumSkew: maximumSkew, maximumAge: maximumSkew, clock: clock), code: code,
            confirmCode: conversation.confirm, events: conversation.events)
        participant.table = table
        // Without a code and without a person comparing digits the phase is skipped: nothing to blind ahead.
        let friendSet = try FriendSet(store: store, options: friends, blindAhead: !table && (code != nil || confirmedByPerson))
        let friendsRequest = CommonFriendsRequest(
            mode: friends.mode, maximumSetSize: friends.maximumSetSize,
            codeComparedByPerson: confirmedByPerson, elements: { peerDID in friendSet.elements(excluding: peerDID) })
        // Post-card phase 2: the peer's card is verified and acknowledged by then. Its envelope is
        // checked against the stored contact (key, trust), so the card is stored first, once.
        let authenticated = code != nil || confirmedByPerson
        let early = StoredOnce()
        if let message {
            // Refuse a note that cannot be sent before the network, not after the cards.
            do { try MessageEnvelope.validate(text: message.text, lifetime: message.lifetime) } catch { throw .messageText(error) }
        }
        let messageHooks = ExchangeMessages(
            authenticated: authenticated,
            outgoing: { peer throws(MessageEnvelopeError) in
                guard let message else { return nil }
                do {
                    return try MessageService.makeEnvelope(text: message.text, for: peer, identity: identity, lifetime: message.lifetime,
                                                           once: message.once, now: clock())
                } catch {
                    guard case MeishiError.messageText(let e) = error else { throw .malformed("\(error)") }
                    throw e
                }
            },
            incoming: { bytes, peer in
                do {
                    try early.store(peer.payload.senderDID) { () throws(MeishiError) in
                        try contacts.add(peer, trust: .met, source: .exchange, now: clock(),
                                         meeting: Meeting(at: clock(), how: place ?? (code != nil ? .code : .exchange), event: event, gave: level),
                                         in: store)
                    }
                } catch {
                    return .refused(.storeFailed)
                }
                return MessageService.accept(bytes, from: peer.payload.senderDID, identity: identity, store: store, now: clock())
            })
        // The post-card phases, in their order (docs/PROTOCOL.md §8): each session gets its own.
        // My key rotations, handed over in phase 3 (an empty frame when I never rotated).
        let myRotations = try IdentityStore(home: home).myRotations().flatMap(\.bytes)
        participant.phases = { [CommonFriendsExchangePhase(friendsRequest), ExchangeMessagePhase(messageHooks),
                                RotationPhase(statements: myRotations)] }
        self.participant = participant
        self.request = request
        self.contacts = contacts
        self.store = store
        self.friendSet = friendSet
        self.early = early
        self.clock = clock
        meetingPlace = place
        ownDID = identity.did
    }

    /// Stores the peer of a finished pairing (once: the message phase may have stored it) with its common friends.
    func store(_ result: ExchangeResult) throws(MeishiError) -> ExchangeService.Outcome {
        let authentication: ExchangeService.Authentication = switch result.confirmation {
        case .pake: .code
        case .digits: request.confirmedByPerson ? .digits : .none
        }
        var stored: StoreOutcome
        var rotated: RotationApplied?
        let now = clock(), trust: Trust = authentication == .none ? .signed : .met
        let meeting = Meeting(at: now, how: meetingKind(code: authentication == .code), event: request.event, gave: request.level)
        let friendsPhase = result.phase(CommonFriendsExchangePhase.self)
        let comparison: FriendComparison? = if case .ran(let mode, let indices, let peerSetSize)? = friendsPhase?.outcome {
            FriendComparison(friendIDs: friendSet.contactIDs(indices, excluding: result.peerCard.payload.senderDID), mode: mode.rawValue,
                             at: now, peerSetSize: peerSetSize)
        } else {
            nil
        }
        // Recorded with the card, in its transaction, when the card is stored here; else after it.
        var comparisonLeft = comparison
        if let chain = result.phase(RotationPhase.self)?.received, !chain.isEmpty,
           case .success(let applied)? = try? store.applyRotation(
               chain, card: Contact(card: result.peerCard, trust: trust, source: .exchange, seen: now),
               held: nil, now: now, meeting: early.outcome(result.peerCard.payload.senderDID) == nil ? meeting : nil) {
            // A contact held under an old DID of the peer moved to the card's DID (one stored by
            // the message phase under the new DID just now is folded into it).
            rotated = applied
            stored = applied.card
        } else if let already = early.outcome(result.peerCard.payload.senderDID) {
            stored = already
        } else {
            stored = try contacts.add(result.peerCard, trust: trust, source: .exchange, now: now,
                                      meeting: meeting, comparison: comparison, ownDID: ownDID, in: store)
            comparisonLeft = nil
        }
        var report: ExchangeService.CommonFriendsReport?
        if let friendsPhase, let outcome = friendsPhase.outcome {
            var shared: [Contact] = []
            if comparison != nil {
                do {
                    if let comparisonLeft { try store.record(comparisonLeft, of: stored.contact.id!) }
                    shared = try store.commonFriends(of: stored.contact.id!)?.friends ?? []
                } catch { throw .store(error) }
            }
            report = ExchangeService.CommonFriendsReport(outcome: outcome, friends: shared, cost: friendsPhase.cost)
        }
        return ExchangeService.Outcome(contact: stored.contact, stored: stored, code: result.code, peerAddress: result.peerAddress,
                                       authentication: authentication, commonFriends: report,
                                       messages: result.phase(ExchangeMessagePhase.self)?.outcome,
                                       rotated: rotated, path: result.path)
    }
}

/// Each peer's contact, by DID, when the message phase had to store it before its exchange returned.
final class StoredOnce: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String: StoreOutcome] = [:]

    func outcome(_ did: String) -> StoreOutcome? { lock.withLock { stored[did] } }

    func store(_ did: String, _ add: () throws(MeishiError) -> StoreOutcome) throws(MeishiError) {
        lock.lock()
        defer { lock.unlock() }
        if stored[did] == nil { stored[did] = try add() }
    }
}

/// My side of a common-friends comparison: the elements of my signed contacts, blinded ahead on a
/// thread of its own (the ecdh modes) while the network and the people do their part.
final class FriendSet: Sendable {
    /// DIDs, then (with `--match`) "email:…" and "phone:…" values; each with the contacts it stands for.
    let dids: [(element: [UInt8], contacts: [Int64])]
    let extras: [(element: [UInt8], contacts: [Int64])]
    let candidates: [FriendCandidate]
    let ahead: Task<PrivateSetIntersection.Blinding, Never>?

    init(store: ContactStore, options: ExchangeService.FriendsOptions, blindAhead: Bool) throws(MeishiError) {
        // The peer is unknown yet: every signed contact is a candidate; `elements(excluding:)` drops the peer.
        do {
            candidates = options.mode == .off ? []
                : try store.friendCandidates(excludingDID: "", values: options.matchEmails || options.matchPhones)
        } catch { throw .store(error) }
        dids = candidates.map { (Array($0.did.utf8), [$0.contactID]) }
        var values: [String: [Int64]] = [:]
        for c in candidates {
            if options.matchEmails { for e in c.emails { values["email:" + e, default: []].append(c.contactID) } }
            if options.matchPhones { for p in c.phones { values["phone:" + p, default: []].append(c.contactID) } }
        }
        extras = values.keys.sorted().map { (Array($0.utf8), values[$0]!) }
        if blindAhead, options.mode >= .ecdh, options.mode != .off {
            let all = dids.map(\.element) + extras.map(\.element)
            // On a thread of its own: on the event loop's thread (a pairwise exchange's tasks) it held
            // the network for its whole time, 16 s for 10,000 contacts with --match (a tester's finding).
            ahead = Task { await BlockingWork.run { PrivateSetIntersection.Blinding(elements: all) } }
        } else {
            ahead = nil
        }
    }

    /// Indices (into `dids + extras`) standing only for the peer: never elements.
    func peerIndices(_ peerDID: String) -> Set<Int> {
        guard let peer = candidates.first(where: { $0.did == peerDID })?.contactID else { return [] }
        let all = dids.map(\.contacts) + extras.map(\.contacts)
        return Set(all.indices.filter { all[$0] == [peer] })
    }

    func elements(excluding peerDID: String) -> CommonFriendsElements {
        let removed = peerIndices(peerDID)
        let keptDIDs = dids.indices.filter { !removed.contains($0) }.map { dids[$0].element }
        let keptExtras = extras.indices.filter { !removed.contains(dids.count + $0) }.map { extras[$0].element }
        guard let ahead else { return CommonFriendsElements(dids: keptDIDs, extras: keptExtras) }
        return CommonFriendsElements(dids: keptDIDs, extras: keptExtras, blinding: { await ahead.value.removing(removed) })
    }

    /// The contacts behind shared element `indices` (of `elements(excluding: peerDID)`), without the peer.
    func contactIDs(_ indices: [Int], excluding peerDID: String) -> [Int64] {
        let removed = peerIndices(peerDID)
        let kept = (dids.map(\.contacts) + extras.map(\.contacts)).enumerated().filter { !removed.contains($0.offset) }.map(\.element)
        let peer = candidates.first(where: { $0.did == peerDID })?.contactID
        return Array(Set(indices.flatMap { kept[$0] }).subtracting(peer.map { [$0] } ?? [])).sorted()
    }
}
