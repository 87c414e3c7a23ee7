import Testing
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
}
