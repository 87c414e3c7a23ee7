import Foundation

/// Questions and progress on the controlling terminal (stderr side), never on stdout.
enum Terminal {
    static var available: Bool {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    /// Asks a yes/no question on /dev/tty; anything but y/yes is no.
    static func ask(_ question: String) -> Bool {
        guard let tty = fopen("/dev/tty", "r+") else { return false }
        defer { fclose(tty) }
        fputs(question, tty)
        fflush(tty)
        var line = [CChar](repeating: 0, count: 64)
        guard fgets(&line, Int32(line.count), tty) != nil else { return false }
        let answer = String(cString: line).trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        return answer == "y" || answer == "yes"
    }
}

import MeishiCard
import MeishiProximity

extension Terminal {
    /// Lists the peers announcing and asks which one (nil when the answer is not a listed number).
    static func choose(_ peers: [DiscoveredPeer]) -> DiscoveredPeer? {
        guard let tty = fopen("/dev/tty", "r+") else { return nil }
        defer { fclose(tty) }
        fputs("\rseveral people are announcing:\u{1B}[K\n", tty)
        for (n, p) in peers.enumerated() {
            fputs("  \(n + 1)) \(TerminalText.sanitized(p.announcement.alias ?? "(no alias)")) at \(p.host)\n", tty)
        }
        fputs("Which one? [1-\(peers.count)] ", tty)
        fflush(tty)
        var line = [CChar](repeating: 0, count: 32)
        guard fgets(&line, Int32(line.count), tty) != nil,
              let n = Int(String(cString: line).trimmingCharacters(in: .whitespacesAndNewlines)), (1...peers.count).contains(n) else { return nil }
        return peers[n - 1]
    }
}

/// A one-line spinner on stderr while waiting (only on a terminal).
final class Spinner: @unchecked Sendable {
    private let enabled: Bool
    private var timer: DispatchSourceTimer?
    private let queue = DispatchQueue(label: "meishi.spinner")

    init(enabled: Bool) { self.enabled = enabled }

    func start(_ text: String) {
        guard enabled else {
            FileHandle.standardError.write(Data("meishi: \(text)\n".utf8))
            return
        }
        let frames = Array("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
        var n = 0
        let t = DispatchSource.makeTimerSource(queue: queue)
        t.schedule(deadline: .now(), repeating: .milliseconds(100))
        t.setEventHandler {
            FileHandle.standardError.write(Data("\r\(frames[n % frames.count]) \(text)\u{1B}[K".utf8))
            n += 1
        }
        queue.sync { timer = t }
        t.resume()
    }

    func stop() {
        queue.sync {
            guard let t = timer else { return }
            t.cancel()
            timer = nil
            FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
        }
    }
}
