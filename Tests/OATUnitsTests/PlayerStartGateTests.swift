import OATTestSupport
import OATCore
import OATDevices
import OATUnits
import Dispatch
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 19: the AUGraph file player heard a gap once in CI. A real-time device renders whether
/// or not the player's feeder has filled its ring; if the first render takes what little is
/// there, the rest of that render is silence and the audio after it comes late: a gap. A held
/// player (Apple's file player before its start time stamp and while it primes) renders
/// silence and takes nothing until its prime frames are buffered, so the audio it plays is
/// continuous from the first frame.
@Suite struct PlayerStartGateTests {
    /// A feeder that hands out one chunk of a ramp at once, then waits for `release` before
    /// the rest (a reader that is slow to start: a cold disk, a loaded machine).
    final class SlowFeeder: @unchecked Sendable {
        let release = DispatchSemaphore(value: 0)
        let total: Int
        var next = 0
        init(total: Int) { self.total = total }
        func pull(_ out: UnsafeMutableBufferPointer<Float>) -> Int {
            if next > 0 && next < 2048 { release.wait() }
            let n = min(out.count / 2, total - next, next == 0 ? 1024 : out.count / 2)
            for i in 0..<n {
                let v = Float(next + i + 1) / Float(total)
                out[2 * i] = v
                out[2 * i + 1] = v
            }
            next += n
            return n
        }
    }

    /// Renders through a hand-driven real-time device: first while only the feeder's first chunk
    /// is buffered, then (feeder released) to the end. The played ramp must have no hole.
    func playWithSlowStart(hold: Bool) throws -> (samples: [Float], underruns: Int) {
        let g = try AudioGraph(sampleRate: 48000, channels: 2, maxFramesPerSlice: 4096)
        let player = AUPlayerNode(channels: 2, bufferFrames: 16384)
        try g.add(player)
        try g.connect(player, to: g.output)
        let device = HandDrivenOutputDevice(format: AudioDeviceFormat(sampleRate: 48000, channels: 2), framesPerRender: 2048)
        try g.start(device: device)
        defer { g.stop() }
        let feeder = SlowFeeder(total: 12000)
        if hold { player.holdPlayback(untilBuffered: 4096) }
        player.play(from: { (out: UnsafeMutableBufferPointer<Float>) throws(AudioError) -> Int in feeder.pull(out) }, chunkFrames: 1024)
        if hold { player.scheduleStart(atSampleTime: nil) }
        var waited = 0
        while player.bufferedFrames < 1024 && waited < 5000 { usleep(1000); waited += 1 }
        #expect(player.bufferedFrames == 1024)
        var left: [Float] = []
        // The first render: only 1024 frames are there.
        let first = try #require(device.render(2048, fill: 1))
        left += first.channels[0]
        feeder.release.signal()
        waited = 0
        while !player.isInputEnded && waited < 5000 { usleep(1000); waited += 1 }
        #expect(player.isInputEnded)
        for _ in 0..<8 {
            let r = try #require(device.render(2048, fill: 1))
            left += r.channels[0]
        }
        return (left, player.underrunCount)
    }

    @Test func aHeldPlayerStartsOnlyWithItsPrimeFramesBuffered() throws {
        let (left, underruns) = try playWithSlowStart(hold: true)
        let first = try #require(left.firstIndex { $0 != 0 }, "nothing played")
        // Nothing played in the first render (its prime was not there), and from there on the ramp
        // is whole: every frame of it in order, no silence inside.
        #expect(first == 2048, "started at \(first)")
        let played = Array(left[first...].prefix { $0 != 0 })
        #expect(played.count == 12000, "\(played.count) frames before the first hole, of 12000")
        let inOrder = zip(played, played.dropFirst()).allSatisfy { $1 > $0 }
        #expect(inOrder)
        #expect(underruns == 0)
    }

    @Test func anUnheldPlayerStillPlaysAtOnce() throws {
        // Without a hold (schedule/play users that want the old behaviour), the first render
        // takes what is there: the first 1024 frames play at once.
        let (left, _) = try playWithSlowStart(hold: false)
        #expect(left.firstIndex { $0 != 0 } == 0)
    }

    @Test func aScheduledStartTimeDelaysPlaybackToThatSample() throws {
        let g = try AudioGraph(sampleRate: 48000, channels: 2, maxFramesPerSlice: 4096)
        let player = AUPlayerNode(channels: 2, bufferFrames: 16384)
        try g.add(player)
        try g.connect(player, to: g.output)
        let device = HandDrivenOutputDevice(format: AudioDeviceFormat(sampleRate: 48000, channels: 2), framesPerRender: 1000)
        try g.start(device: device)
        defer { g.stop() }
        player.holdPlayback(untilBuffered: 1000)
        let ones = [Float](repeating: 0.5, count: 2 * 3000)
        ones.withUnsafeBufferPointer { _ = player.schedule($0) }
        player.endOfInput()
        // Not scheduled yet: silence, nothing taken.
        let before = try #require(device.render(1000, fill: 1))
        #expect(before.channels[0].allSatisfy { $0 == 0 })
        #expect(player.bufferedFrames == 3000)
        // Start at render sample 2500: the second render (samples 1000..<2000) is silence, the
        // third has 500 frames of silence, then audio.
        player.scheduleStart(atSampleTime: 2500)
        let second = try #require(device.render(1000, fill: 1))
        #expect(second.channels[0].allSatisfy { $0 == 0 })
        let third = try #require(device.render(1000, fill: 1))
        #expect(third.channels[0].prefix(500).allSatisfy { $0 == 0 })
        #expect(third.channels[0].suffix(500).allSatisfy { $0 == 0.5 })
        #expect(player.playedFrames == 500)
    }
}
