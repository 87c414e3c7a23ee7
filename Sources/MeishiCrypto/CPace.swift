/// CPace, a balanced PAKE (draft-irtf-cfrg-cpace-21), in the suite CPACE-RISTR255-SHA512.
///
/// Both sides know a low-entropy password (PRS) and the same channel identifier (CI) and session
/// identifier (sid). Each sends one `Message`: its share `Y = y·g`, where the generator `g` is derived
/// from the password, and its associated data (AD). Each derives the same 64-byte intermediate
/// session key (ISK) only if the passwords, CI, sid and both messages agree; an eavesdropper
/// cannot test password guesses offline, and an active attacker gets one guess per run.
///
/// Explicit key confirmation follows the draft's section "Key confirmation": `mac_key =
/// SHA-512(b"CPaceMac" || sid || ISK)` and each side sends `HMAC-SHA512(mac_key, lv_cat(Y, AD))`
/// over the message it sent. With `Initiator` and `Responder` the responder checks the initiator's
/// tag before it releases its own (`ResponderSession.confirmation(afterVerifying:)`).
///
/// Flow (initiator A, responder B): A → B `A.message`; B → A `B.message`; A → B
/// `A.finish(responderMessage:).confirmation`; B → A `B.finish(initiatorMessage:)
/// .confirmation(afterVerifying:)`; A checks it with `verifyPeerConfirmation`.
public enum CPace {
    /// `G.DSI` of the ristretto255 group: b"CPaceRistretto255".
    public static let domainSeparator: [UInt8] = Array("CPaceRistretto255".utf8)
    /// Length of the intermediate session key: a SHA-512 digest.
    public static let intermediateSessionKeyByteCount = SHA512.byteCount
    /// Longest associated data a `Message` may carry (decoding refuses more).
    public static let maximumAssociatedDataByteCount = 4096

    static let iskDomainSeparator: [UInt8] = domainSeparator + Array("_ISK".utf8)
    static let macKeyLabel: [UInt8] = Array("CPaceMac".utf8)
    static let sessionIDOutputLabel: [UInt8] = Array("CPaceSidOutput".utf8)

    // MARK: String functions (draft Appendix A)

    /// `prepend_len`: the LEB128 encoding of the length of `data`, then `data`.
    public static func prependingLength<D: Collection>(_ data: D) -> [UInt8] where D.Element == UInt8 {
        lengthPrefix(data.count) + Array(data)
    }

    /// `lv_cat`: each part with its length prepended, one after another.
    public static func lengthValueConcatenation(_ parts: [[UInt8]]) -> [UInt8] {
        parts.reduce(into: [UInt8]()) { $0 += prependingLength($1) }
    }

    /// `o_cat`: b"oc", then the lexicographically larger of `a` and `b`, then the other.
    public static func orderedConcatenation(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        Array("oc".utf8) + (isLexicographicallyLarger(a, than: b) ? a + b : b + a)
    }

    /// The draft's `lexiographically_larger`: bytewise, and a proper prefix is the smaller.
    static func isLexicographicallyLarger(_ a: [UInt8], than b: [UInt8]) -> Bool {
        for (x, y) in zip(a, b) where x != y { return x > y }
        return a.count > b.count
    }

    /// LEB128 of a length: seven bits a byte, least significant first, the high bit set on all but the last.
    static func lengthPrefix(_ length: Int) -> [UInt8] {
        precondition(length >= 0)
        var out: [UInt8] = []
        var rest = length
        repeat {
            out.append(rest < 128 ? UInt8(rest) : UInt8(rest & 0x7f) | 0x80)
            rest >>= 7
        } while rest != 0
        return out
    }

    /// `transcript_ir(Ya, ADa, Yb, ADb)`: the initiator's message, then the responder's.
    static func initiatorResponderTranscript(_ ya: [UInt8], _ ada: [UInt8], _ yb: [UInt8], _ adb: [UInt8]) -> [UInt8] {
        lengthValueConcatenation([ya, ada]) + lengthValueConcatenation([yb, adb])
    }

    /// `transcript_oc(Ya, ADa, Yb, ADb)`: both messages in lexicographic order, for the symmetric setting.
    static func orderedTranscript(_ ya: [UInt8], _ ada: [UInt8], _ yb: [UInt8], _ adb: [UInt8]) -> [UInt8] {
        orderedConcatenation(lengthValueConcatenation([ya, ada]), lengthValueConcatenation([yb, adb]))
    }

    // MARK: Generator (draft sections "Common function for computing generators" and CPaceCoffee)

    /// `generator_string(DSI, PRS, CI, sid, 128)`: `lv_cat(DSI, PRS, zero padding, CI, sid)`, the
    /// padding filling SHA-512's first 128-byte block; in guarded memory since it holds the password.
    public static func generatorString(password: SecureBytes, channelID: [UInt8], sessionID: [UInt8]) -> SecureBytes {
        SecureBytes(joining: generatorStringParts(password: password, channelID: channelID, sessionID: sessionID))
    }

