import Foundation
import Logging
import MeishiCard
import MeishiCrypto
import MeishiProximity
import MeishiStore

/// Ephemeral messages (`meishi send`, `listen`, `inbox`): a short note to a verified contact,
/// sealed end to end, kept sealed on disk, gone when it expires.
public struct MessageService: Sendable {
    /// A delivered message.
    public struct SendOutcome: Sendable {
        public let contact: Contact
        public let envelope: MessageEnvelope
        /// The receiver had it already (a retry after a lost acknowledgement): stored once.
        public let alreadyDelivered: Bool
        public let peerAddress: NoteAddress
    }

    /// What a running `listen` tells: its listener's events, and the store's.
    public enum ListenEvent: Sendable, Equatable {
        case listener(ListenerEvent)
        /// Expired notes could not be purged (the store's error); told once, tried again.
        case expiredNotPurged(error: String)
    }

    /// What one `listen` run did.
    public struct ListenOutcome: Sendable {
        public let port: Int
        public let stored: Int
        public let duplicates: Int
        /// Messages and pushed cards refused.
        public let refused: Int
        /// Newer cards pushed by contacts (`card push`) and stored.
        public var cards = 0
    }

    /// A note `listen` has just stored, for whoever reports it (the journal, a desktop notification).
    public struct ReceivedNote: Sendable {
        public let sender: Contact
        public let expires: Int64
        /// Sent `--once`: its text is meant to be shown once, by `inbox`.
        public let once: Bool
        /// The text, only when `listen` was asked to open it and the note was not sent `--once`.
        public let text: String?
    }

    /// A message opened for the inbox.
    public struct InboxMessage: Sendable {
        public let id: Int64
        public let senderDID: String
        /// The sender's name and trust as stored now (nil when the contact was deleted).
        public let sender: Contact?
        public let created: Int64
        public let received: Int64
        public let expires: Int64
        public let once: Bool
        /// Shown before this listing (only with `includeShown`).
        public let shownBefore: Bool
        /// The text, or nil when it cannot be opened (the sender's contact was deleted or changed key).
        public let text: String?
    }

    public let home: Home
    public let clock: @Sendable () -> Int64

    public init(home: Home, clock: @escaping @Sendable () -> Int64) {
        self.home = home
        self.clock = clock
    }

    var contacts: ContactsService { ContactsService(home: home, clock: clock) }

    // MARK: The two steps any delivery uses (send/listen here, and the message phase of `exchange`)

    /// Seals `text` for `contact`: refuses a contact without a verified card carrying an X25519 key.
    public static func makeEnvelope(text: String, for contact: Contact, identity: Identity, lifetime: Int64, once: Bool,
                                    now: Int64) throws(MeishiError) -> MessageEnvelope {
        try makeEnvelope(text: text, to: contact.did, key: try messageKey(of: contact), identity: identity, lifetime: lifetime, once: once,
                         now: now)
    }

    /// Seals `text` for the holder of a card that just verified (its X25519 key is covered by the
    /// card's signature): the exchange's message phase, before the card is stored.
    public static func makeEnvelope(text: String, for card: VerifiedCard, identity: Identity, lifetime: Int64, once: Bool,
                                    now: Int64) throws(MeishiError) -> MessageEnvelope {
        try makeEnvelope(text: text, to: card.payload.senderDID, key: card.payload.pubKey, identity: identity, lifetime: lifetime,
                         once: once, now: now)
    }

    private static func makeEnvelope(text: String, to did: String, key: X25519.PublicKey, identity: Identity, lifetime: Int64,
                                     once: Bool, now: Int64) throws(MeishiError) -> MessageEnvelope {
        do {
            return try MessageEnvelope.seal(text: text, created: now, lifetime: lifetime, once: once, senderDID: identity.did,
                                            recipientDID: did, senderKey: identity.boxKey, recipientKey: key)
        } catch {
            throw .messageText(error)
        }
    }

