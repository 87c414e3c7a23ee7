import Foundation
import Logging

/// A swift-log handler that writes `meishi: debug: …` lines to standard error.
public struct StderrLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String

    public init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let meta = metadata.merging(event.metadata ?? [:]) { $1 }
        let extra = meta.isEmpty ? "" : " " + meta.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        FileHandle.standardError.write(Data("meishi: \(event.level): [\(label)] \(event.message)\(extra)\n".utf8))
    }
}
