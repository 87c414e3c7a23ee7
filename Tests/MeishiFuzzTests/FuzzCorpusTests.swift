import Foundation
import Testing
@testable import MeishiFuzz
import MeishiCard

/// Replays every saved fuzz corpus and regression input (fixtures/fuzz) through its target: fast,
/// and a crash or a broken property fails `make test`. The long runs are `make fuzz`.
@Suite struct FuzzCorpusTests {
    static func inputs(_ folder: String) -> [URL] {
        let dir = Fixtures.url(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.sorted().filter { !$0.hasPrefix(".") }.map { dir.appendingPathComponent($0) }
    }

    @Test(arguments: FuzzTarget.allCases)
    func corpusReplays(_ target: FuzzTarget) throws {
        let corpus = Self.inputs("fuzz/corpus/\(target.rawValue)")
        #expect(corpus.count >= 5, "fixtures/fuzz/corpus/\(target.rawValue) holds \(corpus.count) inputs: run scripts/fuzz.sh seed")
        for url in corpus + Self.inputs("fuzz/regressions/\(target.rawValue)") {
            target.run([UInt8](try Data(contentsOf: url)))
        }
    }

    /// The session driver reaches the end of an honest exchange from its seeds, in every mode
    /// but a wrong code, so the fuzzer starts from deep states.
    @Test func honestSessionSeedsCompleteTheExchange() throws {
        for setup in 0..<8 {
            let data = try Data(contentsOf: Fixtures.url("fuzz/corpus/session/honest-\(setup)"))
            let wrongCode = setup & 6 == 6
            #expect(SessionFuzz.run([UInt8](data)) == !wrongCode, "setup \(setup)")
        }
    }

    /// The whole-exchange seeds in the other friends modes, and with a note, reach the end too.
    @Test func phaseSeedsFinishTheWholeExchange() throws {
        for setup in [8, 16, 24, 32, 33, 42, 51, 58] {
            let data = try Data(contentsOf: Fixtures.url("fuzz/corpus/session/phases-\(setup)"))
            #expect(SessionFuzz.run([UInt8](data)), "setup \(setup)")
        }
    }

    /// The common-friends driver reaches the true intersection from its honest seeds in every
    /// pair of modes that runs (neither side off).
    @Test func honestFriendsSeedsFindTheIntersection() throws {
        for setup in 0..<32 where setup & 3 != 3 && setup >> 2 & 3 != 3 {
            let data = [UInt8](try Data(contentsOf: Fixtures.url("fuzz/corpus/friends/honest-\(setup)")))
            #expect(FriendsFuzz.completes(data), "setup \(setup)")
        }
    }

    /// The envelope seeds open with the target's keys (so the fuzzer starts past the box).
    @Test func envelopeSeedsOpen() {
        for (name, bytes) in FuzzTarget.envelopeSeeds() {
            let envelope = try? MessageEnvelope(parsing: bytes)
            #expect((try? envelope?.open(from: EnvelopeFuzz.sender.publicKey, with: EnvelopeFuzz.recipient)) != nil, "\(name)")
        }
    }

    /// The payload vectors keep their verdicts when read as fuzz inputs (the harness verifies
    /// with the same rules as `meishi verify`, at a fixed clock).
    @Test func payloadVerdictsMatchTheVectors() throws {
        for url in Self.inputs("vectors") where url.pathExtension == "txt" {
            let text = try String(contentsOf: url, encoding: .utf8)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            let expected = try #require(lines.first?.split(separator: " ").last.map(String.init))
            #expect(lines.contains("# now: \(FuzzTarget.now)"), "\(url.lastPathComponent)")
            let body = lines.drop { $0.hasPrefix("#") }.joined(separator: "\n")
            #expect(FuzzTarget.payloadVerdict(Array(body.utf8)) == expected, "\(url.lastPathComponent)")
        }
    }
}
