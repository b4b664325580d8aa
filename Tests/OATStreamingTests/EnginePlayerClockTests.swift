import OATCore
import OATNetwork
import OATDevices
import OATQueueEngine
@testable import OATStreaming
import OATTestSupport
import Synchronization
import Testing

/// A whole player whose engine timers read a ``VirtualClock``: a lost device's 30 s timeout is
/// exercised in about a second of real time, and the stop comes exactly when the engine's clock
/// passes the timeout (not earlier, whatever the wall clock says).
@Suite struct EnginePlayerClockTests {
    @Test func lostDeviceTimesOutOnTheVirtualClock() async throws {
        let dir = try ScratchDirectory("engine-clock")
        defer { dir.remove() }
        let file = dir.path + "/a.wav"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 10, codec: ["-c:a", "pcm_s16le"]))
        let device = Locked<HandDrivenOutputDevice?>(nil)
        // A device that never renders: the queue starts, fills its ring and waits.
        let output: AudioOutputDeviceFactory = { format throws(AudioError) in
            let d = HandDrivenOutputDevice(format: format, framesPerRender: 1024)
            device.withLock { $0 = d }
            return d
        }
        let clock = VirtualClock()
        var policy = BufferingPolicy()
        policy.deviceLostTimeout = 30
        let log = StreamingEventLog()
        let player = StreamingPlayer(policy: policy, output: output, sourceFactory: StreamingPlayer.defaultSource(for:),
                                     onEvent: log.handler, clock: clock)
        let task = log.attach(player)
        defer { task.cancel() }
        await player.play(file)
        #expect(await log.waitFor(10, isPlaying))
        let hand = try #require(device.withLock { $0 })
        let reported = clock.now()
        hand.report(.lost(reason: "unplugged"))
        // The wall clock moves, the engine's does not: no timeout.
        #expect(await !log.waitFor(0.5, isStopped), "stopped before the engine clock moved")
        // Then 0.25 virtual seconds per 10 ms until the player stops (at most 60 virtual s).
        var stoppedAt: UInt64?
        for _ in 0..<240 {
            clock.advance(seconds: 0.25)
            if await log.waitFor(0.01, isStopped) {
                stoppedAt = clock.now()
                break
            }
        }
        await player.stop()
        let at = try #require(stoppedAt, "no stop within 60 virtual seconds: \(log.states)")
        let virtual = HostTime.seconds(ticks: at - reported)
        #expect(virtual > 30, "stopped \(virtual) virtual s after the loss")
        #expect(virtual < 33, "stopped \(virtual) virtual s after the loss")
        guard case .error(let e) = log.stopReason else {
            Issue.record("expected an error stop, got \(String(describing: log.stopReason))")
            return
        }
        #expect(e.code == .deviceUnavailable, "\(e)")
        #expect(e.message.contains("has been gone for 30 s") && e.message.contains("unplugged"), "\(e)")
    }
}
