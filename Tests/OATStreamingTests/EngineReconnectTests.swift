import OATCore
import OATNetwork
@testable import OATStreaming
import Testing

/// Reconnect and resume decisions on a virtual clock: backoff after failed entries, giving up,
/// and the end of a session whose device stays lost. Nothing sleeps.
@Suite struct EngineReconnectTests {
    /// The pause before the next entry doubles per failure in a row (at most 1 s); a failure is
    /// paced once; audio starts the count again.
    @Test func backoffDoublesPerFailure() {
        var p = BufferingPolicy()
        p.failureBackoff = 0.1
        p.maximumConsecutiveFailures = 16
        var pacer = FailurePacer(policy: p)
        do { let d = pacer.pace(moreEntries: true); #expect(d == .proceed, "nothing failed") }
        var waits: [Double] = []
        for _ in 0..<6 {
            pacer.failed()
            if case .wait(let s) = pacer.pace(moreEntries: true) { waits.append(s) }
            do { let d = pacer.pace(moreEntries: true); #expect(d == .proceed, "each failure is paced once") }
        }
        #expect(waits == [0.1, 0.2, 0.4, 0.8, 1, 1])
        pacer.audioArrived()
        pacer.failed()
        do { let d = pacer.pace(moreEntries: true); #expect(d == .wait(0.1)) }
        pacer.failed()
        do { let d = pacer.pace(moreEntries: false); #expect(d == .proceed, "nothing left to open: no wait") }
    }

    /// After the maximum failures in a row the player gives up on the rest of the queue, once.
    @Test func givesUpAfterTheMaximumInARow() {
        var p = BufferingPolicy()
        p.maximumConsecutiveFailures = 3
        var pacer = FailurePacer(policy: p)
        pacer.failed()
        pacer.failed()
        do { let d = pacer.pace(moreEntries: true); #expect(d == .wait(0.2)) }
        pacer.failed()
        do { let d = pacer.pace(moreEntries: true); #expect(d == .giveUp) }
        #expect(pacer.gaveUp)
        pacer.failed()
        do { let d = pacer.pace(moreEntries: true); #expect(d == .proceed, "reported once") }
    }

    /// A lost device ends the session only past the timeout, measured on the engine's clock.
    @Test func lostDeviceTimesOutOnTheEngineClock() throws {
        let clock = VirtualClock()
        let lost = (since: clock.now(), reason: "connection refused")
        clock.advance(seconds: 29.9)
        #expect(deviceGoneError(lost: lost, now: clock.now(), timeout: 30, device: "sink") == nil)
        clock.advance(seconds: 0.2)
        let gone = try #require(deviceGoneError(lost: lost, now: clock.now(), timeout: 30, device: "sink"))
        #expect(gone.error.code == .deviceUnavailable)
        #expect(gone.error.message.contains("has been gone for 30 s"))
        #expect(gone.error.message.contains("connection refused"))
        // A loss stamped after `now` (another thread's clock read) is not past anything.
        #expect(deviceGoneError(lost: (clock.now() + 1, "x"), now: clock.now(), timeout: 0, device: "") == nil)
    }

    /// The virtual clock moves only when told; seconds since a later instant are 0.
    @Test func virtualClockMovesWhenTold() {
        let clock = VirtualClock(seconds: 5)
        let t0 = clock.now()
        #expect(clock.now() == t0)
        clock.advance(seconds: 1.5)
        #expect(clock.seconds(since: t0) == 1.5)
        #expect(clock.seconds(since: clock.now() + 10) == 0)
        #expect(MonotonicClock().now() > 0)
    }
}
