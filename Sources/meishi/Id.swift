import ArgumentParser
import MeishiCard
import MeishiKit

struct Id: MeishiCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show your DID, fingerprint and key file.",
        discussion: "Reads only the public identity: no passphrase is needed.")

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        let pub = try session.identities.loadPublic()
        let encrypted = try session.identities.isEncrypted()
        if json {
            ctx.out.json(.object([
                "did": .string(pub.did),
                "fingerprint": .string(pub.fingerprint),
                "keyFile": .string(session.home.secretKeyPath),
                "pubKey": .string(Base64URL.encode(pub.boxPublicKey.rawRepresentation)),
                "encrypted": .bool(encrypted),
            ]))
            return
        }
        ctx.out.line("""
            did          \(pub.did)
            fingerprint  \(pub.fingerprint)
            secret key   \(session.home.secretKeyPath)\(encrypted ? " (encrypted)" : "")
            """)
    }
}