    /// Checks and stores an envelope received from `senderDID` (the peer the session authenticated):
    /// refused with a reason and nothing stored when the sender is unknown or unsigned, the message
    /// is for someone else, does not open, has expired or is oversized; a repeated id is
    /// acknowledged and stored once.
    public static func accept(_ bytes: [UInt8], from senderDID: String, identity: Identity, store: ContactStore, now: Int64) -> MessageVerdict {
        func refuse(_ r: MessageRefusal) -> MessageVerdict { .refused(r) }
        guard bytes.count <= MessageEnvelope.maximumSize else { return refuse(.oversized) }
        let envelope: MessageEnvelope
        do { envelope = try MessageEnvelope(parsing: bytes) } catch {
            if case .tooLarge = error { return refuse(.oversized) }
            return refuse(.malformed)
        }
        guard envelope.senderDID == senderDID else { return refuse(.authenticationFailed) }
        guard envelope.recipientDID == identity.did else { return refuse(.wrongRecipient) }
        guard let contact = try? store.contact(did: senderDID), let key = contact.pubKey else { return refuse(.unknownSender) }
        guard contact.trust != .unsigned else { return refuse(.unsignedSender) }
        guard envelope.expires > now else { return refuse(.expired) }
        // Opening proves the box is the sender's for us; the text is dropped at once.
        guard var text = try? envelope.open(from: key, with: identity.boxKey) else { return refuse(.authenticationFailed) }
        wipe(&text)
        if (try? store.hasExpiredMessages(now: now)) == true { _ = try? store.purgeExpiredMessages(now: now) }
        // The receiver's clock bounds the expiry: a note "created" years ahead lives at most its
        // lifetime from now, never past `inbox --purge` (issue 22, finding 6).
        let expires = min(envelope.expires, now + (envelope.expires - envelope.created))
        let message = StoredMessage(senderDID: senderDID, received: now, expires: expires, once: envelope.once, envelope: bytes,
                                    senderKey: key.rawRepresentation)
        switch try? store.storeMessage(message, idHash: idHash(envelope.id)) {
        case .stored?: return .stored
        case .duplicate?: return .duplicate
        case nil: return refuse(.storeFailed)
        }
    }

    /// What the store remembers of a message id: BLAKE2b-256("meishi-message-id-v1" ‖ id), never the id itself.
    public static func idHash(_ id: [UInt8]) -> [UInt8] {
        BLAKE2b.hash(Array("meishi-message-id-v1".utf8) + id, length: 32).exposedBytes()
    }

    // MARK: send, listen, inbox

    /// The contact `ref` names, checked that it can be sent a message (signed, with a message
    /// key), before anything is asked or sent; `me` makes a ref naming my own DID say so rather
    /// than "no contact matches".
    public func recipient(_ ref: String, me: @autoclosure () -> PublicIdentity?) throws(MeishiError) -> Contact {
        let store = try contacts.open()
        let contact: Contact
        do { contact = try store.resolve(ref) } catch {
            let r = ref.trimmingCharacters(in: .whitespaces)
            if case .notFound = error, r.count >= 8, let did = ContactStore.didPrefix(r), let me = me(), me.did.hasPrefix(did) {
                throw .cannotMessage(id: 0, name: me.did, .yourself)
            }
            throw .store(error)
        }
        _ = try Self.messageKey(of: contact)
        return contact
    }

    /// The contact's X25519 key, when it may be sent a message: a signed card's, never an unsigned contact's.
    static func messageKey(of contact: Contact) throws(MeishiError) -> X25519.PublicKey {
        guard contact.trust != .unsigned else { throw .cannotMessage(id: contact.id ?? 0, name: contact.name ?? contact.did, .unsigned) }
        guard let key = contact.pubKey else { throw .cannotMessage(id: contact.id ?? 0, name: contact.name ?? contact.did, .noKey) }
        return key
    }

    /// Sends `text` to `contact` (from `recipient`): to `peer` when given, through the `relay`
    /// servers when given, else to whichever listener answers the pair's probe; gives up after
    /// `timeoutSeconds` (`.delivery(.notDelivered)`).
    public func send(text: String, to contact: Contact, identity: Identity, lifetime: Int64, once: Bool, peer: (host: String, port: Int)?,
                     relay: RelayServers? = nil, timeoutSeconds: Double,
                     steps: @escaping @Sendable (DeliveryStep) -> Void) async throws(MeishiError) -> SendOutcome {
        let envelope = try Self.makeEnvelope(text: text, for: contact, identity: identity, lifetime: lifetime, once: once, now: clock())
        let keys: PairKeys
        do { keys = try PairKeys(mine: identity.boxKey, theirs: contact.pubKey!, sending: true) } catch {
            throw .cannotMessage(id: contact.id ?? 0, name: contact.name ?? contact.did, .noKey)
        }
        let verdict: MessageVerdict, label: NoteAddress
        do {
            let destination: MessageTransport.Destination = if let peer { .peer(host: peer.host, port: peer.port) }
                else if let relay { .relay(relay) } else { .probe(interface: nil) }
            (verdict, label) = try await MessageTransport.send(envelope, to: destination,
                                                               keys: keys, staticKey: identity.boxKey, clock: clock, seconds: timeoutSeconds,
                                                               steps: steps)
        } catch {
            throw .delivery(error)
        }
        if case .refused(let reason) = verdict { throw .delivery(.refused(reason)) }
        return SendOutcome(contact: contact, envelope: envelope, alreadyDelivered: verdict == .duplicate, peerAddress: label)
    }

