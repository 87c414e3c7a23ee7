import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiProximity
import MeishiStore

/// Shell completion of contact REFs: the names (and ids) in the store of the home the command
/// line names (`--home`, else MEISHI_HOME, XDG_DATA_HOME, HOME). Reads only: a home without an
/// identity or a store completes nothing and nothing is created.
enum ContactCompletion {
    @Sendable static func refs(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        var flag: String?
        for (i, w) in words.enumerated() {
            if w == "--home", i + 1 < words.count { flag = words[i + 1] }
            if w.hasPrefix("--home=") { flag = String(w.dropFirst(7)) }
        }
        let env = ProcessInfo.processInfo.environment
        guard let home = try? Home.resolve(flag: flag, environment: env, workingDirectory: FileManager.default.currentDirectoryPath),
              IdentityStore(home: home).exists, SecureFile.exists(home.databasePath),
              let store = try? ContactsService(home: home).open(readOnly: true),
              let all = try? store.list(ContactQuery()) else { return [] }
        let names = all.compactMap(\.name).filter { $0.hasPrefix(prefix) }
        let ids = all.compactMap(\.id).map(String.init).filter { $0.hasPrefix(prefix) }
        return prefix.isEmpty || prefix.first!.isNumber ? names + ids : names
    }
}

/// Shell completion of `exchange --code N-word-word`: the words of generated codes.
enum CodeCompletion {
    @Sendable static func words(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        ExchangeCode.completions(of: prefix)
    }
}
