import ArgumentParser
import MeishiCard
import MeishiKit

struct Id: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show your DID, fingerprint and key file.",
        discussion: "Reads only the public identity: no passphrase is needed.")

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run() throws {
        let ctx = try global.context()
        let pub = try ctx.identities.loadPublic()
        let encrypted = try ctx.identities.isEncrypted()
        if json {
            Output.json(.object([
                "did": .string(pub.did),
                "fingerprint": .string(pub.fingerprint),
                "keyFile": .string(ctx.home.secretKeyPath),
                "pubKey": .string(Base64URL.encode(pub.boxPublicKey.rawRepresentation)),
                "encrypted": .bool(encrypted),
            ]))
            return
        }
        print("""
            did          \(pub.did)
            fingerprint  \(pub.fingerprint)
            secret key   \(ctx.home.secretKeyPath)\(encrypted ? " (encrypted)" : "")
            """)
    }
}
