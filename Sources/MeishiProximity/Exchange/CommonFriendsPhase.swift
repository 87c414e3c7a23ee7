import MeishiCard
import MeishiCrypto
import MeishiText

/// `--friends`: how two peers compare their contacts after the cards (docs/PROTOCOL.md §8).
/// Ordered from least to most private; a session runs the most private mode either side asked for.
public enum FriendsMode: String, CaseIterable, Comparable, Sendable {
    /// SHA-256 of each DID salted with the session transcript (Solidarity's way, salted).
    case hash
    /// Diffie-Hellman PSI over ristretto255.
    case ecdh
    /// `ecdh` with an RFC 9497 batched DLEQ proof on every returned list.
    case verified
    /// No comparison.
    case off

    var wireValue: UInt8 {
        switch self {
        case .off: 0
        case .hash: 1
        case .ecdh: 2
        case .verified: 3
        }
    }

    init?(wireValue: UInt8) {
        guard let m = Self.allCases.first(where: { $0.wireValue == wireValue }) else { return nil }
        self = m
    }

    private var privacy: Int { Int(wireValue == 0 ? 4 : wireValue) }
    public static func < (lhs: FriendsMode, rhs: FriendsMode) -> Bool { lhs.privacy < rhs.privacy }
}

/// What this side brings to a common-friends comparison.
public struct CommonFriendsRequest: Sendable {
    public var mode: FriendsMode
    /// The largest set accepted from the peer (`--max-set`); ours is refused by the peer above its own.
    public var maximumSetSize: Int
    /// A person compared the 6 digits (false with `--yes`); a code confirmed by the PAKE counts by itself.
    public var codeComparedByPerson: Bool
    /// Our elements for this peer (given its DID, which is never one of them), once the cards are exchanged.
    public var elements: @Sendable (_ peerDID: String) -> CommonFriendsElements

    public init(mode: FriendsMode, maximumSetSize: Int, codeComparedByPerson: Bool,
                elements: @escaping @Sendable (_ peerDID: String) -> CommonFriendsElements) {
        precondition(maximumSetSize >= 0 && maximumSetSize <= PrivateSetIntersection.maximumCount)
        self.mode = mode
        self.maximumSetSize = maximumSetSize
        self.codeComparedByPerson = codeComparedByPerson
        self.elements = elements
    }
}

/// One side's elements: results name them by index into `dids + extras`.
public struct CommonFriendsElements: Sendable {
    /// Distinct elements compared in every mode: contacts' DIDs (UTF-8).
    public var dids: [[UInt8]]
    /// Distinct further elements for the ecdh modes only (`--match`): "email:…", "phone:…".
    public var extras: [[UInt8]]
    /// The blinding of `dids + extras` (in that order) computed ahead on another task, to be
    /// awaited; nil: the phase computes it when it needs it.
    public var ahead: (@Sendable () async -> PrivateSetIntersection.Blinding)?

    public init(dids: [[UInt8]], extras: [[UInt8]], blinding ahead: (@Sendable () async -> PrivateSetIntersection.Blinding)? = nil) {
        self.dids = dids
        self.extras = extras
        self.ahead = ahead
    }

    /// The blinding: awaited when computed ahead, else computed now.
    public func blinding() async -> PrivateSetIntersection.Blinding {
        if let ahead { return await ahead() }
        return PrivateSetIntersection.Blinding(elements: dids + extras)
    }
}

/// Why the comparison did not run; both sides reach the same verdict from the two HELLOs.
public enum CommonFriendsSkip: Equatable, Sendable {
    case offHere, offByPeer
    /// Nobody compared the code on this side (`--yes` without `--code`), or on the peer's.
    case unauthenticatedHere, unauthenticatedByPeer
    /// Our set (`count`) is larger than the peer's cap, or the peer's larger than ours.
    case ourSetTooLarge(count: Int, peerLimit: Int)
    case peerSetTooLarge(count: Int, limit: Int)
}

/// How a comparison ended. A failure never undoes the card exchange before it.
public enum CommonFriendsOutcome: Sendable {
    /// It ran: `shared` are indices into `dids + extras` of our request (sorted); `peerSetSize` as announced.
    case ran(mode: FriendsMode, shared: [Int], peerSetSize: Int)
    case skipped(CommonFriendsSkip)
    /// The peer broke the protocol (or the connection ended); nothing was learned.
    case failed(CommonFriendsError)
}

