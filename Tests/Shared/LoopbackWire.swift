import Foundation
import MeishiProximity

#if canImport(Glibc)
import Glibc
#endif

/// Blocking frames over a raw loopback socket: a hostile peer's or a relay's script.
struct Wire {
    let fd: Int32
    var decoder = FrameDecoder()
    var ready: [[UInt8]] = []

    /// Reads give up after 10 s of silence, so a test never hangs on a quiet peer.
    init(fd: Int32) {
        self.fd = fd
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The next frame body; throws when the peer closed or went quiet.
    mutating func read() throws -> [UInt8] {
        while ready.isEmpty {
            var buf = [UInt8](repeating: 0, count: 65536)
            let n = Glibc.read(fd, &buf, buf.count)
            guard n > 0 else { throw CocoaError(.fileReadUnknown) }
            ready += try decoder.feed(buf[0..<n])
        }
        return ready.removeFirst()
    }

    func write(_ body: [UInt8]) {
        let frame = FrameCodec.encode(body)
        _ = frame.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }
}

/// Plain sockets on 127.0.0.1.
enum Loopback {
    static func address(_ ip: String, port: Int = 0) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr(ip)
        return addr
    }

    /// A listening socket on a free port, and the port.
    static func listen() -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = address("127.0.0.1")
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        Glibc.listen(fd, 8)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return (fd, Int(UInt16(bigEndian: addr.sin_port)))
    }

    /// A TCP connection to `port` on 127.0.0.1, from the source address `source` when given (any 127.x.y.z).
    static func connect(to port: Int, from source: String? = nil) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if let source {
            var local = address(source)
            _ = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        var addr = address("127.0.0.1", port: port)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        return fd
    }
}