    /// The generator string in pieces, so that it can be hashed without another guarded copy.
    static func generatorStringParts(password: SecureBytes, channelID: [UInt8], sessionID: [UInt8]) -> [HashPart] {
        let dsi = prependingLength(domainSeparator)
        let prsPrefix = lengthPrefix(password.count)
        let padLength = max(0, SHA512.blockByteCount - 1 - (prsPrefix.count + password.count) - dsi.count)
        return [
            .plain(dsi + prsPrefix), .secret(password),
            .plain(prependingLength([UInt8](repeating: 0, count: padLength)) + prependingLength(channelID) + prependingLength(sessionID)),
        ]
    }

    /// `calculate_generator`: the element derived from SHA-512 of the generator string. Secret: it
    /// would let anyone test password guesses.
    public static func generator(password: SecureBytes, channelID: [UInt8], sessionID: [UInt8]) -> Ristretto255.SecretPoint {
        let digest = SHA512.hash(parts: generatorStringParts(password: password, channelID: channelID, sessionID: sessionID))
        do {
            return try Ristretto255.SecretPoint(uniformBytes: digest)
        } catch {
            // The identity would need a SHA-512 output that maps to it: a preimage, not a password.
            preconditionFailure("CPace generator is the identity")
        }
    }

    // MARK: Messages and tags

    /// One CPace message: a share `Y` and the sender's associated data, sent in the clear.
    public struct Message: Hashable, Sendable {
        /// The share `Y = y·g`.
        public let share: Ristretto255.Point
        /// The sender's associated data (ADa or ADb), authenticated by the run.
        public let associatedData: [UInt8]

        /// A message from its parts; `associatedData` is at most `maximumAssociatedDataByteCount` bytes.
        public init(share: Ristretto255.Point, associatedData: [UInt8]) {
            precondition(associatedData.count <= CPace.maximumAssociatedDataByteCount, "CPace associated data too long")
            self.share = share
            self.associatedData = associatedData
        }

        /// The wire form `lv_cat(Y, AD)`, the same bytes the transcript and the confirmation tag cover.
        public var encoded: [UInt8] { CPace.lengthValueConcatenation([share.rawRepresentation, associatedData]) }

        /// Decodes `lv_cat(Y, AD)` strictly: minimal LEB128 lengths, a 32-byte valid non-identity share,
        /// associated data within the limit, nothing missing and nothing left over.
        public init<D: Collection>(encoded: D) throws(CryptoError) where D.Element == UInt8 {
            let bytes = Array(encoded)
            var index = 0
            let shareLength = try Self.readLength(bytes, at: &index)
            guard shareLength == Ristretto255.byteCount else {
                throw .invalidLength(what: "CPace share", expected: Ristretto255.byteCount, actual: shareLength)
            }
            guard bytes.count - index >= shareLength else { throw .malformedMessage }
            let share = try Ristretto255.Point(rawRepresentation: bytes[index..<index + shareLength])
            index += shareLength
            let adLength = try Self.readLength(bytes, at: &index)
            guard adLength <= CPace.maximumAssociatedDataByteCount, bytes.count - index == adLength else { throw .malformedMessage }
            self.init(share: share, associatedData: Array(bytes[index...]))
        }

        /// Reads a minimal LEB128 length of at most three bytes (below 2^21) at `index`.
        private static func readLength(_ bytes: [UInt8], at index: inout Int) throws(CryptoError) -> Int {
            var value = 0
            var shift = 0
            while true {
                guard index < bytes.count, shift < 21 else { throw .malformedMessage }
                let byte = bytes[index]
                index += 1
                value |= Int(byte & 0x7f) << shift
                if byte & 0x80 == 0 {
                    // A zero last byte after others would be a second encoding of the same length.
                    guard byte != 0 || shift == 0 else { throw .malformedMessage }
                    return value
                }
                shift += 7
            }
        }
    }

    /// A key-confirmation tag: HMAC-SHA512 under the key derived from ISK, 64 bytes.
    public struct ConfirmationTag: Hashable, Sendable {
        /// Length in bytes.
        public static let byteCount = 64
        /// The tag.
        public let rawRepresentation: [UInt8]

        /// Takes the 64 bytes of a received tag.
        public init<D: Collection>(rawRepresentation: D) throws(CryptoError) where D.Element == UInt8 {
            self.rawRepresentation = try CryptoError.checked(rawRepresentation, count: Self.byteCount, what: "CPace confirmation tag")
        }
    }

    // MARK: Parties

    /// The side that speaks first. Make one per run: its scalar must never be reused.
    public final class Initiator: Sendable {
        /// The message to send: Ya and ADa.
        public var message: Message { party.message }
        private let party: Party

