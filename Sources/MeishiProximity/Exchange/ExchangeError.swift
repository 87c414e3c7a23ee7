import MeishiCard
import MeishiText

/// Why an exchange session ended early. No case carries key material.
public enum ExchangeError: Error, Equatable, Sendable {
    /// A frame announced more than `FrameCodec.maximumBody` bytes.
    case frameTooLarge(Int)
    /// A frame that cannot be parsed.
    case malformedFrame(String)
    /// The peer speaks another protocol version.
    case unsupportedVersion(UInt8)
    /// A message arrived that the protocol does not allow at this point.
    case unexpectedMessage(String)
    /// The revealed ephemeral key does not match the commitment sent first: a tampered handshake.
    case commitmentMismatch
    /// The peer's ephemeral key gives an all-zero shared secret (a low-order point).
    case weakKey
    /// A sealed frame failed authentication: tampered, reordered, replayed or wrong key.
    case badAuthentication
    /// The peer declined the short authentication string.
    case declinedByPeer
    /// The other person gave no answer to the digit question (its --timeout, end of input, a
    /// terminal hung up): a REJECT with `wireReason` of this case, so that an older meishi says it too.
    case peerDidNotAnswer
    /// The peer's card did not verify.
    case invalidCard(PayloadError)
    /// The card was not bound to this session (signature over another transcript): a replay.
    case bindingInvalid
    /// The peer refused our card, with its reason.
    case rejectedByPeer(String)
    /// The PAKE's key confirmation failed: the two sides typed different codes (or a stranger guessed).
    case codesDoNotMatch
    /// We have a code and the peer started without one.
    case codeExpected
    /// The peer started with a code and we have none.
    case codeNotExpected

    /// The reason a REJECT gives the peer (docs/PROTOCOL.md §5.6, "REJECT reasons"): fixed text
    /// the protocol defines, with the detail the case carries. Not for showing here: the
    /// executable words an `ExchangeError` itself (Sources/meishi/ErrorMessages/ExchangeFailures.swift).
    public var wireReason: String {
        switch self {
        case .frameTooLarge(let n): "peer sent a \(n)-byte frame (limit \(FrameCodec.maximumBody))"
        case .malformedFrame(let why): "malformed frame: \(why)"
        case .unsupportedVersion(let v): "peer speaks exchange protocol version \(v); this meishi speaks 1"
        case .unexpectedMessage(let what): "protocol violation: \(what)"
        case .commitmentMismatch: "the peer's key does not match its commitment (handshake tampered with)"
        case .weakKey: "the peer sent a weak ephemeral key"
        case .badAuthentication: "a message failed authentication (tampered, replayed or out of order)"
        case .declinedByPeer: "the other person said the codes differ"
        case .peerDidNotAnswer: "the other person did not answer"
        case .invalidCard(let e): "the peer's card is invalid: \(e.reason)"
        case .bindingInvalid: "the peer's card is not bound to this session (replayed from another exchange?)"
        case .rejectedByPeer(let why): "the peer refused our card: \(TerminalText.sanitized(why))"
        case .codesDoNotMatch: "the codes do not match"
        case .codeExpected: "the other side did not use --code (both sides need the same code)"
        case .codeNotExpected: "the other side used --code; use the same --code here"
        }
    }
}
