import Foundation

/// The directory that holds one person's identity, card and contacts.
public struct Home: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// `--home` if given, else `$MEISHI_HOME`, else `$XDG_DATA_HOME/meishi`, else
    /// `~/.local/share/meishi`.
    public static func resolve(flag: String?, environment: [String: String]) throws(MeishiFailure) -> Home {
        if let flag, !flag.isEmpty { return Home(path: absolute(flag)) }
        if let env = environment["MEISHI_HOME"], !env.isEmpty { return Home(path: absolute(env)) }
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return Home(path: xdg + "/meishi") }
        guard let user = environment["HOME"], !user.isEmpty else {
            throw MeishiFailure("cannot find a home for meishi: HOME is not set", hint: "pass --home DIR or set MEISHI_HOME",
                                status: .usage)
        }
        return Home(path: user + "/.local/share/meishi")
    }

    private static func absolute(_ p: String) -> String {
        if p.hasPrefix("/") { return p }
        return FileManager.default.currentDirectoryPath + "/" + p
    }

    public var secretKeyPath: String { path + "/identity.key" }
    public var publicIdentityPath: String { path + "/identity.json" }
    public var cardPath: String { path + "/card.json" }
    public var databasePath: String { path + "/meishi.sqlite" }

    /// Creates the home (and missing parents) with mode 0700; tightens an existing one.
    public func ensureExists() throws(MeishiFailure) {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDir) {
            guard isDir.boolValue else { throw MeishiFailure("\(path) is not a directory", status: .usage) }
        } else {
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw MeishiFailure("cannot create \(path): \(error.localizedDescription)", status: .failure)
            }
        }
        if let mode = SecureFile.mode(of: path), mode & 0o077 != 0 { chmod(path, 0o700) }
    }

    public var exists: Bool { SecureFile.exists(path) }
}
