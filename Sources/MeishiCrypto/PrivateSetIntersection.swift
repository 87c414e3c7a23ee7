import Dispatch

/// Why a private set intersection refused what the peer sent. No case carries an element.
public enum PSIError: Error, Equatable, Sendable {
    /// An item is not the canonical encoding of a ristretto255 element, or is the identity.
    case invalidPoint(index: Int)
    /// Two items of one list are equal (an honest peer's never are).
    case duplicate(index: Int)
    /// A list does not hold the number of items announced (or its bytes are not whole items).
    case wrongCount(expected: Int, actual: Int)
    /// The list does not match the commitment sent before it.
    case commitmentMismatch
    /// The batched DLEQ proof does not verify: the list was not made with the peer's one scalar
    /// (reordered, substituted or made with another key).
    case proofInvalid
}

/// Diffie-Hellman private set intersection over ristretto255 (docs/PROTOCOL.md §8).
///
/// Each side maps its elements to the group (`groupElement`), blinds them with a fresh secret
/// scalar and sends them shuffled; each re-blinds the other's list in the order received and
/// returns it. An element is in both sets exactly when its doubly blinded value is in both lists.
/// Both sides do n hash-to-group and n scalar multiplications for their own set and m for the
/// peer's; `threads` spreads them over cores.
public enum PrivateSetIntersection {
    /// Domain of `groupElement`: SHA-512("meishi-friends-element-v1" ‖ 0x00 ‖ element).
    public static let elementDomain = Array("meishi-friends-element-v1".utf8) + [0]
    /// Domain of the salted hashes of the `hash` mode.
    public static let hashDomain = Array("meishi-friends-hash-v1".utf8) + [0]
    /// Domain of the commitment to a returned list.
    public static let commitDomain = Array("meishi-friends-commit-v1".utf8) + [0]
    /// Items per list are at most this many (a proof indexes them with two bytes, RFC 9497).
    public static let maximumCount = 65_535

    /// The group element of one set element: ristretto255 `from_hash` of SHA-512(domain ‖ element).
    public static func groupElement<D: Collection>(_ element: D) -> Ristretto255.Point where D.Element == UInt8 {
        // No SHA-512 output is known to map to the identity.
        try! Ristretto255.Point(uniformBytes: SHA512.hash(elementDomain + Array(element)))
    }

    /// The `hash` mode's item: SHA-256(domain ‖ transcript hash ‖ element), salted per session.
    public static func saltedHash<D: Collection>(_ element: D, transcriptHash: [UInt8]) -> [UInt8] where D.Element == UInt8 {
        SHA256.hash(hashDomain + transcriptHash + Array(element))
    }

    /// The commitment to a list about to be returned: SHA-256(domain ‖ transcript hash ‖ role ‖ items).
    public static func commitment(to list: [Ristretto255.Point], transcriptHash: [UInt8], role: UInt8) -> [UInt8] {
        var input = commitDomain + transcriptHash + [role]
        input.reserveCapacity(input.count + list.count * Ristretto255.byteCount)
        for p in list { input += p.rawRepresentation }
        return SHA256.hash(input)
    }

    /// Splits `bytes` into `count` elements; refuses a wrong length, a non-canonical or identity
    /// element, and (with `distinct`) any repeat.
    public static func points(_ bytes: [UInt8], count: Int, distinct: Bool) throws(PSIError) -> [Ristretto255.Point] {
        guard bytes.count == count * Ristretto255.byteCount else {
            throw .wrongCount(expected: count, actual: bytes.count / Ristretto255.byteCount)
        }
        var out: [Ristretto255.Point] = []
        out.reserveCapacity(count)
        var seen = Set<Ristretto255.Point>(minimumCapacity: distinct ? count : 0)
        for i in 0..<count {
            let slice = bytes[i * Ristretto255.byteCount..<(i + 1) * Ristretto255.byteCount]
            guard let p = try? Ristretto255.Point(rawRepresentation: slice) else { throw .invalidPoint(index: i) }
            if distinct, !seen.insert(p).inserted { throw .duplicate(index: i) }
            out.append(p)
        }
        return out
    }

    /// `f(i)` for every i in 0..<count, spread over `threads` threads, in order.
    static func parallelMap<T: Sendable>(_ count: Int, threads: Int, _ f: @Sendable (Int) -> T) -> [T] {
        let workers = max(1, min(threads, count / 64 + 1))
        if workers == 1 { return (0..<count).map(f) }
        return [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            let base = buffer.baseAddress!
            nonisolated(unsafe) let out = base
            DispatchQueue.concurrentPerform(iterations: workers) { w in
                let lower = count * w / workers, upper = count * (w + 1) / workers
                for i in lower..<upper { (out + i).initialize(to: f(i)) }
            }
            initialized = count
        }
    }