    /// How often a running `listen` looks for expired notes to purge (a cheap read when none are due).
    static let purgeInterval: Double = 1

    /// Makes this machine reachable for known contacts for `seconds` (nil: until cancelled): serves
    /// senders on TCP `port` and answers only probes carrying one of its contacts' tags; with
    /// `relay`, also holds each contact's mailbox on that mailbox server (checked first: one that
    /// does not answer fails the run) and serves the senders who call there.
    public func listen(identity: Identity, port: Int, seconds: Int64?, answerProbes: Bool = true, relay: RelayServers? = nil,
                       connectionTimeout: Int64 = MessageTransport.connectionTimeout,
                       events: @escaping @Sendable (ListenEvent) -> Void,
                       received: @escaping @Sendable (Contact) -> Void = { _ in },
                       cardUpdated: @escaping @Sendable (StoreOutcome) -> Void = { _ in },
                       keyRotated: @escaping @Sendable (RotationApplied) -> Void = { _ in },
                       note: (@Sendable (ReceivedNote) -> Void)? = nil, openingText: Bool = false,
                       listening: @escaping @Sendable (Int, Int) -> Void) async throws(MeishiError) -> ListenOutcome {
        let store = try contacts.open()
        let known: [Contact]
        do { known = try store.contactsWithMessageKeys() } catch { throw .store(error) }
        // Contacts added while it runs (a card swapped meanwhile) are picked up on their first probe.
        let seenUpTo = HighestID(known.compactMap(\.id).max() ?? 0)
        let table = PairTagTable(mine: identity.boxKey, contacts: known.map { ($0.did, $0.pubKey!) }, newcomers: {
            guard let fresh = try? store.contactsWithMessageKeys(after: seenUpTo.value) else { return [] }
            seenUpTo.raise(to: fresh.compactMap(\.id).max() ?? 0)
            return fresh.map { ($0.did, $0.pubKey!) }
        })
        if let relay {
            do { try await MessageTransport.checkRelay(relay) } catch { throw .delivery(error) }
        }
        let listener: MessageTransport.Listener
        do { listener = try await MessageTransport.bind(host: nil, port: port) } catch { throw .delivery(error) }
        let clock = self.clock
        var responder: MessageProbing.Responder?
        if answerProbes {
            responder = await MessageProbing.Responder.start(tcpPort: listener.port, table: table, clock: clock,
                                                             events: { events(.listener($0)) })
        }
        let boundPort = listener.port  // read while bound: a closed channel has no address
        listening(boundPort, table.count)
        let counts = Counts()
        let receiver = MessageReceiver(staticKey: identity.boxKey, table: table, accept: { bytes, did in
            let verdict = Self.accept(bytes, from: did, identity: identity, store: store, now: clock())
            counts.add(verdict)
            if verdict == .stored, let c = try? store.contact(did: did) {
                received(c)
                note?(Self.receivedNote(bytes, from: c, identity: identity, now: clock(), openingText: openingText))
            }
            return verdict
        }, acceptCard: { bytes, did in
            let (verdict, outcome) = CardPushService.accept(bytes, from: did, store: store, now: clock(), verifier: CardVerifier(clock: clock))
            counts.add(verdict)
            if let outcome { cardUpdated(outcome) }
            return verdict
        }, acceptRotation: { statements, bytes, did in
            let (verdict, applied) = CardPushService.acceptRotation(statements, card: bytes, from: did, store: store, now: clock(),
                                                                    verifier: CardVerifier(clock: clock))
            counts.add(verdict)
            if let applied {
                // Its probes and connections come under the new key from now on.
                if let key = applied.contact.pubKey { table.add(applied.contact.did, key: key) }
                keyRotated(applied)
            }
            return verdict
        }, clock: clock, events: { events(.listener($0)) })
        // Notes that expire while it runs are purged (and the WAL checkpointed) within a second or
        // so, not when the next note or command happens to open the store (issue 22, finding 13).
        let purging = Task {
            var failed = false
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(Self.purgeInterval))
                let now = clock()
                guard (try? store.hasExpiredMessages(now: now)) == true else { continue }
                do { try store.purgeExpiredMessages(now: now) } catch {
                    if !failed { events(.expiredNotPurged(error: "\(error)")) }
                    failed = true
                }
            }
        }
        await MessageTransport.serve(listener, forSeconds: seconds, connectionTimeout: connectionTimeout, relay: relay, receiver: receiver)
        purging.cancel()
        await purging.value
        await responder?.stop()
        let (stored, duplicates, refused) = counts.values
        var outcome = ListenOutcome(port: boundPort, stored: stored, duplicates: duplicates, refused: refused)
        outcome.cards = counts.cards
        return outcome
    }

    /// What `listen` reports of a note it stored: opened again only when asked, and never the text
    /// of a note sent `--once` (its sender asked that it be shown once, by `inbox`).
    static func receivedNote(_ bytes: [UInt8], from sender: Contact, identity: Identity, now: Int64,
                             openingText: Bool) -> ReceivedNote {
        let envelope = try? MessageEnvelope(parsing: bytes)
        let once = envelope?.once ?? false
        let text = openingText && !once ? sender.pubKey.flatMap { key in try? envelope?.open(from: key, with: identity.boxKey) } : nil
        let expires = envelope.map { min($0.expires, now + ($0.expires - $0.created)) } ?? now
        return ReceivedNote(sender: sender, expires: expires, once: once, text: text)
    }

    final class HighestID: @unchecked Sendable {
        private let lock = NSLock()
        private var id: Int64
        init(_ id: Int64) { self.id = id }
        var value: Int64 { lock.withLock { id } }
        func raise(to n: Int64) { lock.withLock { id = max(id, n) } }
    }

    final class Counts: @unchecked Sendable {
        private let lock = NSLock()
        private var s = 0, d = 0, r = 0, c = 0
        var cards: Int { lock.withLock { c } }
        func add(_ v: CardPushVerdict) {
            lock.withLock {
                switch v {
                case .stored: c += 1
                case .refused: r += 1
                }
            }
        }
        func add(_ v: MessageVerdict) {
            lock.withLock {
                switch v {
                case .stored: s += 1
                case .duplicate: d += 1
                case .refused: r += 1
                }
            }
        }
        var values: (Int, Int, Int) { lock.withLock { (s, d, r) } }
    }

    /// Unexpired messages (with `includeShown`, those already read too), opened; marks them
    /// shown, which deletes those sent `--once`.
    public func inbox(identity: Identity, includeShown: Bool) throws(MeishiError) -> [InboxMessage] {
        let store = try contacts.open()
        let now = clock()
        let stored: [StoredMessage]
        do { stored = try store.messages(includeShown: includeShown, now: now) } catch { throw .store(error) }
        var out: [InboxMessage] = []
        for m in stored {
            let contact = try? store.contact(did: m.senderDID)
            let envelope = try? MessageEnvelope(parsing: Array(m.envelope))
            // The key it arrived with first (the contact may since be deleted or have a new card).
            let keys = [m.senderKey.flatMap { try? X25519.PublicKey(rawRepresentation: Array($0)) }, contact?.pubKey].compactMap { $0 }
            let text = envelope.flatMap { e in keys.lazy.compactMap { try? e.open(from: $0, with: identity.boxKey) }.first }
            out.append(InboxMessage(id: m.id!, senderDID: m.senderDID, sender: contact, created: envelope?.created ?? m.received,
                                    received: m.received, expires: m.expires, once: m.once, shownBefore: m.shownAt != nil, text: text))
        }
        do { try store.markShown(out.filter { $0.text != nil }.map(\.id), now: now) } catch { throw .store(error) }
        return out
    }

    /// Deletes expired messages now (`inbox --purge`); returns how many.
    public func purge() throws(MeishiError) -> Int {
        let store = try contacts.open(purging: false)
        do { return try store.purgeExpiredMessages(now: clock()) } catch { throw .store(error) }
    }
}