        /// A fresh run: derives the generator, samples `ya` and computes `Ya = ya·g`.
        public convenience init(password: SecureBytes, channelID: [UInt8] = [], sessionID: [UInt8] = [], associatedData: [UInt8] = []) {
            self.init(party: Party(password: password, channelID: channelID, sessionID: sessionID, associatedData: associatedData))
        }

        /// A run with a given scalar, for test vectors only.
        package convenience init(password: SecureBytes, channelID: [UInt8], sessionID: [UInt8], associatedData: [UInt8], scalar: Ristretto255.Scalar) {
            self.init(party: Party(password: password, channelID: channelID, sessionID: sessionID, associatedData: associatedData, scalar: scalar))
        }

        init(party: Party) { self.party = party }

        /// The session keys for the responder's message; throws `.reflectedMessage` for our own message back.
        public func finish(responderMessage: Message) throws(CryptoError) -> Session {
            try party.finish(peer: responderMessage,
                             transcript: CPace.initiatorResponderTranscript(message.share.rawRepresentation, message.associatedData,
                                                                            responderMessage.share.rawRepresentation, responderMessage.associatedData))
        }
    }

    /// The side that answers. Make one per run: its scalar must never be reused.
    public final class Responder: Sendable {
        /// The message to send: Yb and ADb.
        public var message: Message { party.message }
        private let party: Party

        /// A fresh run: derives the generator, samples `yb` and computes `Yb = yb·g`.
        public convenience init(password: SecureBytes, channelID: [UInt8] = [], sessionID: [UInt8] = [], associatedData: [UInt8] = []) {
            self.init(party: Party(password: password, channelID: channelID, sessionID: sessionID, associatedData: associatedData))
        }

        /// A run with a given scalar, for test vectors only.
        package convenience init(password: SecureBytes, channelID: [UInt8], sessionID: [UInt8], associatedData: [UInt8], scalar: Ristretto255.Scalar) {
            self.init(party: Party(password: password, channelID: channelID, sessionID: sessionID, associatedData: associatedData, scalar: scalar))
        }

        init(party: Party) { self.party = party }

        /// The session keys for the initiator's message; throws `.reflectedMessage` for our own message back.
        public func finish(initiatorMessage: Message) throws(CryptoError) -> ResponderSession {
            ResponderSession(try party.finish(peer: initiatorMessage,
                                              transcript: CPace.initiatorResponderTranscript(initiatorMessage.share.rawRepresentation, initiatorMessage.associatedData,
                                                                                             message.share.rawRepresentation, message.associatedData)))
        }
    }

    /// A side in the symmetric setting (either may speak first; the transcript is `transcript_oc`).
    ///
    /// - Warning: the draft asks for unique associated data in this setting; prefer `Initiator` and
    ///   `Responder` when the roles are known.
    public final class SymmetricParty: Sendable {
        /// The message to send: Y and AD.
        public var message: Message { party.message }
        private let party: Party

        /// A fresh run: derives the generator, samples `y` and computes `Y = y·g`.
        public convenience init(password: SecureBytes, channelID: [UInt8] = [], sessionID: [UInt8] = [], associatedData: [UInt8] = []) {
            self.init(party: Party(password: password, channelID: channelID, sessionID: sessionID, associatedData: associatedData))
        }

        /// A run with a given scalar, for test vectors only.
        package convenience init(password: SecureBytes, channelID: [UInt8], sessionID: [UInt8], associatedData: [UInt8], scalar: Ristretto255.Scalar) {
            self.init(party: Party(password: password, channelID: channelID, sessionID: sessionID, associatedData: associatedData, scalar: scalar))
        }

        init(party: Party) { self.party = party }

        /// The session keys for the peer's message; throws `.reflectedMessage` for our own message back.
        public func finish(peerMessage: Message) throws(CryptoError) -> Session {
            try party.finish(peer: peerMessage,
                             transcript: CPace.orderedTranscript(message.share.rawRepresentation, message.associatedData,
                                                                 peerMessage.share.rawRepresentation, peerMessage.associatedData))
        }
    }

    /// The keys of a finished run, for the initiator and the symmetric setting.
    public final class Session: Sendable {
        /// ISK, 64 bytes. Authenticated only once `verifyPeerConfirmation` has passed; derive keys
        /// from it with a KDF (e.g. `BLAKE2b.hash(_:key:)`) rather than using it directly.
        public let intermediateSessionKey: SecureBytes
        /// Our confirmation tag, over the message we sent: send it after our message.
        public let confirmation: ConfirmationTag
        private let macKey: SecureBytes
        private let peerMessage: [UInt8]
        private let transcript: [UInt8]

