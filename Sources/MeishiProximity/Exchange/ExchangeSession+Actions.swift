import MeishiCard
import MeishiCrypto

/// The session as the driver sees it: every input (a frame, the person's answer, the signed
/// card, a timer, work done, the connection's end) returns the actions to take, in order, as
/// swift-nio's `NIOTypedHTTPServerUpgraderStateMachine` does. The driver performs them and owns
/// nothing of the protocol; `.finish` is always the last action the session returns.
extension ExchangeSession {
    public enum Input: Sendable {
        /// The connection is open (the dialer speaks first).
        case connected
        /// A frame body from the peer.
        case frame([UInt8])
        /// The person's answer to `.askPerson`: the digits match or not.
        case personAnswered(Bool)
        /// No answer to `.askPerson`: --timeout passed (`timedOut`), or the input ended (Ctrl-D, a
        /// terminal hung up). The peer is told "the other person did not answer", not that the codes differ.
        case personGaveNoAnswer(timedOut: Bool)
        /// Our card, signed just now (after `.signCard`), and the key that signed it.
        case cardSigned(SignedCard, Ed25519.SigningKey)
        /// The peer's stream broke the framing (a frame over the size limit): nothing more can be read.
        case badFrame(ExchangeError)
        /// The `.perform` work is done.
        case workDone
        /// The limit of the last `.arm` passed.
        case timerFired
        /// The peer's stream ended: in order (nil) or with an error, as people read it.
        case connectionClosed(error: SocketProblem?)
    }

    /// How long the session lets the peer take, from the `.arm` on.
    public enum Limit: Sendable {
        /// A listener's new connection: an honest dialer speaks at once.
        case firstFrame
        /// One step of the protocol.
        case step
    }

    public enum Action: Sendable {
        /// Write this frame body.
        case send([UInt8])
        /// What follows lets the peer compute or test the code: take a try from the run's guess
        /// budget first, and fail with `.tooManyGuesses` without sending when none is left (§5.4).
        case spendGuess
        /// Show the 6 digits and ask whether the other screen shows the same; answer with `.personAnswered`.
        case askPerson(digits: String)
        /// Sign our card now and give it back with `.cardSigned`.
        case signCard
        /// Both cards are verified and acknowledged: the peer's card may be stored.
        case store(VerifiedCard)
        /// Do this work, then give `.workDone`.
        case perform(PostCardWork)
        /// Start the limit (replacing the last), or none (nil) while the person is asked.
        case arm(Limit?)
        /// Tell the application (a step for `--verbose`, the codes matching): nothing a peer sent beyond sizes.
        case event(ExchangeEvent)
        /// The session is over: close the connection.
        case finish(Outcome)
    }

    public enum Outcome: Sendable {
        /// Both cards exchanged, then every post-card phase ran (each keeps its outcome).
        case exchanged(peerCard: VerifiedCard, confirmation: ExchangeResult.Confirmation, phases: [any PostCardPhase])
        case failed(ExchangeFailure)
    }

    /// After discovery, the frame that names the dialer's session before the handshake (§5.5).
    public enum Introduction: Sendable {
        /// Dialer: our session id, and the listener's we chose.
        case send(own: [UInt8], peer: [UInt8])
        /// Listener: our session id, and those of the peers discovery may have chosen, asked when
        /// the introduction arrives: discovery goes on hearing peers while the connection waits.
        case expect(own: [UInt8], candidates: @Sendable () -> [[UInt8]])
    }

    /// The frame type of the discovery introduction: 0x00 followed by the dialer's session id.
    static let introductionType: UInt8 = 0x00

    /// `body` is the introduction this listener expects, of a session id discovery has not heard
    /// (yet: the dialer may have dialled the moment it heard our announcement, before we heard its).
    func introducesUnheardSession(_ body: [UInt8]) -> Bool {
        guard case .expect(_, let candidates)? = introduction, body.first == Self.introductionType else { return false }
        return !candidates().contains(Array(body.dropFirst()))
    }

    /// Feeds one input; returns the actions to take, in order.
    public func handle(_ input: Input) -> [Action] {
        guard !finished else { return [] }
        var actions: [Action]
        let revealedBefore = codeRevealed
        do {
            actions = try step(input)
        } catch {
            // What is sent now (a MISMATCH too) lets the peer compute or test the code: the try
            // is taken before it goes (docs/PROTOCOL.md §5.4).
            actions = (!revealedBefore && codeRevealed ? [.spendGuess] : []) + failed(error)
        }
        if case .finish? = actions.last { finished = true }
        return actions
    }

