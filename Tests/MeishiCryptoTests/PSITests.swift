import Foundation
import Testing
import MeishiCard
@testable import MeishiCrypto

private func bytes(_ hex: String) -> [UInt8] { Hex.decode(hex)! }
private func point(_ hex: String) -> Ristretto255.Point { try! Ristretto255.Point(rawRepresentation: bytes(hex)) }
private func scalar(_ hex: String) -> Ristretto255.Scalar { try! Ristretto255.Scalar(rawRepresentation: SecureBytes(copying: bytes(hex))) }

/// RFC 9497 Appendix A.1.2 (fixtures/external/rfc9497-voprf-ristretto255-sha512.json): the batched
/// DLEQ proof of the `verified` mode is the VOPRF's, so its vectors must come out byte for byte.
@Suite struct DLEQVectorTests {
    let root = try! Fixtures.json("external/rfc9497-voprf-ristretto255-sha512.json") as! [String: Any]
    var vectors: [[String: Any]] { root["vectors"] as! [[String: Any]] }

    @Test func contextString() {
        #expect(Hex.encode(DLEQ.contextString) == root["contextString"] as! String)
    }

    @Test func publicKeyAndEvaluations() throws {
        let k = scalar(root["skSm"] as! String)
        #expect(Hex.encode(Ristretto255.Point(generatorTimes: k).rawRepresentation) == root["pkSm"] as! String)
        for v in vectors {
            for (blinded, evaluated) in zip(v["BlindedElement"] as! [String], v["EvaluationElement"] as! [String]) {
                #expect(Hex.encode(try point(blinded).multiplied(by: k).rawRepresentation) == evaluated)
            }
        }
    }

    @Test func proofsMatchTheRFC() throws {
        let k = scalar(root["skSm"] as! String), pk = point(root["pkSm"] as! String)
        #expect(vectors.count == 3)
        for v in vectors {
            let c = (v["BlindedElement"] as! [String]).map(point), d = (v["EvaluationElement"] as! [String]).map(point)
            let proof = DLEQ.proof(scalar: k, publicKey: pk, inputs: c, outputs: d, randomScalar: scalar(v["ProofRandomScalar"] as! String))
            #expect(Hex.encode(proof.rawRepresentation) == v["Proof"] as! String)
            let theirs = try DLEQ.Proof(rawRepresentation: bytes(v["Proof"] as! String))
            #expect(DLEQ.isValid(theirs, publicKey: pk, inputs: c, outputs: d))
            // Another key, or the outputs of another input, fail.
            #expect(!DLEQ.isValid(theirs, publicKey: Ristretto255.Point.generator, inputs: c, outputs: d))
            #expect(!DLEQ.isValid(theirs, publicKey: pk, inputs: c, outputs: d.map { try! $0.multiplied(by: k) }))
        }
    }

    @Test func reorderedBatchFails() throws {
        let k = Ristretto255.Scalar(), pk = Ristretto255.Point(generatorTimes: k)
        let c = (0..<5).map { PrivateSetIntersection.groupElement([UInt8($0)]) }
        let d = try c.map { try $0.multiplied(by: k) }
        let proof = DLEQ.proof(scalar: k, publicKey: pk, inputs: c, outputs: d)
        #expect(DLEQ.isValid(proof, publicKey: pk, inputs: c, outputs: d))
        #expect(!DLEQ.isValid(proof, publicKey: pk, inputs: c, outputs: [d[1], d[0]] + d[2...]))
        var substituted = d
        substituted[3] = try c[3].multiplied(by: Ristretto255.Scalar())
        #expect(!DLEQ.isValid(proof, publicKey: pk, inputs: c, outputs: substituted))
        #expect(!DLEQ.isValid(DLEQ.proof(scalar: k, publicKey: pk, inputs: c, outputs: substituted), publicKey: pk, inputs: c, outputs: substituted))
        // A non-canonical scalar is refused when the proof is decoded.
        #expect(throws: CryptoError.invalidScalar) { try DLEQ.Proof(rawRepresentation: [UInt8](repeating: 0xFF, count: 64)) }
    }