/// What a comparison cost on this side: bytes on the wire (frames with their length prefix and
/// seal) and wall time from our HELLO to the end.
public struct CommonFriendsCost: Equatable, Sendable {
    public var bytesSent = 0
    public var bytesReceived = 0
    public var seconds = 0.0
    public init(bytesSent: Int = 0, bytesReceived: Int = 0, seconds: Double = 0) {
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.seconds = seconds
    }
}

/// What went wrong in a comparison.
public enum CommonFriendsError: Error, Equatable, Sendable {
    case protocolViolation(ExchangeError)
    case refused(PSIError)
    /// The peer stopped the comparison, with its reason (peer text: sanitise before showing).
    case abortedByPeer(String)
    /// The connection ended before the comparison did (the executable words it).
    case connection(ConnectionLoss)

    /// The reason an ABORT gives the peer (docs/PROTOCOL.md §8, "ABORT reasons"): fixed text the
    /// protocol defines. Not for showing here: the executable words a `CommonFriendsError` itself.
    public var wireReason: String {
        switch self {
        case .protocolViolation(let e): e.wireReason
        case .refused(.invalidPoint(let i)): "item \(i) of the peer's list is not a valid group element"
        case .refused(.duplicate(let i)): "item \(i) of the peer's list repeats an earlier one"
        case .refused(.wrongCount(let expected, let actual)): "the peer's list holds \(actual) items where it announced \(expected)"
        case .refused(.commitmentMismatch): "the peer's returned list does not match its commitment"
        case .refused(.proofInvalid): "the peer's proof does not verify (its list was reordered, substituted or made with another key)"
        case .abortedByPeer(let why): "the peer stopped: \(TerminalText.sanitized(why))"
        case .connection: "the connection ended"
        }
    }
}

/// The common-friends phase of an exchange session, after both ACKs (docs/PROTOCOL.md §8): a state
/// machine over sealed inner messages 0x50–0x5F, free of sockets. Both sides send HELLO at once and
/// decide the same way from the two; then ITEMS (chunked), and in the ecdh modes COMMIT, RETURNED
/// (chunked) and, `verified`, PROOF.
public final class CommonFriendsPhase {
    enum Inner: UInt8 {
        case hello = 0x50, items = 0x51, commit = 0x52, returned = 0x53, proof = 0x54, abort = 0x5F
    }
    /// Inner types this phase owns.
    public static let innerTypes: ClosedRange<UInt8> = 0x50...0x5F
    public static let version: UInt8 = 1
    static let helloByteCount = 15
    /// Items per ITEMS or RETURNED message: 2,000 × 32 bytes fits a 64 KiB frame with its seal.
    public static let itemsPerChunk = 2_000
    static let itemByteCount = 32

    let request: CommonFriendsRequest
    let elements: CommonFriendsElements
    let transcriptHash: [UInt8]
    /// 0 for the dialer, 1 for the listener: what a commitment is bound to.
    let role: UInt8
    let authenticated: Bool

    enum State {
        case awaitingHello
        /// The ecdh modes: the driver must supply our blinding (`blind(with:)`).
        case awaitingBlinding
        case receivingItems
        case awaitingCommit
        case receivingReturned
        case awaitingProof
        case done
    }
    private(set) var state = State.awaitingHello
    public private(set) var outcome: CommonFriendsOutcome?
    public var needsBlinding: Bool { state == .awaitingBlinding }

    private var mode = FriendsMode.off
    private var ownCount = 0
    private var peerCount = 0
    private var received: [UInt8] = []
    private var peerItems: Set<[UInt8]> = []
    private var ownHashes: [[UInt8]] = []
    private var peerPoints: [Ristretto255.Point] = []
    private var blinding: PrivateSetIntersection.Blinding?
    private var reblinded: [Ristretto255.Point] = []
    private var peerCommitment: [UInt8] = []
    private var peerPublicKey: Ristretto255.Point?
    private var returned: [Ristretto255.Point] = []

    public init(request: CommonFriendsRequest, elements: CommonFriendsElements, transcriptHash: [UInt8], role: ExchangeSession.Role,
                codeConfirmedByPAKE: Bool) {
        self.request = request
        self.elements = elements
        self.transcriptHash = transcriptHash
        self.role = role == .dialer ? 0 : 1
        authenticated = codeConfirmedByPAKE || request.codeComparedByPerson
    }

