import Foundation
import MeishiCard
import MeishiCrypto
import MeishiProximity
import MeishiStore

/// `meishi card push`: my current signed card to contacts running `listen`, over the notes
/// channel (docs/PROTOCOL.md §9.7); and what `listen` does with a pushed card.
public enum CardPushService {
    /// One contact to push to, at a level.
    public struct Target: Sendable {
        public let contact: Contact
        public let level: DisclosureLevel
    }

    /// What one push came to.
    public enum Outcome: Equatable, Sendable {
        /// Stored there as the newer card.
        case delivered(address: NoteAddress)
        /// The listener refused it (it holds this card or a newer one, …).
        case refused(MessageRefusal, address: NoteAddress)
        /// Nobody answered for the contact in time, or the connection failed.
        case notReachable(MessageDeliveryFailure)
        /// The contact's message key cannot be used (no shared secret with it).
        case unusableKey(CryptoError)
    }

    public struct Result: Sendable {
        public let target: Target
        public let outcome: Outcome
    }

    /// The contacts `refs` name (default: every contact holding a card of mine, `pushTargets`),
    /// each with the level it is pushed at: `level`, else the level it last received, else
    /// `fallback`. A contact that cannot be pushed to (unsigned, without a key) is refused.
    public static func targets(_ refs: [String], level: DisclosureLevel?, fallback: DisclosureLevel,
                               store: ContactStore) throws(MeishiError) -> [Target] {
        var contacts: [Contact] = []
        if refs.isEmpty {
            do { contacts = try store.pushTargets() } catch { throw .store(error) }
        } else {
            for ref in refs {
                let c: Contact
                do { c = try store.resolve(ref) } catch { throw .store(error) }
                _ = try MessageService.messageKey(of: c)
                if !contacts.contains(where: { $0.id == c.id }) { contacts.append(c) }
            }
        }
        var targets: [Target] = []
        for c in contacts {
            let last: DisclosureLevel?
            do { last = try store.lastGivenLevel(to: c.id!) } catch { throw .store(error) }
            targets.append(Target(contact: c, level: level ?? last ?? fallback))
        }
        return targets
    }

    /// Pushes my card, signed at each target's level, to every target at once (each found by its
    /// pair's probe, or at `peer`); records each delivered push.
    /// A key rotation to hand over with the card: my statements, and the X25519 key they replace
    /// (while it is kept) to reach the contacts that know only it.
    public struct Rotation: Sendable {
        public let statements: [RotationStatement]
        public let previous: PreviousBoxKey?

        public init(statements: [RotationStatement], previous: PreviousBoxKey?) {
            self.statements = statements
            self.previous = previous
        }
    }

    /// Pushes my card, signed at each target's level, to every target at once (each found by its
    /// pair's probe, or at `peer`); records each delivered push. With `rotation`, a target that
    /// has had no card of mine since the last rotation is sent the statements with the card,
    /// under the old X25519 key.
    public static func push(_ card: Card, to targets: [Target], identity: Identity, store: ContactStore, peer: (host: String, port: Int)?,
                            relay: RelayServers? = nil, rotation: Rotation? = nil, timeoutSeconds: Double, clock: @escaping @Sendable () -> Int64,
                            steps: @escaping @Sendable (DeliveryStep) -> Void) async throws(MeishiError) -> [Result] {
        var rotating: Set<Int64> = []
        if let rotation, let last = rotation.statements.last, rotation.previous != nil {
            for t in targets {
                let given: Bool
                do { given = try store.gaveCard(to: t.contact.id!, since: last.time) } catch { throw .store(error) }
                if !given { rotating.insert(t.contact.id!) }
            }
        }
        let chain = rotation.map { $0.statements.flatMap(\.bytes) }
        let rotatingIDs = rotating
        // Signed once per level, before the network: a card that cannot be shared fails first.
        var signed: [DisclosureLevel: [UInt8]] = [:]
        let now = clock()
        // A contact takes only a card signed later than the one it holds (seconds): a card edited
        // and pushed again within the second of the last push (or of a meeting) is signed a second
        // after it, or it would be refused as not newer.
        let latest: Int64?
        do { latest = try store.latestCardGiven() } catch { throw .store(error) }
        let signedAt = max(now, (latest ?? now - 1) + 1)
        for level in Set(targets.map(\.level)) {
            signed[level] = try CardService.sign(card, level: level, only: nil, identity: identity, now: signedAt).bytes
        }
        let payloads = signed
        let results = await withTaskGroup(of: (Int, Outcome).self) { group in
            for (i, target) in targets.enumerated() {
                group.addTask {
                    let old = rotatingIDs.contains(target.contact.id!) ? rotation?.previous?.boxKey : nil
                    let mine = old ?? identity.boxKey
                    let keys: PairKeys
                    do throws(CryptoError) { keys = try PairKeys(mine: mine, theirs: target.contact.pubKey!, sending: true) } catch {
                        return (i, Outcome.unusableKey(error))
                    }
                    let outcome: Outcome
                    do throws(MessageDeliveryFailure) {
                        let (verdict, address) = try await MessageTransport.push(
                            card: payloads[target.level]!, rotation: old == nil ? nil : chain,
                            to: peer.map { .peer(host: $0.host, port: $0.port) } ?? relay.map { .relay($0) } ?? .probe(interface: nil),
                            keys: keys, staticKey: mine, clock: clock, seconds: timeoutSeconds, steps: steps)
                        switch verdict {
                        case .stored: outcome = .delivered(address: address)
                        case .refused(let r): outcome = .refused(r, address: address)
                        }
                    } catch {
                        outcome = .notReachable(error)
                    }
                    return (i, outcome)
                }
            }
            var out = [Outcome?](repeating: nil, count: targets.count)
            for await (i, o) in group { out[i] = o }
            return out.map { $0! }
        }
        var out: [Result] = []
        for (target, outcome) in zip(targets, results) {
            if case .delivered = outcome {
                do { try store.record(CardPush(contactID: target.contact.id!, at: now, level: target.level, cardTimestamp: signedAt)) } catch {
                    throw .store(error)
                }
            }
            out.append(Result(target: target, outcome: outcome))
        }
        return out
    }

