import Testing
import MeishiCard
import MeishiProximity
@testable import meishi

/// The executable words the exchange's events (Sources/meishi/ExchangeEvents.swift): the lines
/// a person reads, as `exchange` showed them when MeishiProximity still composed them (issue 23).
@Suite struct ExchangeEventsTests {
    @Test func eventsReadAsTheyDidAndStepsAreVerboseOnly() {
        let lost = ExchangeFailure.connectionLost(.closed(waiting: .card))
        let lines: [(ExchangeEvent, String)] = [
            (.peerHungUp(address: "unknown", failure: lost, triesUsed: 2),
             "a peer started pairing and hung up: connection lost before the peer's card (2 of 3 tries used)"),
            (.peerHungUp(address: "10.0.0.2", failure: .protocolFailure(.codesDoNotMatch), triesUsed: 1),
             "someone at 10.0.0.2 started pairing and hung up: the codes do not match (1 of 3 tries used)"),
            (.triedNextCandidate(failure: .protocolFailure(.codesDoNotMatch), triesUsed: 1, nameplate: 7),
             "the codes do not match (1 of 3 tries used); trying the next peer announcing code 7"),
            (.triedNextCandidate(failure: .unreachable(.cannotConnect(to: "10.0.0.3 port 9", .refused)), triesUsed: nil, nameplate: 7),
             "cannot connect to 10.0.0.3 port 9: connection refused (nothing is listening on that port); trying the next peer announcing code 7"),
            (.quietFailure(.peerFailed(address: "10.0.0.4", failure: .timedOut(.noPeerCompleted), stillListening: true), alsoFailed: 3),
             "peer 10.0.0.4 failed: timed out: no peer completed an exchange; still listening (and 3 more failed connections)"),
            (.quietFailure(.cutIdle(address: "10.0.0.5"), alsoFailed: 0), "cut a connection from 10.0.0.5: it sent nothing while others waited"),
            (.ignoredPeer(host: "10.0.0.6", port: 47823, alias: "Mei\u{1B}[2J"),
             "ignoring the peer announced at 10.0.0.6 port 47823 as Mei\\u{1B}[2J: nothing accepts a connection there (a forged or stale announcement)"),
            (.announcing(interfaces: ["eth0", "wlan0"], groups: ["239.255.77.77:47824"]), "announcing on eth0, wlan0 (239.255.77.77:47824)"),
        ]
        for (event, expected) in lines {
            let line = ExchangeEvents.line(event)
            #expect(line?.text == expected)
            #expect(line?.step == false)
        }
        let step = ExchangeEvents.line(.step(.connected(address: "10.0.0.2", role: .dialer, withCode: true)))
        #expect(step?.text == "connected to 10.0.0.2 as the dialer; the code authenticates the session (CPace)" && step?.step == true)
        // The port is the command's to show (its spinner, the line to run on the other machine).
        #expect(ExchangeEvents.line(.listening(port: 47823)) == nil && ExchangeEvents.line(.waitingOnMailbox) == nil)
    }

    /// Why an interface is left out (`--verbose`), worded here since issue 23: the words the
    /// rules' tests asserted when MeishiProximity composed them.
    @Test func interfacesLeftOutReadAsTheyDid() {
        let words: [InterfaceExclusion: String] = [
            .loopback: "loopback",
            .pointToPoint: "a point-to-point link (a VPN tunnel such as WireGuard or Tailscale)",
            .tunOrTap: "a tun/tap device (a VPN or a virtual machine's link)",
            .noBroadcast: "no broadcast (not a LAN)",
            .portOfBridgeOrBond: "a port of a bridge or bond (its master carries the traffic)",
            .bridgeWithoutPhysicalPort: "a bridge without a physical port (Docker, libvirt, containers)",
        ]
        for reason in InterfaceExclusion.allCases { #expect(ExchangeEvents.describe(reason) == words[reason]) }
        let line = ExchangeEvents.line(.step(.notAnnouncing(interface: "docker0", reason: .bridgeWithoutPhysicalPort)))
        #expect(line?.text == "not announcing on docker0: a bridge without a physical port (Docker, libvirt, containers); --interface docker0 would use it")
        #expect(line?.step == true)
    }

    /// The key-rotation phase's problem and a socket's failure are values worded here (issue 23),
    /// as they read when MeishiProximity composed them.
    @Test func rotationProblemsAndSocketFailuresReadAsTheyDid() {
        let words: [(RotationPhase.Problem, String)] = [
            (.unexpectedMessage(type: 0x71), "unexpected message 113"),
            (.notEndingAtPeersCard, "the statements do not end at the peer's card"),
            (.didNotVerify(.badOldSignature), "the statements did not verify (badOldSignature)"),
        ]
        for (problem, expected) in words { #expect(ExchangeEvents.describe(problem) == expected) }
        // The interruption as Swift prints it, as before (its own wording is left for later).
        #expect(ExchangeEvents.describe(RotationPhase.Problem.brokeOff(.connectionLost(.closed(waiting: .card)))).hasPrefix("broke off (connectionLost("))
        #expect(ExchangeWording.describe(ExchangeFailure.connectionLost(.failed(.reset))) == "connection lost (the other side reset the connection)")
        #expect(ExchangeWording.describe(ExchangeFailure.connectionLost(.failed(.other("Broken pipe")))) == "connection lost (Broken pipe)")
    }

    /// The exchange follows the rule of every other command (trial 7, F20): a failure quotes the
    /// peer's text as it came, `--json` escapes it as JSON (`\u001b`), the terminal as `\u{1B}`.
    /// Its words escaped the text when composed, so its JSON errors held `\u{1B}` (note8, issue 23).
    @Test func exchangeFailuresCarryPeerTextRawToJSONAndEscapedToTheTerminal() {
        let evil = "no\u{1B}[2J thanks"
        let failures: [ExchangeFailure] = [
            .protocolFailure(.rejectedByPeer(evil)), .protocolFailure(.invalidCard(.malformed("unknown member \"\(evil)\""))),
            .unknownHost(evil), .noSuchInterface(evil, available: ["lo"]),
        ]
        for f in failures {
            let failure = MeishiFailure(f)
            #expect(failure.message.contains(evil), "\(failure.message)")
            let json = JSONText.pretty(failure.jsonDocument)
            #expect(json.contains("no\\u001b[2J thanks") && !json.contains("\\u{"), "\(json)")
            let recorder = Recorder()
            Console(standardOutput: Sink { recorder.appendOut($0) }, standardError: Sink { recorder.appendErr($0) }).report(failure)
            #expect(recorder.stderr.contains("no\\u{1B}[2J thanks") && PeerTextEndToEndTests.raw(recorder.stderr).isEmpty, "\(recorder.stderr)")
        }
        // A comparison the peer aborted: raw in its JSON reason, escaped in the line under the card.
        let aborted = FriendsWording.failed(.abortedByPeer(evil + "\nforged line"))
        #expect(aborted.contains(evil))
        #expect(!Console.safe(aborted).contains("\n") && PeerTextEndToEndTests.raw(Console.safe(aborted)).isEmpty)
    }
}