    /// Our HELLO: version, mode, flags (bit 0: authenticated), our cap, our DID and extra counts.
    /// The counts are 0 when the phase cannot run from our side (not authenticated, or off): a
    /// peer nobody vouched for learns nothing of our contacts, not even how many (issue 22, finding 11).
    public func hello() -> (type: UInt8, content: [UInt8]) {
        let tell = authenticated && request.mode != .off
        return (Inner.hello.rawValue, [Self.version, request.mode.wireValue, authenticated ? 1 : 0]
            + Self.u32(request.maximumSetSize) + Self.u32(tell ? elements.dids.count : 0) + Self.u32(tell ? elements.extras.count : 0))
    }

    /// Handles one inner message; returns the inner messages to send (type, content).
    public func receive(type: UInt8, content: [UInt8]) throws(CommonFriendsError) -> [(type: UInt8, content: [UInt8])] {
        guard let inner = Inner(rawValue: type) else { throw .protocolViolation(.malformedFrame("unknown common-friends message \(type)")) }
        if inner == .abort { throw .abortedByPeer(String(decoding: content.prefix(200), as: UTF8.self)) }
        switch (inner, state) {
        case (.hello, .awaitingHello): return try receiveHello(content)
        case (.items, .receivingItems):
            guard try collect(content, expected: peerCount) else { return [] }
            return try itemsComplete()
        case (.commit, .awaitingCommit):
            let expected = mode == .verified ? 64 : 32
            guard content.count == expected else { throw .protocolViolation(.malformedFrame("COMMIT must be \(expected) bytes")) }
            peerCommitment = Array(content.prefix(32))
            if mode == .verified {
                do { peerPublicKey = try Ristretto255.Point(rawRepresentation: content.suffix(32)) } catch {
                    throw .refused(.invalidPoint(index: 0))
                }
            }
            // Open ours only now that the peer is bound to its own.
            state = .receivingReturned
            var out = Self.chunks(reblinded.map(\.rawRepresentation), type: .returned)
            if mode == .verified, !reblinded.isEmpty {
                let proof = DLEQ.proof(scalar: blinding!.scalar, publicKey: blinding!.publicKey, inputs: peerPoints, outputs: reblinded)
                out.append((Inner.proof.rawValue, proof.rawRepresentation))
            }
            if ownCount == 0 { try returnedComplete() }
            return out
        case (.returned, .receivingReturned):
            guard try collect(content, expected: ownCount) else { return [] }
            try returnedComplete()
            return []
        case (.proof, .awaitingProof):
            guard let proof = try? DLEQ.Proof(rawRepresentation: content) else { throw .protocolViolation(.malformedFrame("PROOF must be 64 bytes of two scalars")) }
            guard DLEQ.isValid(proof, publicKey: peerPublicKey!, inputs: blinding!.blinded, outputs: returned) else { throw .refused(.proofInvalid) }
            finish()
            return []
        default:
            throw .protocolViolation(.unexpectedMessage("common-friends message \(type) out of order"))
        }
    }

    private func receiveHello(_ content: [UInt8]) throws(CommonFriendsError) -> [(type: UInt8, content: [UInt8])] {
        guard content.count == Self.helloByteCount else { throw .protocolViolation(.malformedFrame("common-friends HELLO must be \(Self.helloByteCount) bytes")) }
        guard content[0] == Self.version else { throw .protocolViolation(.unsupportedVersion(content[0])) }
        guard let peerMode = FriendsMode(wireValue: content[1]), content[2] & ~1 == 0 else {
            throw .protocolViolation(.malformedFrame("common-friends HELLO names an unknown mode or flag"))
        }
        let peerAuthenticated = content[2] & 1 == 1
        let peerCap = Self.u32(content[3..<7]), peerDIDs = Self.u32(content[7..<11]), peerExtras = Self.u32(content[11..<15])
        mode = max(request.mode, peerMode)
        state = .done
        if request.mode == .off { return skip(.offHere) }
        if peerMode == .off { return skip(.offByPeer) }
        if !authenticated { return skip(.unauthenticatedHere) }
        if !peerAuthenticated { return skip(.unauthenticatedByPeer) }
        ownCount = elements.dids.count + (mode >= .ecdh ? elements.extras.count : 0)
        peerCount = peerDIDs + (mode >= .ecdh ? peerExtras : 0)
        if ownCount > peerCap { return skip(.ourSetTooLarge(count: ownCount, peerLimit: peerCap)) }
        if peerCount > request.maximumSetSize { return skip(.peerSetTooLarge(count: peerCount, limit: request.maximumSetSize)) }
        if mode == .hash {
            peerItemsExpected()
            ownHashes = elements.dids.map { PrivateSetIntersection.saltedHash($0, transcriptHash: transcriptHash) }
            var items = ownHashes
            SecureRandom.shuffle(&items)
            let out = Self.chunks(items, type: .items)
            if peerCount == 0 { finish() }
            return out
        }
        state = .awaitingBlinding
        return []
    }

