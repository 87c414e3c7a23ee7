import Foundation
import Logging
import MeishiCard
import MeishiText

/// A swift-log handler that writes `meishi: debug: …` lines to standard error.
struct StderrLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level
    private let label: String
    private let sink: Sink

    init(label: String, level: Logger.Level, sink: Sink) {
        self.label = label
        self.logLevel = level
        self.sink = sink
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let meta = metadata.merging(event.metadata ?? [:]) { $1 }
        let extra = meta.isEmpty ? "" : " " + meta.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        // Log text may quote a peer (an address, a reason): sanitised like every Console message.
        sink.write(Array("meishi: \(event.level): [\(label)] \(TerminalText.sanitized("\(event.message)\(extra)"))\n".utf8))
    }
}