    /// One side of an intersection: its secret scalar and its blinded elements in the order sent.
    public final class Blinding: Sendable {
        /// The fresh secret scalar of this session.
        public let scalar: Ristretto255.Scalar
        /// `scalar`·B: what the `verified` mode's proofs are checked against.
        public let publicKey: Ristretto255.Point
        /// The blinded elements, shuffled, as sent.
        public let blinded: [Ristretto255.Point]
        /// `blinded[i]` blinds element `order[i]` of the input.
        public let order: [Int]

        /// Maps `elements` to the group and blinds them; `shuffle: false` keeps their order (vectors).
        /// Elements must be distinct (a precondition: the caller deduplicates its set).
        public init(elements: [[UInt8]], scalar: Ristretto255.Scalar = Ristretto255.Scalar(), shuffle: Bool = true, threads: Int = 2) {
            precondition(Set(elements).count == elements.count, "PSI elements must be distinct")
            precondition(elements.count <= PrivateSetIntersection.maximumCount)
            self.scalar = scalar
            publicKey = Ristretto255.Point(generatorTimes: scalar)
            var shuffled = Array(elements.indices)
            if shuffle { SecureRandom.shuffle(&shuffled) }
            let order = shuffled
            self.order = order
            blinded = PrivateSetIntersection.parallelMap(elements.count, threads: threads) { i in
                // A Scalar is nonzero and the group has prime order: never the identity.
                try! PrivateSetIntersection.groupElement(elements[order[i]]).multiplied(by: scalar)
            }
        }

        init(scalar: Ristretto255.Scalar, publicKey: Ristretto255.Point, blinded: [Ristretto255.Point], order: [Int]) {
            self.scalar = scalar
            self.publicKey = publicKey
            self.blinded = blinded
            self.order = order
        }

        /// The same blinding without the input elements at `removed` (the rest renumbered in order),
        /// so a set blinded ahead can leave out what is learned later (the peer's own DID).
        public func removing(_ removed: Set<Int>) -> Blinding {
            guard !removed.isEmpty else { return self }
            let sortedRemoved = removed.sorted()
            func renumbered(_ i: Int) -> Int {
                var below = 0
                while below < sortedRemoved.count, sortedRemoved[below] < i { below += 1 }
                return i - below
            }
            let kept = blinded.indices.filter { !removed.contains(order[$0]) }
            return Blinding(scalar: scalar, publicKey: publicKey, blinded: kept.map { blinded[$0] }, order: kept.map { renumbered(order[$0]) })
        }

        /// The peer's blinded list times our scalar, in the order received.
        public func reblind(_ peer: [Ristretto255.Point], threads: Int = 2) -> [Ristretto255.Point] {
            PrivateSetIntersection.parallelMap(peer.count, threads: threads) { i in try! peer[i].multiplied(by: scalar) }
        }

        /// The peer's blinded list as received (`count` items of 32 bytes), checked and re-blinded in
        /// one pass: the scalar multiplication decodes each item anyway, so an item that is not a
        /// canonical encoding, is the identity, or repeats another is refused by its index here
        /// without decoding it twice. Returns the items and our re-blinding, in order.
        public func reblind(items bytes: [UInt8], count: Int, threads: Int = 2) throws(PSIError)
            -> (received: [Ristretto255.Point], reblinded: [Ristretto255.Point]) {
            guard bytes.count == count * Ristretto255.byteCount else {
                throw .wrongCount(expected: count, actual: bytes.count / Ristretto255.byteCount)
            }
            let items = (0..<count).map { Array(bytes[$0 * Ristretto255.byteCount..<($0 + 1) * Ristretto255.byteCount]) }
            var seen = Set<[UInt8]>(minimumCapacity: count)
            for (i, item) in items.enumerated() {
                // The top bit and the identity's all-zero encoding are what libsodium 1.0.18's decoder lets through.
                guard item[31] & 0x80 == 0, item.contains(where: { $0 != 0 }) else { throw .invalidPoint(index: i) }
                guard seen.insert(item).inserted else { throw .duplicate(index: i) }
            }
            let k = scalar
            let products = PrivateSetIntersection.parallelMap(count, threads: threads) { i -> [UInt8]? in
                var out = [UInt8](repeating: 0, count: Ristretto255.byteCount)
                let ok = k.rawRepresentation.withUnsafeBytes { n in
                    items[i].withUnsafeBytes { p in out.withUnsafeMutableBytes { Ristretto255.multiply(n, p, into: $0) } }
                }
                return ok ? out : nil
            }
            if let bad = products.firstIndex(where: { $0 == nil }) { throw .invalidPoint(index: bad) }
            return (items.map { Ristretto255.Point(unchecked: $0) }, products.map { Ristretto255.Point(unchecked: $0!) })
        }

        /// Indices (into the input elements) of our elements the peer also holds: `returned` is the
        /// peer's re-blinding of `blinded`, in our order; `reblindedPeer` is ours of the peer's list.
        public func intersection(returned: [Ristretto255.Point], reblindedPeer: [Ristretto255.Point]) -> [Int] {
            precondition(returned.count == blinded.count)
            let theirs = Set(reblindedPeer)
            return returned.indices.filter { theirs.contains(returned[$0]) }.map { order[$0] }.sorted()
        }
    }
}