    /// Checks and applies a key rotation pushed by `senderDID` (the contact the handshake
    /// authenticated, under its old key): the statements must verify and chain from that DID, the
    /// card be of the chain's last new DID; the contact then moves to it (`applyRotation`) and the
    /// card is stored as its newer card. What was applied comes back with the verdict.
    public static func acceptRotation(_ statements: [UInt8], card bytes: [UInt8], from senderDID: String, store: ContactStore,
                                      now: Int64, verifier: CardVerifier) -> (CardPushVerdict, RotationApplied?) {
        guard bytes.count <= ProximityPayload.maximumEncodedSize else { return (.refused(.oversized), nil) }
        guard let chain = try? RotationStatement.verifyChain(statements) else { return (.refused(.invalidRotation), nil) }
        guard let card = try? verifier.verify(bytes) else { return (.refused(.invalidCard), nil) }
        guard card.payload.senderDID == chain.last!.newDID else { return (.refused(.otherDID), nil) }
        guard let held = try? store.contact(did: senderDID) else {
            if let r = try? store.rotation(replacing: senderDID) {
                // The same rotation and card again (its answer was lost): acknowledged again, nothing changes.
                if r.newDID == chain.last!.newDID, let now = try? store.contact(did: r.newDID),
                   now.cardTimestamp == card.payload.timestamp {
                    return (.stored(timestamp: card.payload.timestamp), nil)
                }
                return (.refused(r.newDID == chain.last!.newDID ? .rotationApplied : .superseded), nil)
            }
            return (.refused(.unknownSender), nil)
        }
        guard held.trust != .unsigned else { return (.refused(.unsignedSender), nil) }
        guard chain.contains(where: { $0.oldDID == senderDID }) else { return (.refused(.rotationOfUnknownKey), nil) }
        let incoming = Contact(card: card, trust: .signed, source: .push, seen: now)
        switch try? store.applyRotation(chain, card: incoming, held: senderDID, now: now) {
        case .success(let applied)?: return (.stored(timestamp: card.payload.timestamp), applied)
        case .failure(.alreadyApplied)?: return (.refused(.rotationApplied), nil)
        case .failure(.replacedAlready)?: return (.refused(.superseded), nil)
        case .failure(.notNewer)?: return (.refused(.notNewer), nil)
        case .failure(.cardOfAnotherDID)?: return (.refused(.otherDID), nil)
        case .failure(.neverHeld)?: return (.refused(.rotationOfUnknownKey), nil)
        case nil: return (.refused(.storeFailed), nil)
        }
    }

    /// Checks and stores a card pushed by `senderDID` (the contact the handshake authenticated):
    /// it must verify like any card, be that contact's (not another DID's), and be newer than the
    /// card held; it is then stored (the earlier one stays in the history). The store outcome
    /// comes back with the verdict so `listen` can say what changed.
    public static func accept(_ bytes: [UInt8], from senderDID: String, store: ContactStore, now: Int64,
                              verifier: CardVerifier) -> (CardPushVerdict, StoreOutcome?) {
        guard bytes.count <= ProximityPayload.maximumEncodedSize else { return (.refused(.oversized), nil) }
        guard let card = try? verifier.verify(bytes) else { return (.refused(.invalidCard), nil) }
        guard card.payload.senderDID == senderDID else { return (.refused(.otherDID), nil) }
        guard let held = try? store.contact(did: senderDID) else {
            // Pushed under a key the contact has since replaced (a push racing its rotation, or
            // whoever holds the old key now): the contact is held under the new key.
            if (try? store.rotation(replacing: senderDID)) != nil { return (.refused(.superseded), nil) }
            return (.refused(.unknownSender), nil)
        }
        guard held.trust != .unsigned else { return (.refused(.unsignedSender), nil) }
        guard card.payload.timestamp > held.cardTimestamp else { return (.refused(.notNewer), nil) }
        // The trust stays what it was (`store` keeps the higher): a push proves the key, not a meeting.
        let incoming = Contact(card: card, trust: .signed, source: .push, seen: now)
        guard let outcome = try? store.store(incoming) else { return (.refused(.storeFailed), nil) }
        return (.stored(timestamp: card.payload.timestamp), outcome)
    }
}
