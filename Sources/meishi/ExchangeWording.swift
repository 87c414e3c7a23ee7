import MeishiCard
import MeishiProximity

/// The words of the exchange's typed outcomes that the library leaves to the executable.
enum ExchangeWording {
    /// A comparison that failed: a lost connection as `ExchangeTransport.describe` says it, else
    /// the reason the phase gave (or would give) the peer.
    static func describe(_ e: CommonFriendsError) -> String {
        if case .connection(let loss) = e { return ExchangeTransport.describe(.connectionLost(loss)) }
        return e.description
    }

    /// Why our note could not be sealed, as `meishi send` says it.
    static func describe(_ e: MessageEnvelopeError) -> String {
        MeishiFailure(e).message
    }
}
