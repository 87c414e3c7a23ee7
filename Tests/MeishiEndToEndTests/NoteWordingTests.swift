import Testing
import MeishiKit
import MeishiProximity
@testable import meishi

/// The relay's and message delivery's failures, and a note listener's events, are values that
/// the executable words (issue 23): each reads exactly as it did when MeishiProximity composed
/// the sentence (`RelayFailure.description`, `MessageDeliveryFailure.description`, the listener's
/// log lines).
@Suite struct NoteWordingTests {
    static let mailbox = MailboxURL("ws://relay.example:4000/v1")!
    static let transit = TransitAddress("tcp:relay.example:4001")!

    @Test func relayFailuresReadAsTheyDid() {
        let words: [(RelayFailure, String)] = [
            (.mailboxUnreachable(Self.mailbox, .refused),
             "the mailbox server is unreachable: cannot connect to ws://relay.example:4000/v1: connection refused (nothing is listening on that port)"),
            (.notAMailbox(Self.mailbox, nil), "ws://relay.example:4000/v1 did not accept a WebSocket"),
            (.notAMailbox(Self.mailbox, .other("bad HTTP")), "ws://relay.example:4000/v1 did not answer as a mailbox server: bad HTTP"),
            (.nameplateTaken(7), "nameplate 7 is taken on the mailbox server: two others are using the number of this code"),
            (.refusedByMailbox(.said("down\u{1B}[2J")), "the mailbox server refused: down\\u{1B}[2J"),
            (.refusedByMailbox(.notAMailboxMessage), "the mailbox server refused: it sent something that is not a mailbox message"),
            (.refusedByMailbox(.badClaim), "the mailbox server refused: it sent a second or malformed 'claimed'"),
            (.refusedByMailbox(.noWelcome), "the mailbox server refused: it did not welcome us"),
            (.refusedByMailbox(.messageTooLarge(maximumBytes: 65536)),
             "the mailbox server sent a message over 64 KiB (the other side's, or its own)"),
            (.mailboxLost(.closed(before: .otherSide)), "lost the mailbox server: it closed the connection before the other side came"),
            (.mailboxLost(.closed(before: .listener)), "lost the mailbox server: it closed the connection before the listener answered"),
            (.mailboxLost(.closed(before: .welcome)), "lost the mailbox server: it closed the connection before welcoming us"),
            (.mailboxLost(.closed(before: nil)), "lost the mailbox server: it closed the connection"),
            (.mailboxLost(.failed(.noRoute)), "lost the mailbox server: no route to that host"),
            (.mailboxLost(.noWelcome(seconds: 10)), "lost the mailbox server: no welcome within 10 s"),
            (.mailboxLost(.lost), "lost the mailbox server: the connection was lost"),
            (.peerNeverCame(7), "nobody else came to nameplate 7 on the mailbox server"),
            (.peerNotMeishi, "the other side on the mailbox does not speak meishi's relay protocol"),
            (.transitUnreachable(Self.transit, .noAnswer), "the transit relay is unreachable: cannot connect to tcp:relay.example:4001: no answer"),
            (.transitRefused(.answered("impatient\u{1B}")), "the transit relay did not pair us: it answered 'impatient\\u{1B}'"),
            (.transitRefused(.notARelayLine), "the transit relay did not pair us: it answered something that is not a transit relay's line"),
            (.transitRefused(.closedBeforePairing), "the transit relay did not pair us: it closed the connection before pairing us"),
            (.transitRefused(.nobodyPairedInTime), "the transit relay did not pair us: neither a direct connection nor the relay paired us in time"),
            (.sessionLost(path: "the transit relay tcp:relay.example:4001", .failed(.reset)),
             "lost the transit relay tcp:relay.example:4001 (the other side reset the connection)"),
        ]
        for (failure, expected) in words {
            #expect(RelayWording.describe(failure) == expected)
            #expect(MeishiFailure(ExchangeFailure.relay(failure)).message.hasPrefix(expected))
        }
        // The notes say the same, as a delivery's failure.
        #expect(MeishiFailure(MessageDeliveryFailure.relay(.peerNeverCame(7))).message == "nobody else came to nameplate 7 on the mailbox server")
    }

