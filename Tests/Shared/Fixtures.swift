import Foundation

/// Locates files under the package's fixtures/ folder.
enum Fixtures {
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    static func url(_ relative: String) -> URL { root.appendingPathComponent("fixtures/" + relative) }

    static func data(_ relative: String) throws -> Data { try Data(contentsOf: url(relative)) }

    static func json(_ relative: String) throws -> Any { try JSONSerialization.jsonObject(with: data(relative)) }

    /// A fresh temporary directory, removed by the caller with `cleanUp`.
    static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "meishi-test-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
