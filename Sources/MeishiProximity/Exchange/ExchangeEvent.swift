/// What happens during an exchange that the person may be told, as a value: the application
/// words each one (the `meishi` executable in Sources/meishi/ExchangeEvents.swift); no sentence
/// is composed here. Nothing a peer sent is in an event beyond its address, its alias and sizes,
/// and the application sanitises those.
public enum ExchangeEvent: Sendable {
    /// Discovery joined its multicast groups (`groups`: "group:port") on these interfaces.
    case announcing(interfaces: [String], groups: [String])
    /// IPv6 link-local announcements could not be set up (the system's error); IPv4 goes on alone.
    case ipv6Unavailable(error: String)
    /// The TCP listener is bound on `port` (again after a lost pairing, when discovery serves anew).
    case listening(port: Int)
    /// Through the relay: on the mailbox server, waiting for the other side.
    case waitingOnMailbox
    /// A lost pairing released the choice: this side listens for a peer again.
    case stillListening
    /// Without a code: the peer discovery chose (`host`, announced as `alias`) could not be
    /// dialled or closed the connection (it left, or chose someone else): discovery chooses again.
    case chosenPeerGone(host: String, alias: String?, failure: ExchangeFailure)
    /// Discovery has heard nobody for `Rendezvous.quietAfter` seconds.
    case nobodyFound
    /// Peers heard together were checked: nothing accepts a connection at this one's announced port.
    case ignoredPeer(host: String, port: Int, alias: String?)
    /// CPace's key confirmation passed: both typed the same code.
    case codesMatch
    /// A listener's pairing ended after its code could be computed (`triesUsed` of `GuessBudget.allowed`).
    case peerHungUp(address: String, failure: ExchangeFailure, triesUsed: Int)
    /// After a mismatch, the other candidates announcing the same code are still being tried.
    case stillTryingOthers
    /// A dialled pairing ended after its code could be computed.
    case pairingAbandoned(peer: String, failure: ExchangeFailure, triesUsed: Int)
    /// A dialled candidate failed and the next one announcing code `nameplate` is tried;
    /// `triesUsed` is given when it was a code mismatch.
    case triedNextCandidate(failure: ExchangeFailure, triesUsed: Int?, nameplate: Int)
    /// A listener's connection that cost nothing failed (at most one a second is told:
    /// `alsoFailed` counts those left untold since the last).
    case quietFailure(QuietFailure, alsoFailed: Int)
    /// A step as it happens, for `--verbose`.
    case step(ExchangeStep)

    /// A failure of a connection that never got as far as the code.
    public enum QuietFailure: Sendable {
        /// The peer at `address` failed before its code was used (`stillListening`: the listener goes on).
        case peerFailed(address: String, failure: ExchangeFailure, stillListening: Bool)
        /// Refused: the last try is held by another pairing in progress.
        case noTriesLeft(address: String)
        /// Refused: `address` failed too often in the last 10 minutes (`PeerGuard`).
        case banned(address: String)
        /// An idle connection from `address` was cut to make room for others (`ConnectionSlots`).
        case cutIdle(address: String)
    }
}

/// The steps of an exchange that `--verbose` shows: nothing a peer sent beyond sizes and addresses.
public enum ExchangeStep: Sendable {
    /// An interface discovery leaves out by default, and why (`InterfaceRules.exclusion`);
    /// `--interface` would use it.
    case notAnnouncing(interface: String, reason: InterfaceExclusion)
    /// A connection to `address` is open; `withCode`: CPace authenticates the session.
    case connected(address: String, role: ExchangeSession.Role, withCode: Bool)
    /// The handshake is complete: the session is sealed.
    case sealed
    /// The other side confirmed the code.
    case peerConfirmed
    /// Our card was signed and sent.
    case cardSent(bytes: Int)
    /// The peer's card arrived and verified.
    case cardReceived(bytes: Int)
    /// Both cards are acknowledged.
    case bothAcknowledged
    /// A post-card phase ended after `milliseconds` (the application words it by its type).
    case phaseEnded(any PostCardPhase, milliseconds: Int)
    /// `--relay`: connecting to the mailbox server as `side`.
    case connectingToMailbox(RelayServers, side: String)
    /// `--relay`: claiming the code's nameplate for `appID`.
    case claimingNameplate(Int, appID: String)
    /// `--relay`: the other side (`side`) is on the mailbox; connecting to the transit relay.
    case peerOnMailbox(RelayServers, side: String)
    /// `--relay`: the transit relay paired us; the session runs as the dialer or the listener.
    case transitPaired(RelayServers, role: ExchangeSession.Role)
    /// `--relay`: the addresses offered for direct connections (none: this side only dials).
    case offeringDirect([String])
    /// `--relay`: the other side (`side`) is on the mailbox offering `hints` direct addresses, raced against the transit relay.
    case racingDirect(RelayServers, side: String, hints: Int)
    /// `--relay`: dialling one of the other side's direct addresses.
    case tryingDirect(String)
    /// `--relay`: dialling the transit relay in the race.
    case connectingToTransit(RelayServers)
    /// `--relay`: the transit relay paired us first, but a direct connection is open and still
    /// proving itself: the dialer waits for it up to `grace` seconds before it takes the relay.
    case relayHeld(RelayServers, grace: Double)
    /// `--relay`: a direct connection (named) carries the session.
    case directPaired(String, role: ExchangeSession.Role)
    /// A connection from `address` did not introduce the session discovery chose (it chose
    /// someone else, or checked that this side listens): closed, and this side goes on listening.
    case notChosen(address: String)
    /// The application stores the peer's card in `database` now that the connection is closed.
    case storingCard(database: String)
}