    /// What the session waits for now.
    var waitingFor: SessionStep {
        if !handshakeComplete { return .handshake }
        if !confirmedByPeer || !confirmedLocally { return .confirmation }
        if peerCard == nil { return .card }
        if !acknowledgedByPeer { return .acknowledgement }
        return .phase(phaseIndex < phases.count ? phases[phaseIndex].name : "")
    }

    private func step(_ input: Input) throws(ExchangeError) -> [Action] {
        if isComplete { return postCard(input) }
        switch input {
        case .connected:
            var out: [Action] = [.arm(role == .listener ? .firstFrame : .step)]
            if case .send(let own, let peer)? = introduction {
                out.append(.send([Self.introductionType] + own))
                bindDiscovery(dialerID: own, listenerID: peer)
            }
            if let hello = start() { out.append(.send(hello)) }
            return out
        case .frame(let body):
            var out: [Action] = []
            if !heardPeer, role == .listener { out.append(.arm(.step)) }
            heardPeer = true
            if case .expect(let own, let candidates)? = introduction {
                introduction = nil
                guard body.first == Self.introductionType, candidates().contains(Array(body.dropFirst())) else {
                    return [.finish(.failed(.notChosen))]
                }
                bindDiscovery(dialerID: Array(body.dropFirst()), listenerID: own)
                return out
            }
            return out + (try frame(body))
        case .personAnswered(let matches):
            guard asking else { return [] }
            asking = false
            let answer: [Action] = [.arm(.step), .send(confirm(matches))]
            guard matches else { return answer + [.finish(.failed(.declinedLocally))] }
            return answer + cardIfDue()
        case .personGaveNoAnswer(let timedOut):
            guard asking else { return [] }
            asking = false
            let reject = reject(ExchangeError.peerDidNotAnswer.wireReason).map { [Action.send($0)] } ?? []
            return reject + [.finish(.failed(timedOut ? .unanswered : .declinedLocally))]
        case .cardSigned(let card, let key):
            let frame = self.card(card, signedBy: key)
            return [.send(frame), .event(.step(.cardSent(bytes: card.bytes.count)))]
        case .badFrame(let e):
            throw e
        case .workDone:
            return []
        case .timerFired:
            if case .expect? = introduction { return [.finish(.failed(.notChosen))] }
            return [.finish(.failed(.connectionLost(.timedOut(waiting: waitingFor))))]
        case .connectionClosed(let error):
            if case .expect? = introduction { return [.finish(.failed(.notChosen))] }
            return [.finish(.failed(.connectionLost(error.map(ConnectionLoss.failed) ?? .closed(waiting: waitingFor))))]
        }
    }

    /// One frame of the handshake or the cards, and what it leads to.
    private func frame(_ body: [UInt8]) throws(ExchangeError) -> [Action] {
        let revealedBefore = codeRevealed
        let (frames, event) = try receive(body)
        var out: [Action] = !revealedBefore && codeRevealed ? [.spendGuess] : []
        out += frames.map(Action.send)
        switch event {
        case .codeReady(let digits)?:
            asking = true
            out += [.event(.step(.sealed)), .arm(nil), .askPerson(digits: digits)]
        case .codeConfirmed?:
            out += [.event(.step(.sealed)), .event(.codesMatch)]
            out += cardIfDue()
        case .peerConfirmed?:
            out += cardIfDue()
        case .cardReceived(let card)?:
            out += [.event(.step(.cardReceived(bytes: card.bytes.count))), .send(acknowledge())]
            out += cardsDone()
        case .peerAcknowledged?:
            out += cardsDone()
        case .postCard?:
            preconditionFailure("post-card frames are refused by the session until both cards are acknowledged")
        case nil:
            break
        }
        return out
    }

    /// `.signCard` once both people confirmed and our card is not sent yet.
    private func cardIfDue() -> [Action] {
        guard confirmedLocally, confirmedByPeer, !cardSent else { return [] }
        return [.event(.step(.peerConfirmed)), .signCard]
    }