    private func peerItemsExpected() {
        state = .receivingItems
        received = []
    }

    /// Our blinded set (ecdh modes), once `needsBlinding`: the ITEMS to send.
    public func blind(with blinding: PrivateSetIntersection.Blinding) throws(CommonFriendsError) -> [(type: UInt8, content: [UInt8])] {
        precondition(state == .awaitingBlinding && blinding.blinded.count == ownCount)
        self.blinding = blinding
        peerItemsExpected()
        var out = Self.chunks(blinding.blinded.map(\.rawRepresentation), type: .items)
        if peerCount == 0 { out += try itemsComplete() }
        return out
    }

    /// Appends one chunk; true when `expected` items have arrived. Every chunk is full but the last.
    private func collect(_ content: [UInt8], expected: Int) throws(CommonFriendsError) -> Bool {
        let have = received.count / Self.itemByteCount
        let remaining = expected - have
        let n = content.count / Self.itemByteCount
        guard content.count % Self.itemByteCount == 0, n >= 1, n == min(Self.itemsPerChunk, remaining) else {
            throw .refused(.wrongCount(expected: min(Self.itemsPerChunk, max(remaining, 0)), actual: n))
        }
        received += content
        return received.count == expected * Self.itemByteCount
    }

    private func itemsComplete() throws(CommonFriendsError) -> [(type: UInt8, content: [UInt8])] {
        if mode == .hash {
            var seen = Set<[UInt8]>(minimumCapacity: peerCount)
            for i in 0..<peerCount {
                let item = Array(received[i * 32..<(i + 1) * 32])
                guard seen.insert(item).inserted else { throw .refused(.duplicate(index: i)) }
            }
            peerItems = seen
            finish()
            return []
        }
        do { (peerPoints, reblinded) = try blinding!.reblind(items: received, count: peerCount) } catch { throw .refused(error) }
        received = []
        state = .awaitingCommit
        let commitment = PrivateSetIntersection.commitment(to: reblinded, transcriptHash: transcriptHash, role: role)
        return [(Inner.commit.rawValue, commitment + (mode == .verified ? blinding!.publicKey.rawRepresentation : []))]
    }

    private func returnedComplete() throws(CommonFriendsError) {
        do { returned = try PrivateSetIntersection.points(received, count: ownCount, distinct: true) } catch { throw .refused(error) }
        guard PrivateSetIntersection.commitment(to: returned, transcriptHash: transcriptHash, role: 1 - role) == peerCommitment else {
            throw .refused(.commitmentMismatch)
        }
        if mode == .verified, ownCount > 0 { state = .awaitingProof } else { finish() }
    }

    private func finish() {
        state = .done
        let shared: [Int]
        if mode == .hash {
            shared = ownHashes.indices.filter { peerItems.contains(ownHashes[$0]) }
        } else {
            shared = blinding.map { $0.intersection(returned: returned, reblindedPeer: reblinded) } ?? []
        }
        outcome = .ran(mode: mode, shared: shared, peerSetSize: peerCount)
    }

    private func skip(_ why: CommonFriendsSkip) -> [(type: UInt8, content: [UInt8])] {
        outcome = .skipped(why)
        state = .done
        return []
    }

    /// The ABORT to send when we refuse what the peer sent.
    public static func abort(_ reason: String) -> (type: UInt8, content: [UInt8]) {
        (Inner.abort.rawValue, Array(reason.utf8.prefix(200)))
    }

    static func chunks(_ items: [[UInt8]], type: Inner) -> [(type: UInt8, content: [UInt8])] {
        stride(from: 0, to: items.count, by: itemsPerChunk).map { start in
            (type.rawValue, Array(items[start..<min(start + itemsPerChunk, items.count)].joined()))
        }
    }