    @Test func deliveryFailuresReadAsTheyDid() {
        let peer = NoteAddress.listener("10.0.0.2:47825"), relayed = NoteAddress.transitRelay(Self.transit)
        let words: [(MessageDeliveryFailure, String)] = [
            (.notDelivered(.noListenerAnswered), "not delivered: no listener answered for this contact"),
            (.notDelivered(.noListenerOnMailbox), "not delivered: no listener answered through the mailbox server for this contact"),
            (.notDelivered(.cannotConnect(peer, .refused)),
             "not delivered: cannot connect to 10.0.0.2:47825: connection refused (nothing is listening on that port)"),
            (.notDelivered(.cannotConnect(peer, .other(""))), "not delivered: cannot connect to 10.0.0.2:47825: no answer"),
            (.notDelivered(.hungUp(peer)),
             "not delivered: 10.0.0.2:47825 hung up without answering (not a contact that knows us, or a stale clock)"),
            (.notDelivered(.notAcknowledged(relayed, card: true)), "not delivered: the transit relay tcp:relay.example:4001 did not acknowledge the card"),
            (.notDelivered(.notAcknowledged(peer, card: false)), "not delivered: 10.0.0.2:47825 did not acknowledge the message"),
            (.notDelivered(.noAnswerInTime(peer)), "not delivered: 10.0.0.2:47825 did not answer in time"),
            (.notDelivered(.connectionLost(peer, error: "Connection reset by peer")),
             "not delivered: connection to 10.0.0.2:47825 lost (Connection reset by peer)"),
            (.refused(.notNewer), "refused by the recipient: not newer than the card held there"),
            (.handshakeFailed(.malformedAcknowledgement), "the peer did not prove it is that contact: a malformed acknowledgement"),
            (.handshakeFailed(.unexpectedAnswer), "the peer did not prove it is that contact: unexpected answer"),
            (.handshakeFailed(.didNotVerify), "the peer did not prove it is that contact: the handshake did not verify"),
            (.unknownHost("nowhere\u{1B}"), "cannot find the host nowhere\\u{1B}"),
            (.noMulticastInterface, "no IPv4 network interface supports multicast"),
            (.linkLocalWithoutInterface("fe80::1"), "fe80::1 is a link-local address, which needs the interface it is on (as fe80::1%eth0)"),
            (.addressInUse(47825), "port 47825 is already in use on this machine"),
            (.io(.cannotListInterfaces(error: "EPERM")), "cannot list network interfaces: EPERM"),
            (.io(.cannotListenUDP(port: 47826, error: "EACCES")), "cannot listen on UDP port 47826: EACCES"),
            (.io(.cannotJoinGroup("239.255.77.77", port: 47826, error: "ENODEV")), "cannot join the multicast group 239.255.77.77:47826: ENODEV"),
            (.io(.cannotSendToGroup("239.255.77.77", port: 47826, error: "ENETUNREACH")),
             "cannot send to the multicast group 239.255.77.77:47826: ENETUNREACH"),
            (.io(.cannotListen(host: "::", port: 1, error: "EACCES")), "cannot listen on :::1: EACCES"),
        ]
        for (failure, expected) in words { #expect(NoteWording.describe(failure) == expected) }
        #expect(NoteWording.describe(relayed) == "the transit relay tcp:relay.example:4001")
        #expect(NoteWording.describe(MessageRefusal.notAuthenticated) == "the exchange was not authenticated there (--yes without a code)")
        #expect(Set(MessageRefusal.allCases.map { NoteWording.describe($0) }).count == MessageRefusal.allCases.count)
    }

    @Test func listenerEventsReadAsTheyDid() {
        let lines: [(ListenerEvent, String)] = [
            (.refused(from: "10.0.0.2", .card(.otherDID)), "refused a message from 10.0.0.2: a card: the card is another person's"),
            (.refused(from: "10.0.0.2", .handshakeNotAuthenticated), "refused a message from 10.0.0.2: failed authentication (handshake)"),
            (.refused(from: "10.0.0.2", .staleHandshake(maximumSkew: 120)),
             "refused a message from 10.0.0.2: stale handshake (a replay, or clocks more than 120s apart)"),
            (.refused(from: "10.0.0.2", .protocolViolation(.frameTooLarge(70000))),
             "refused a message from 10.0.0.2: " + ExchangeError.frameTooLarge(70000).wireReason),
            (.refused(from: "10.0.0.2", .connectionLost(error: "EOF")), "refused a message from 10.0.0.2: connection lost (EOF)"),
            (.refused(from: nil, .noMessage), "refused a message from a sender whose address is gone: no message after the handshake"),
            (.summarised(.cutIdle(from: nil), untold: 0), "cut a connection from a sender whose address is gone: it had sent no hello while others waited"),
            (.summarised(.refused(from: "10.0.0.3", .message(.unknownSender)), untold: 0), "refused a message from 10.0.0.3: unknown sender"),
            (.summarised(.refused(from: "10.0.0.3", .notAHello), untold: 4),
             "refused a message from 10.0.0.3: not a message hello (and 4 more failed connections)"),
            (.summarised(.cutIdle(from: "10.0.0.4"), untold: 2),
             "cut a connection from 10.0.0.4: it had sent no hello while others waited (and 2 more failed connections)"),
            (.summarised(.probeIgnored(from: "10.0.0.5", .tooMany(perSecond: 20)), untold: 9),
             "ignored probes from 10.0.0.5: more than 20 a second (and 9 more ignored probes)"),
            (.summarised(.probeIgnored(from: "10.0.0.5", .replayed), untold: 0), "ignored a replayed probe from 10.0.0.5"),
            (.summarised(.probeIgnored(from: "10.0.0.5", .unanswerable(error: "EHOSTUNREACH")), untold: 0),
             "could not answer a probe from 10.0.0.5: EHOSTUNREACH"),
            (.summarised(.mailboxLost(.relay(.mailboxLost(.closed(before: nil))), retrySeconds: 3), untold: 1),
             "the mailbox server: lost the mailbox server: it closed the connection; trying again every 3 s (and 1 more lost mailboxes)"),
            (.probesNotAnswered(.noMulticastInterface, retrySeconds: 3, tcpPort: 47825),
             "not answering probes yet (no IPv4 network interface supports multicast): trying again every 3 s; meanwhile senders need --peer HOST:47825"),
            (.answeringProbes, "answering probes now"),
            (.probesStopped(error: nil, retrySeconds: 3), "stopped answering probes (the socket closed): trying again in 3 s"),
            (.probesStopped(error: "ENETDOWN", retrySeconds: 3), "stopped answering probes (ENETDOWN): trying again in 3 s"),
            (.answeringProbesOn(["eth1", "wlan0"]), "answering probes on eth1, wlan0 too"),
            (.callNotAnswered(maximum: 4), "a contact called through the mailbox server while 4 calls were in hand: not answered"),
            (.callFailed(.relay(.transitRefused(.closedBeforePairing))),
             "a contact called through the mailbox server, but the transit relay did not pair us: it closed the connection before pairing us"),
        ]
        for (event, expected) in lines { #expect(NoteEvents.describe(event) == expected) }
        #expect(NoteEvents.describe(MessageService.ListenEvent.expiredNotPurged(error: "disk I/O error"))
                == "expired messages not purged yet: disk I/O error")
        #expect(NoteEvents.describe(.callingOnMailbox(Self.mailbox, day: 20_833, side: "0123456789abcdef"))
                == "calling on the mailbox server ws://relay.example:4000/v1 (the pair's mailbox of day 20833, side 0123456789abcdef)")
        #expect(NoteEvents.describe(.listenerAnswered(Self.transit)) == "the listener answered; connecting to the transit relay tcp:relay.example:4001")
        #expect(NoteEvents.describe(.ignoredAnswer(from: "10.0.0.6")) == "ignored an answer from 10.0.0.6 that does not prove the pair key")
    }
}
