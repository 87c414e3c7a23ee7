import MeishiCard

/// Post-card phase 3 of an exchange: each side hands over its key rotations (docs/PROTOCOL.md
/// §10.4), so a contact holding an old DID of the peer moves it to the card's DID.
///
/// Each side sends one ROTATIONS frame (`0x70` ‖ its supersession statements, oldest first,
/// each a line; empty when it never rotated) and reads the peer's. A chain that does not verify
/// or does not end at the DID of the peer's card is dropped (the cards stay stored): the
/// application decides what a verified chain changes.
public final class RotationPhase: PostCardPhase, @unchecked Sendable {
    public static let innerTypes: ClosedRange<UInt8> = 0x70...0x77
    public static let rotations: UInt8 = 0x70
    public let name = "key rotations"
    let mine: [UInt8]
    private var peerDID = ""
    /// The peer's statements, verified, ending at its card's DID; empty when it sent none.
    public private(set) var received: [RotationStatement] = []
    /// Why the peer's statements were dropped, or how the phase broke off.
    public private(set) var problem: Problem?
    private var heard = false

    /// Why the peer's statements were dropped, or how the phase broke off, as a value (the
    /// application words it).
    public enum Problem: Equatable, Sendable {
        /// A frame of another type than ROTATIONS, or a second one.
        case unexpectedMessage(type: UInt8)
        /// The chain verified but does not end at the DID of the peer's card.
        case notEndingAtPeersCard
        /// A statement did not verify.
        case didNotVerify(RotationStatement.Failure)
        /// The phase broke off before the peer's statements came.
        case brokeOff(PostCardInterruption)
    }

    /// `statements`: my chain as `rotations.json` holds it (empty when I never rotated).
    public init(statements: [UInt8]) { mine = statements }

    public var isFinished: Bool { heard }

    public func start(_ context: PostCardContext) -> [PostCardMessage] {
        peerDID = context.peerCard.payload.senderDID
        return [PostCardMessage(type: Self.rotations, content: mine)]
    }

    public func receive(_ message: PostCardMessage) -> [PostCardMessage] {
        guard message.type == Self.rotations, !heard else {
            heard = true
            problem = .unexpectedMessage(type: message.type)
            return []
        }
        heard = true
        guard !message.content.isEmpty else { return [] }
        do {
            let chain = try RotationStatement.verifyChain(message.content)
            guard chain.last?.newDID == peerDID else {
                problem = .notEndingAtPeersCard
                return []
            }
            received = chain
        } catch {
            problem = .didNotVerify(error)
        }
        return []
    }

    public func interrupted(_ reason: PostCardInterruption) -> [PostCardMessage] {
        heard = true
        problem = .brokeOff(reason)
        return []
    }
}
