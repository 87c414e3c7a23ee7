import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiProximity

/// What a REJECT or an ABORT tells the peer is fixed text docs/PROTOCOL.md lists (§5.3, §8), not
/// the executable's wording: the two can change apart.
@Suite struct WireReasonTests {
    /// One error of each case; the switch stops compiling when a case is added without a sample.
    static let exchangeErrors: [ExchangeError] = {
        func sample(_ e: ExchangeError) -> ExchangeError {
            switch e {
            case .frameTooLarge, .malformedFrame, .unsupportedVersion, .unexpectedMessage, .commitmentMismatch, .weakKey,
                 .badAuthentication, .declinedByPeer, .peerDidNotAnswer, .invalidCard, .bindingInvalid, .rejectedByPeer,
                 .codesDoNotMatch, .codeExpected, .codeNotExpected: e
            }
        }
        return [.frameTooLarge(70_000), .malformedFrame("a 3-byte hello"), .unsupportedVersion(2),
                .unexpectedMessage("a CARD before CONFIRM"), .commitmentMismatch, .weakKey, .badAuthentication, .declinedByPeer,
                .peerDidNotAnswer, .invalidCard(.badSignature), .bindingInvalid, .rejectedByPeer("no\u{1b}[2J thanks"), .codesDoNotMatch,
                .codeExpected, .codeNotExpected].map(sample)
    }()

    static let refusals: [PSIError] = [.invalidPoint(index: 3), .duplicate(index: 4), .wrongCount(expected: 2, actual: 5),
                                       .commitmentMismatch, .proofInvalid]

    /// The reasons of one paragraph of PROTOCOL.md (from its bold title to its end, and the table
    /// right after it), as patterns: each backquoted string, ⟨…⟩ standing for any detail.
    static func documented(_ title: String) throws -> [NSRegularExpression] {
        let doc = try String(contentsOf: Fixtures.root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        let start = try #require(doc.range(of: "**\(title).**"))
        let rest = doc[start.upperBound...]
        var end = try #require(rest.range(of: "\n\n"))
        if rest[end.upperBound...].hasPrefix("|") { end = try #require(rest[end.upperBound...].range(of: "\n\n")) }
        let quoted = try NSRegularExpression(pattern: "`([^`]+)`")
        let text = String(rest[..<end.lowerBound])
        return try quoted.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { m in
            let literal = String(text[Range(m.range(at: 1), in: text)!])
            let pattern = literal.components(separatedBy: "⟨").enumerated().map { i, part in
                guard i > 0, let close = part.firstIndex(of: "⟩") else { return NSRegularExpression.escapedPattern(for: part) }
                return ".+" + NSRegularExpression.escapedPattern(for: String(part[part.index(after: close)...]))
            }.joined()
            return try NSRegularExpression(pattern: "^" + pattern + "$")
        }
    }

    static func matches(_ reason: String, _ patterns: [NSRegularExpression]) -> Bool {
        patterns.contains { $0.firstMatch(in: reason, range: NSRange(reason.startIndex..., in: reason)) != nil }
    }

    @Test func everyRejectReasonIsOneThePROTOCOLLists() throws {
        let patterns = try Self.documented("REJECT reasons")
        #expect(patterns.count >= Self.exchangeErrors.count)
        for e in Self.exchangeErrors {
            #expect(Self.matches(e.wireReason, patterns), "\(e): \(e.wireReason)")
            #expect(e.wireReason.utf8.count <= 200 && !e.wireReason.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F })
        }
    }

    @Test func everyAbortReasonIsOneThePROTOCOLLists() throws {
        let patterns = try Self.documented("ABORT reasons") + Self.documented("REJECT reasons")
        for e in Self.refusals.map(CommonFriendsError.refused) + Self.exchangeErrors.map(CommonFriendsError.protocolViolation) {
            #expect(Self.matches(e.wireReason, patterns), "\(e): \(e.wireReason)")
        }
    }
}