    /// Once both cards are acknowledged: store, then the post-card phases in order.
    private func cardsDone() -> [Action] {
        guard isComplete, let card = peerCard else { return [] }
        return [.event(.step(.bothAcknowledged)), .store(card)] + startPhase()
    }

    /// A protocol failure: tell the peer why before the connection closes (a code mismatch in
    /// plain text: there is no shared key to seal with).
    private func failed(_ e: ExchangeError) -> [Action] {
        var out: [Action] = []
        if e == .codesDoNotMatch, role == .listener { out.append(.send(Self.mismatchFrame)) }
        if let reject = reject(e.wireReason) { out.append(.send(reject)) }
        return out + [.finish(.failed(.protocolFailure(e)))]
    }

    // MARK: Post-card phases

    private var context: PostCardContext {
        PostCardContext(role: role, peerCard: peerCard!, transcriptHash: transcriptHash!, codeConfirmedByPAKE: codeConfirmedByPAKE)
    }

    /// Starts the phase at `phaseIndex` (and the next, as each finishes), or finishes the session.
    private func startPhase() -> [Action] {
        var out: [Action] = []
        while phaseIndex < phases.count {
            let phase = phases[phaseIndex]
            phaseStarted = ContinuousClock.now
            out += seal(phase.start(context))
            if let lost = lostDuringPhases { _ = phase.interrupted(.connectionLost(lost)) }
            if let work = phase.awaiting, lostDuringPhases == nil { return out + [.perform(work)] }
            guard phase.isFinished else { return out }
            out += phaseEnded()
        }
        let confirmation: ExchangeResult.Confirmation = codeConfirmedByPAKE ? .pake : .digits(code!)
        return out + [.finish(.exchanged(peerCard: peerCard!, confirmation: confirmation, phases: phases))]
    }

    private func phaseEnded() -> [Action] {
        let phase = phases[phaseIndex]
        phaseIndex += 1
        let ms = phaseStarted.map { start -> Int in
            let d = ContinuousClock.now - start
            return Int(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)
        } ?? 0
        return [.event(.step(.phaseEnded(phase, milliseconds: ms)))]
    }

    /// The inputs after both ACKs: each message of the running phase's range goes to it; any other
    /// interrupts it, and the next starts. Whatever happens the cards stay exchanged.
    private func postCard(_ input: Input) -> [Action] {
        guard phaseIndex < phases.count else { return [] }
        let phase = phases[phaseIndex]
        var out: [Action]
        switch input {
        case .frame(let body):
            do {
                let (_, event) = try receive(body)
                guard case .postCard(let inner, let content)? = event else {
                    out = seal(phase.interrupted(.unexpected(.unexpectedMessage("a message outside the post-card phases"))))
                    break
                }
                guard type(of: phase).innerTypes.contains(inner) else {
                    out = seal(phase.interrupted(.unexpected(.unexpectedMessage("post-card message \(inner) during the \(phase.name)"))))
                    break
                }
                out = seal(phase.receive(PostCardMessage(type: inner, content: content)))
            } catch {
                // The channel failed: nothing more is sent for this phase.
                _ = phase.interrupted(.broken(error))
                out = []
            }
        case .badFrame(let e):
            _ = phase.interrupted(.broken(e))
            out = []
        case .workDone:
            out = seal(phase.resume())
        case .timerFired, .connectionClosed:
            let why: ConnectionLoss
            if case .connectionClosed(let error?) = input { why = .failed(error) }
            else if case .timerFired = input { why = .timedOut(waiting: waitingFor) }
            else { why = .closed(waiting: waitingFor) }
            lostDuringPhases = why
            _ = phase.interrupted(.connectionLost(why))
            out = []
        case .connected, .personAnswered, .personGaveNoAnswer, .cardSigned:
            return []
        }
        if let work = phase.awaiting, !phase.isFinished, lostDuringPhases == nil { return out + [.perform(work)] }
        guard phase.isFinished else { return out }
        return out + phaseEnded() + startPhase()
    }

    /// Seals a phase's messages (nothing once the connection is gone).
    private func seal(_ messages: [PostCardMessage]) -> [Action] {
        guard lostDuringPhases == nil else { return [] }
        return messages.map { .send(postCard(type: $0.type, content: $0.content)) }
    }
}
