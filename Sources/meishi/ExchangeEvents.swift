import MeishiProximity
import MeishiText

/// The words of what happens during an exchange (`ExchangeEvent`, told by MeishiProximity and
/// MeishiKit as values). `exchange` and `exchange --table` decide where each line goes; the
/// failures inside an event are worded by `ExchangeWording` (ErrorMessages/ExchangeFailures.swift).
enum ExchangeEvents {
    /// The line for `event` and whether it is a step (shown with `--verbose` only); nil for what a
    /// command shows its own way (`.listening`, `.waitingOnMailbox`).
    static func line(_ event: ExchangeEvent) -> (text: String, step: Bool)? {
        switch event {
        case .listening, .waitingOnMailbox: nil
        case .step(let step): (describe(step), true)
        default: note(event).map { ($0, false) }
        }
    }

    private static func note(_ event: ExchangeEvent) -> String? {
        switch event {
        case .announcing(let interfaces, let groups):
            "announcing on \(interfaces.joined(separator: ", ")) (\(groups.joined(separator: ", ")))"
        case .ipv6Unavailable(let error): "IPv6 announcements unavailable (\(error)); using IPv4 only"
        case .stillListening: "still listening"
        case .nobodyFound: "nobody found on this network (is the Wi-Fi keeping devices apart?): both run with --code CODE --relay"
        case .ignoredPeer(let host, let port, let alias):
            "ignoring the peer announced at \(host) port \(port)" + (alias.map { " as \(TerminalText.sanitized($0))" } ?? "")
                + ": nothing accepts a connection there (a forged or stale announcement)"
        case .chosenPeerGone(let host, let alias, let failure):
            "\(alias.map { TerminalText.sanitized($0) + " at " } ?? "")\(host) did not pair (\(ExchangeWording.describe(failure))): "
                + "it left, or chose someone else; choosing again"
        case .codesMatch: "the codes match: the other side typed the same code"
        case .peerHungUp(let address, let failure, let used):
            "\(address == "unknown" ? "a peer" : "someone at \(address)") started pairing and hung up: "
                + "\(ExchangeWording.describe(failure)) \(tries(used))"
        case .stillTryingOthers: "still trying the other peers announcing the same code"
        case .pairingAbandoned(let peer, let failure, let used):
            "the pairing with \(peer) was abandoned after the code was computed: \(ExchangeWording.describe(failure)) \(tries(used))"
        case .triedNextCandidate(let failure, let used, let nameplate):
            ExchangeWording.describe(failure) + (used.map { " " + tries($0) } ?? "") + "; trying the next peer announcing code \(nameplate)"
        case .quietFailure(let failure, let more):
            describe(failure) + (more > 0 ? " (and \(more) more failed connections)" : "")
        case .listening, .waitingOnMailbox, .step: nil
        }
    }

    /// "(2 of 3 tries used)".
    private static func tries(_ used: Int) -> String {
        "(\(used) of \(GuessBudget.allowed) tries used)"
    }

    private static func describe(_ failure: ExchangeEvent.QuietFailure) -> String {
        switch failure {
        case .peerFailed(let address, let failure, let stillListening):
            "peer \(address) failed: \(ExchangeWording.describe(failure))" + (stillListening ? "; still listening" : "")
        case .noTriesLeft(let address): "refused \(address): no tries left while another pairing is in progress"
        case .banned(let address): "ignoring \(address): too many failed attempts in the last 10 minutes"
        case .cutIdle(let address): "cut a connection from \(address): it sent nothing while others waited"
        }
    }

    /// Why the peer's key rotations were dropped (the values as they read before issue 23 typed them).
    static func describe(_ problem: RotationPhase.Problem) -> String {
        switch problem {
        case .unexpectedMessage(let type): "unexpected message \(type)"
        case .notEndingAtPeersCard: "the statements do not end at the peer's card"
        case .didNotVerify(let error): "the statements did not verify (\(error))"
        case .brokeOff(let reason): "broke off (\(reason))"
        }
    }

