import Testing
@testable import MeishiProximity

/// Issue 22, finding 4: the memories a flood of probes meets.
@Suite struct ProbeFloodTests {
    /// Full of fresh nonces, the replay memory used to refuse every new one (the listener went
    /// deaf for up to 15 minutes); it now forgets its oldest quarter and still refuses a replay
    /// of a recent one.
    @Test func aFullReplayMemoryForgetsTheOldestInsteadOfRefusingEverything() {
        let cache = ReplayCache(lifetime: 900, capacity: 1000)
        for n in 0..<1000 { #expect(cache.admit([UInt8(n % 256), UInt8(n / 256)], now: Double(n) / 100)) }
        #expect(cache.admit([0xFF, 0xFF], now: 10.5), "a fresh nonce was refused by a full memory")
        #expect(!cache.admit([0xE7, 0x03], now: 10.6), "the most recent nonce replayed was admitted")
        #expect(!cache.admit([0xFF, 0xFF], now: 10.7))
        #expect(cache.admit([0, 0], now: 10.8), "the oldest nonce is the one forgotten")
    }

    /// Answers to one address: a burst of 8, then 4 a second; another address has its own.
    @Test func answersToOneAddressAreRateLimited() {
        let rate = AnswerRate()
        let answered = (0..<1000).filter { n in rate.take("10.147.0.3", now: 100 + Double(n) / 1000) }.count
        #expect(answered <= 8 + 4, "\(answered) answers in one second")
        #expect(rate.take("10.147.0.2", now: 101))
        #expect(rate.take("10.147.0.3", now: 103), "no answer two seconds later")
    }
}
