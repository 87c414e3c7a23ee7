/// Length-prefixed frames: a 4-byte big-endian length, then that many bytes (1 … 65536).
public enum FrameCodec {
    /// Largest frame body, in bytes. A peer announcing more is refused before anything is read.
    public static let maximumBody = 65_536

    public static func encode(_ body: [UInt8]) -> [UInt8] {
        precondition(!body.isEmpty && body.count <= maximumBody)
        let n = UInt32(body.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + body
    }
}

/// Reassembles frames from a byte stream that arrives in arbitrary pieces.
public struct FrameDecoder {
    private var buffer: [UInt8] = []

    public init() {}

    /// Bytes received but not yet part of a whole frame.
    public var pendingByteCount: Int { buffer.count }

    /// Appends `bytes` and returns every frame body now complete.
    public mutating func feed<B: Collection>(_ bytes: B) throws(ExchangeError) -> [[UInt8]] where B.Element == UInt8 {
        buffer.append(contentsOf: bytes)
        var frames: [[UInt8]] = []
        while buffer.count >= 4 {
            let length = Int(buffer[0]) << 24 | Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
            guard length >= 1 else { throw .malformedFrame("empty frame") }
            guard length <= FrameCodec.maximumBody else { throw .frameTooLarge(length) }
            guard buffer.count >= 4 + length else { break }
            frames.append(Array(buffer[4..<4 + length]))
            buffer.removeFirst(4 + length)
        }
        return frames
    }
}
