import OATCore
import Testing
@testable import OATDevices

/// The run state the null and ALSA devices share with their threads (`DeviceRun`).
/// (`DeviceRun` is noncopyable: results are taken out before `#expect` looks at them.)
@Suite struct DeviceRunStateTests {
    @Test func transitionsFollowTheDeviceLife() {
        let run = DeviceRun()
        var state = run.current
        #expect(state == .idle)
        var moved = run.move(from: .running, to: .paused)
        #expect(!moved, "paused before it was started")
        moved = run.move(from: .idle, to: .running)
        #expect(moved)
        moved = run.move(from: .idle, to: .running)
        #expect(!moved, "started twice")
        moved = run.move(from: .running, to: .paused)
        #expect(moved)
        moved = run.move(from: .paused, to: .running)
        #expect(moved)
        let found = run.requestStop()
        #expect(found == .running)
        state = run.current
        #expect(state == .stopping && state.isEnding)
        run.finish()
        state = run.current
        #expect(state == .finished)
    }

    /// A stop after the thread has ended keeps `finished` (a load-then-store could put
    /// `stopping` back over it, and `hasFinished` would stay false).
    @Test func aLateStopKeepsFinished() {
        let run = DeviceRun()
        let moved = run.move(from: .idle, to: .running)
        #expect(moved)
        run.finish()
        let found = run.requestStop()
        let after = run.current
        #expect(found == .finished && after == .finished)
        let idle = DeviceRun()
        let idleFound = idle.requestStop()
        let idleAfter = idle.current
        #expect(idleFound == .idle && idleAfter == .idle, "a device never started is not stopping")
    }

    /// Through a real device: a null device that played to its end reports finished, and a stop
    /// afterwards does not change that.
    @Test func aNullDeviceThatEndedStaysFinishedAfterStop() throws {
        let device = NullOutputDevice(format: AudioDeviceFormat(sampleRate: 48000, channels: 2), realTime: false, framesPerRender: 256)
        try device.start { _, _, _ in AudioRenderResult(frames: 0, isEndOfStream: true) }
        #expect(pollWithBackoff(until: HostTime.now() + HostTime.ticks(seconds: 5)) { device.hasFinished })
        device.stop(drain: false)
        #expect(device.hasFinished)
        #expect(throws: AudioError.self) { try device.pause() }
    }
}