        init(intermediateSessionKey isk: SecureBytes, sessionID: [UInt8], ownMessage: [UInt8], peerMessage: [UInt8], transcript: [UInt8]) {
            intermediateSessionKey = isk
            macKey = SHA512.hash(parts: [.plain(CPace.macKeyLabel + sessionID), .secret(isk)])
            confirmation = CPace.tag(key: macKey, message: ownMessage)
            self.peerMessage = peerMessage
            self.transcript = transcript
        }

        /// Checks the peer's tag over the message it sent, in constant time; `.confirmationFailed` if wrong.
        public func verifyPeerConfirmation(_ tag: ConfirmationTag) throws(CryptoError) {
            guard HMACSHA512.isValidAuthenticationCode(tag.rawRepresentation, for: peerMessage, key: macKey) else {
                throw .confirmationFailed
            }
        }

        /// `sid_output = SHA-512(b"CPaceSidOutput" || transcript)`: public, unique for the run; for
        /// naming the session afterwards when no sid was agreed before.
        public var sessionIDOutput: [UInt8] { SHA512.hash(CPace.sessionIDOutputLabel + transcript) }
    }

    /// The responder's keys of a finished run: its own tag is released only for a valid initiator tag.
    public final class ResponderSession: Sendable {
        private let session: Session

        init(_ session: Session) { self.session = session }

        /// ISK, 64 bytes. Authenticated only once `confirmation(afterVerifying:)` has returned.
        public var intermediateSessionKey: SecureBytes { session.intermediateSessionKey }

        /// `sid_output` of the run (see `Session.sessionIDOutput`).
        public var sessionIDOutput: [UInt8] { session.sessionIDOutput }

        /// Our tag to send back, once the initiator's `tag` checks; `.confirmationFailed` otherwise, and
        /// then nothing derived from the key may be sent.
        public func confirmation(afterVerifying initiatorTag: ConfirmationTag) throws(CryptoError) -> ConfirmationTag {
            try session.verifyPeerConfirmation(initiatorTag)
            return session.confirmation
        }
    }

    /// What the three kinds of party share: the scalar, the sid and the message sent.
    struct Party: Sendable {
        let scalar: Ristretto255.Scalar
        let sessionID: [UInt8]
        let message: Message

        init(password: SecureBytes, channelID: [UInt8], sessionID: [UInt8], associatedData: [UInt8],
             scalar: Ristretto255.Scalar = Ristretto255.Scalar()) {
            let g = CPace.generator(password: password, channelID: channelID, sessionID: sessionID)
            let share: Ristretto255.Point
            do {
                share = try g.multiplied(by: scalar)
            } catch {
                // A nonzero scalar below the prime order times a non-identity element is never the identity.
                preconditionFailure("CPace share is the identity")
            }
            self.scalar = scalar
            self.sessionID = sessionID
            message = Message(share: share, associatedData: associatedData)
        }

        /// `K = y·Y_peer` (which throws on the identity) and `ISK = SHA-512(lv_cat(DSI || "_ISK", sid, K) || transcript)`.
        func finish(peer: Message, transcript: [UInt8]) throws(CryptoError) -> Session {
            guard peer.share != message.share else { throw .reflectedMessage }
            let k = try scalar.sharedSecret(with: peer.share)
            let isk = SHA512.hash(parts: CPace.intermediateSessionKeyInputParts(sessionID: sessionID, sharedSecret: k, transcript: transcript))
            return Session(intermediateSessionKey: isk, sessionID: sessionID, ownMessage: message.encoded,
                           peerMessage: peer.encoded, transcript: transcript)
        }
    }

    /// `lv_cat(DSI || "_ISK", sid, K) || transcript`, in guarded memory since it holds K.
    static func intermediateSessionKeyInput(sessionID: [UInt8], sharedSecret k: Ristretto255.SecretPoint, transcript: [UInt8]) -> SecureBytes {
        SecureBytes(joining: intermediateSessionKeyInputParts(sessionID: sessionID, sharedSecret: k, transcript: transcript))
    }

    /// The same in pieces, hashed without another guarded copy.
    static func intermediateSessionKeyInputParts(sessionID: [UInt8], sharedSecret k: Ristretto255.SecretPoint, transcript: [UInt8]) -> [HashPart] {
        [
            .plain(prependingLength(iskDomainSeparator) + prependingLength(sessionID) + lengthPrefix(k.rawRepresentation.count)),
            .secret(k.rawRepresentation), .plain(transcript),
        ]
    }

    /// `MAC(mac_key, message)` of the draft's key confirmation: HMAC-SHA512.
    static func tag(key: SecureBytes, message: [UInt8]) -> ConfirmationTag {
        ConfirmationTag(unchecked: HMACSHA512.authenticationCode(for: message, key: key))
    }
}

extension CPace.ConfirmationTag {
    init(unchecked raw: [UInt8]) { rawRepresentation = raw }
}