    static func u32(_ n: Int) -> [UInt8] {
        precondition(n >= 0 && n <= Int(UInt32.max))
        return [UInt8(n >> 24 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
    }

    static func u32(_ b: ArraySlice<UInt8>) -> Int {
        b.reduce(0) { $0 << 8 | Int($1) }
    }
}

/// Post-card phase 1 (docs/PROTOCOL.md §8, inner types 0x50–0x5F): runs a `CommonFriendsPhase`
/// for one session, blinding our set when the phase asks, and keeps its outcome and cost.
public final class CommonFriendsExchangePhase: PostCardPhase, @unchecked Sendable {
    public static let innerTypes = CommonFriendsPhase.innerTypes
    public let name = "common friends"
    public let request: CommonFriendsRequest
    /// How the comparison ended; nil until it has.
    public private(set) var outcome: CommonFriendsOutcome?
    /// Bytes on the wire and wall time, this side.
    public private(set) var cost = CommonFriendsCost()

    private var phase: CommonFriendsPhase?
    private var elements: CommonFriendsElements?
    private let clock = ContinuousClock()
    private var started: ContinuousClock.Instant?
    /// A sealed post-card frame on the wire: length prefix, 0x10, inner type, content, tag.
    static let overhead = 4 + 1 + 1 + XChaCha20Poly1305.tagByteCount

    public init(_ request: CommonFriendsRequest) { self.request = request }

    public var isFinished: Bool { outcome != nil }

    public func start(_ context: PostCardContext) -> [PostCardMessage] {
        started = clock.now
        let elements = request.elements(context.peerCard.payload.senderDID)
        self.elements = elements
        let phase = CommonFriendsPhase(request: request, elements: elements, transcriptHash: context.transcriptHash, role: context.role,
                                       codeConfirmedByPAKE: context.codeConfirmedByPAKE)
        self.phase = phase
        return advance([phase.hello()])
    }

    public func receive(_ message: PostCardMessage) -> [PostCardMessage] {
        cost.bytesReceived += Self.overhead + message.content.count
        do {
            return advance(try phase!.receive(type: message.type, content: message.content))
        } catch {
            return end(error)
        }
    }

    /// The blinding computed ahead, while it is awaited.
    private let ready = Locked<PrivateSetIntersection.Blinding?>(nil)

    public var awaiting: PostCardWork? {
        guard outcome == nil, let phase, phase.needsBlinding, let ahead = elements?.ahead, ready.withLockedValue({ $0 == nil }) else { return nil }
        return PostCardWork { [ready] in
            let blinding = await ahead()
            ready.withLockedValue { $0 = blinding }
        }
    }

    public func resume() -> [PostCardMessage] { advance([]) }

    public func interrupted(_ reason: PostCardInterruption) -> [PostCardMessage] {
        switch reason {
        case .unexpected(let e): return end(.protocolViolation(e))
        case .broken(let e): finish(.failed(.protocolViolation(e)))
        case .connectionLost(let why): finish(.failed(.connection(why)))
        }
        return []
    }

    /// What to send now, plus the blinded set whenever the phase waits for it and has it (computed
    /// here, or ahead: then `awaiting` asks for it until it has come).
    private func advance(_ messages: [(type: UInt8, content: [UInt8])]) -> [PostCardMessage] {
        var out = messages
        do {
            while let phase, phase.outcome == nil, phase.needsBlinding {
                let blinding: PrivateSetIntersection.Blinding
                if elements!.ahead == nil {
                    blinding = PrivateSetIntersection.Blinding(elements: elements!.dids + elements!.extras)  // what `blinding()` computes
                } else {
                    guard let computed = ready.withLockedValue({ b in defer { b = nil }; return b }) else { break }
                    blinding = computed
                }
                out += try phase.blind(with: blinding)
            }
        } catch {
            return sent(out) + end(error)
        }
        if let done = phase?.outcome { finish(done) }
        return sent(out)
    }

    /// Ends with `error`; an ABORT tells the peer why, unless the peer is the one who stopped.
    private func end(_ error: CommonFriendsError) -> [PostCardMessage] {
        finish(.failed(error))
        if case .abortedByPeer = error { return [] }
        return sent([CommonFriendsPhase.abort(error.wireReason)])
    }

    private func finish(_ outcome: CommonFriendsOutcome) {
        guard self.outcome == nil else { return }
        self.outcome = outcome
        if let started {
            let d = clock.now - started
            cost.seconds = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        }
    }

    private func sent(_ messages: [(type: UInt8, content: [UInt8])]) -> [PostCardMessage] {
        cost.bytesSent += messages.reduce(0) { $0 + Self.overhead + $1.content.count }
        return messages.map { PostCardMessage(type: $0.type, content: $0.content) }
    }
}