    /// Why discovery leaves an interface out by default.
    static func describe(_ why: InterfaceExclusion) -> String {
        switch why {
        case .loopback: "loopback"
        case .pointToPoint: "a point-to-point link (a VPN tunnel such as WireGuard or Tailscale)"
        case .tunOrTap: "a tun/tap device (a VPN or a virtual machine's link)"
        case .noBroadcast: "no broadcast (not a LAN)"
        case .portOfBridgeOrBond: "a port of a bridge or bond (its master carries the traffic)"
        case .bridgeWithoutPhysicalPort: "a bridge without a physical port (Docker, libvirt, containers)"
        }
    }

    static func describe(_ step: ExchangeStep) -> String {
        switch step {
        case .notAnnouncing(let name, let why): "not announcing on \(name): \(describe(why)); --interface \(name) would use it"
        case .connected(let address, let role, let withCode):
            "connected to \(address) as the \(role == .dialer ? "dialer" : "listener")"
                + (withCode ? "; the code authenticates the session (CPace)" : "")
        case .sealed: "handshake complete: the session is sealed"
        case .peerConfirmed: "the other side confirmed the code"
        case .cardSent(let bytes): "sent my card, signed now (\(bytes) bytes)"
        case .cardReceived(let bytes): "received the other card (\(bytes) bytes): signature, DID and time verified"
        case .bothAcknowledged: "both cards acknowledged"
        case .phaseEnded(let phase, let ms): "\(summary(phase)) in \(ms) ms"
        case .connectingToMailbox(let servers, let side): "connecting to the mailbox server \(servers.mailbox) as side \(side)"
        case .claimingNameplate(let nameplate, let appID): "claiming nameplate \(nameplate) for appid \(appID)"
        case .peerOnMailbox(let servers, let side):
            "the other side (\(side)) is on the mailbox; connecting to the transit relay \(servers.transit)"
        case .transitPaired(let servers, let role):
            "the transit relay \(servers.transit) paired us; running the session as the \(role == .dialer ? "dialer" : "listener")"
        case .offeringDirect(let addresses):
            addresses.isEmpty ? "no address to offer for direct connections; this side still dials the other's"
                              : "offering direct connections at \(addresses.joined(separator: ", "))"
        case .racingDirect(let servers, let side, let hints):
            "the other side (\(side)) is on the mailbox, offering \(hints) direct address(es); racing them against the transit relay \(servers.transit)"
        case .tryingDirect(let address): "trying a direct connection to \(address)"
        case .connectingToTransit(let servers): "connecting to the transit relay \(servers.transit)"
        case .relayHeld(let servers, let grace):
            "the transit relay \(servers.transit) paired us, but a direct connection is still proving itself: waiting up to \(Int(grace * 1000)) ms for it"
        case .directPaired(let name, let role): "the session goes through \(name); running it as the \(role == .dialer ? "dialer" : "listener")"
        case .storingCard(let database): "the connection is closed; storing the card in \(database)"
        case .notChosen(let address):
            "closed a connection from \(address): not the peer discovery chose (it chose someone else, or checked that this side listens)"
        }
    }

    /// How a post-card phase went, by its type: a new phase adds its line here.
    static func summary(_ phase: any PostCardPhase) -> String {
        switch phase {
        case let friends as CommonFriendsExchangePhase:
            "comparing contacts for common friends (asked for \(friends.request.mode.rawValue)): \(friends.cost.bytesSent) bytes sent, "
                + "\(friends.cost.bytesReceived) received"
        case let message as ExchangeMessagePhase:
            "message phase: " + (message.outcome.withheld ? "ours withheld (not authenticated)"
                                 : message.outcome.sentEnvelope.map { "ours \($0.encoded.count) bytes" } ?? "none from us")
                + (message.outcome.received == nil ? ", none from them" : ", theirs received")
                + (message.outcome.failure == nil ? "" : "; broke off")
        case let rotations as RotationPhase:
            "key rotations: " + (rotations.problem.map(describe)
                                 ?? (rotations.received.isEmpty ? "none from the peer" : "\(rotations.received.count) from the peer"))
        default:
            "the \(phase.name) phase ended"
        }
    }
}