    /// RFC 9380 Appendix K.3 (expand_message_xmd, SHA-512, DST "QUUX-V01-CS02-with-expander-SHA512-256"), msg "" and "abc", 32 bytes.
    @Test func expandMessageXMD() {
        let dst = Array("QUUX-V01-CS02-with-expander-SHA512-256".utf8)
        #expect(Hex.encode(DLEQ.expandMessageXMD([], dst: dst, length: 32)) == "6b9a7312411d92f921c6f68ca0b6380730a1a4d982c507211a90964c394179ba")
        #expect(Hex.encode(DLEQ.expandMessageXMD(Array("abc".utf8), dst: dst, length: 32)) == "0da749f12fbe5483eb066a5f595055679b976e93abe9be6f0f6318bce7aca8dc")
    }
}

/// The intersection itself: every side learns exactly the plain set intersection.
@Suite struct PrivateSetIntersectionTests {
    static func elements(_ range: Range<Int>) -> [[UInt8]] { range.map { Array("did:key:z\($0)".utf8) } }

    /// Runs both sides honestly; returns what each learned, as input indices.
    static func run(_ a: [[UInt8]], _ b: [[UInt8]]) -> ([Int], [Int]) {
        let sa = PrivateSetIntersection.Blinding(elements: a), sb = PrivateSetIntersection.Blinding(elements: b)
        let returnedToA = sb.reblind(sa.blinded), returnedToB = sa.reblind(sb.blinded)
        return (sa.intersection(returned: returnedToA, reblindedPeer: returnedToB),
                sb.intersection(returned: returnedToB, reblindedPeer: returnedToA))
    }

    @Test(arguments: [(0, 0, 0), (5, 0, 0), (0, 5, 0), (10, 10, 0), (10, 10, 10), (1, 1, 1), (1, 1, 0), (3, 40, 2), (40, 3, 3)])
    func randomOverlaps(sizes: (Int, Int, Int)) {
        let (na, nb, common) = sizes
        let shared = Self.elements(1000..<1000 + common)
        let a = (Self.elements(0..<na - common) + shared).shuffled(), b = (Self.elements(500..<500 + nb - common) + shared).shuffled()
        let (learnedA, learnedB) = Self.run(a, b)
        let expected = Set(a).intersection(b)
        #expect(Set(learnedA.map { a[$0] }) == expected)
        #expect(Set(learnedB.map { b[$0] }) == expected)
    }

    @Test func hostileLists() throws {
        let p = PrivateSetIntersection.groupElement([1]).rawRepresentation
        #expect(throws: PSIError.duplicate(index: 1)) { try PrivateSetIntersection.points(p + p, count: 2, distinct: true) }
        #expect(throws: PSIError.invalidPoint(index: 0)) { try PrivateSetIntersection.points([UInt8](repeating: 0, count: 32), count: 1, distinct: true) }
        var nonCanonical = p
        nonCanonical[31] |= 0x80
        #expect(throws: PSIError.invalidPoint(index: 0)) { try PrivateSetIntersection.points(nonCanonical, count: 1, distinct: true) }
        #expect(throws: PSIError.wrongCount(expected: 2, actual: 1)) { try PrivateSetIntersection.points(p, count: 2, distinct: true) }
        #expect(try PrivateSetIntersection.points(p + p, count: 2, distinct: false).count == 2)
        // The same refusals where the peer's list is re-blinded in one pass.
        let b = PrivateSetIntersection.Blinding(elements: [[1]])
        let q = PrivateSetIntersection.groupElement([2]).rawRepresentation
        let aboveP = [UInt8](repeating: 0xFF, count: 31) + [0x7F]  // s ≥ p, top bit clear: decodes to nothing
        #expect(throws: PSIError.invalidPoint(index: 1)) { try b.reblind(items: q + aboveP, count: 2) }
        #expect(throws: PSIError.invalidPoint(index: 1)) { try b.reblind(items: q + [UInt8](repeating: 0, count: 32), count: 2) }
        #expect(throws: PSIError.invalidPoint(index: 0)) { try b.reblind(items: nonCanonical + q, count: 2) }
        #expect(throws: PSIError.duplicate(index: 2)) { try b.reblind(items: p + q + p, count: 3) }
        #expect(throws: PSIError.wrongCount(expected: 3, actual: 2)) { try b.reblind(items: p + q, count: 3) }
        let (received, reblinded) = try b.reblind(items: p + q, count: 2)
        #expect(received.map(\.rawRepresentation) == [p, q] && reblinded == b.reblind(received))
    }
}
