// A node detached from a running engine is no longer rendered (Apple's detach(_:)): a player
// detached while playing stops, as stop() does (the handlers of what it had scheduled are
// called), its feeder ends and its unit goes; attached again it plays what it is given then.
// Before, it went on "playing" a unit nobody rendered: isPlaying stayed true, its handlers never
// came, and attached again it neither played (play() saw it playing) nor fed its new unit.
import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct AVAudioEngineDetachTests {
    static let stereo = AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2)!

    /// A stereo buffer of `frames` frames all at `value`.
    static func constant(_ value: Float, frames: Int) throws -> AVAudioPCMBuffer {
        let b = try #require(AVAudioPCMBuffer(pcmFormat: stereo, frameCapacity: AVAudioFrameCount(frames)))
        for c in 0..<2 { for i in 0..<frames { b.floatChannelData![c][i] = value } }
        b.frameLength = AVAudioFrameCount(frames)
        return b
    }

    @Test("Offline: a player detached while playing stops (its handler is called), falls silent, and plays anew when attached again")
    func offlinePlayerDetachedWhilePlaying() throws {
        let engine = AVAudioEngine()
        try engine.enableManualRenderingMode(.offline, format: Self.stereo, maximumFrameCount: 1024)
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: Self.stereo)
        let handled = Locked<[AVAudioPlayerNodeCompletionCallbackType]>([])
        player.scheduleBuffer(try Self.constant(0.1, frames: 480_000), at: nil, completionCallbackType: .dataPlayedBack) { type in
            handled.withLock { $0.append(type) }
        }
        try engine.start()
        player.play()
        let out = try #require(AVAudioPCMBuffer(pcmFormat: Self.stereo, frameCapacity: 1024))
        for _ in 0..<4 { _ = try engine.renderOffline(1024, to: out) }
        #expect(abs(out.floatChannelData![0][512] - 0.1) < 0.01, "the player plays before the detach: \(out.floatChannelData![0][512])")

        engine.detach(player)
        #expect(!player.isPlaying, "a detached player is stopped")
        #expect(player.engine == nil)
        #expect(!engine.attachedNodes.contains(player))
        #expect(handled.withLock { $0 } == [.dataPlayedBack], "the handler of the buffer it was playing is called, as by stop(): \(handled.withLock { $0 })")
        _ = try engine.renderOffline(1024, to: out)
        let level = (0..<1024).map { abs(out.floatChannelData![0][$0]) }.max() ?? 1
        #expect(level < 1e-6, "the engine renders on without the detached player: level \(level)")

        // Attached again, it plays what it is given now (not the rest of its old schedule).
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: Self.stereo)
        player.scheduleBuffer(try Self.constant(0.25, frames: 4096), at: nil)
        player.play()
        var rendered: [Float] = []
        for _ in 0..<3 {
            _ = try engine.renderOffline(1024, to: out)
            rendered += (0..<1024).map { out.floatChannelData![0][$0] }
        }
        let new = rendered.filter { abs($0 - 0.25) < 0.01 }.count
        let old = rendered.filter { abs($0 - 0.1) < 0.01 }.count
        #expect(new > 2000, "the re-attached player plays its new buffer: \(new) frames at 0.25")
        #expect(old == 0, "nothing of its old schedule: \(old) frames at 0.1")
        engine.stop()
    }

    @Test("Offline: a source node detached from the running engine is no longer called")
    func offlineSourceNodeDetached() throws {
        let engine = AVAudioEngine()
        try engine.enableManualRenderingMode(.offline, format: Self.stereo, maximumFrameCount: 1024)
        let calls = Locked(0)
        let source = AVAudioSourceNode { _, _, frames, list in
            calls.withLock { $0 += 1 }
            for b in UnsafeMutableAudioBufferListPointer(list) {
                let p = b.mData!.assumingMemoryBound(to: Float.self)
                for i in 0..<Int(frames) { p[i] = 0.2 }
            }
            return noErr
        }
        engine.attach(source)
        engine.connect(source, to: engine.mainMixerNode, format: Self.stereo)
        try engine.start()
        let out = try #require(AVAudioPCMBuffer(pcmFormat: Self.stereo, frameCapacity: 1024))
        _ = try engine.renderOffline(1024, to: out)
        #expect(abs(out.floatChannelData![0][100] - 0.2) < 0.01)
        engine.detach(source)
        let before = calls.withLock { $0 }
        for _ in 0..<3 { _ = try engine.renderOffline(1024, to: out) }
        #expect(calls.withLock { $0 } == before, "the detached source's block is not called any more")
        #expect(abs(out.floatChannelData![0][100]) < 1e-6)
        #expect(source.engine == nil)
        engine.stop()
    }
}

/// The same at a real device: a private PulseAudio daemon's null sink, recorded from its monitor.
@Suite(.serialized, .requires(TestResource.pulseAudioMissing))
struct PlaybackAVAudioEngineDetachTests {
    /// The runs of `left` louder than `threshold` (start, end) in frames, gaps under 20 ms joined.
    static func loudRuns(_ left: [Float], threshold: Float = 0.05) -> [(Int, Int)] {
        var runs: [(Int, Int)] = []
        var i = 0
        while i < left.count {
            guard abs(left[i]) > threshold else { i += 1; continue }
            if let last = runs.last, i - last.1 < 960 { runs[runs.count - 1].1 = i } else { runs.append((i, i)) }
            i += 1
        }
        return runs
    }

    @Test("At a PulseAudio sink: a player detached while playing falls silent, its handler is called, and attached again it plays")
    func playerDetachedWhilePlayingAtASink() throws {
        try withEngineAtPulseSink { daemon in
            let recording = try daemon.recordMonitor(to: "\(daemon.directory)/monitor.raw")
            let engine = AVAudioEngine()
            let player = AVAudioPlayerNode()
            engine.attach(player)
            engine.connect(player, to: engine.mainMixerNode, format: nil)
            let stopped = DispatchSemaphore(value: 0)
            let long = AVAudioEngineOfflineTests.toneBuffer(frequency: 523.25, amplitude: 0.3, frames: 10 * 48000, channels: 2)
            player.scheduleBuffer(long, at: nil, completionCallbackType: .dataPlayedBack) { _ in stopped.signal() }
            try engine.start()
            player.play()
            usleep(1_000_000)
            engine.detach(player)
            #expect(!player.isPlaying, "a detached player is stopped")
            #expect(stopped.wait(timeout: .now() + 1) == .success, "the handler of the buffer it was playing is called on the detach")
            usleep(1_000_000)
            engine.attach(player)
            engine.connect(player, to: engine.mainMixerNode, format: nil)
            let played = DispatchSemaphore(value: 0)
            let short = AVAudioEngineOfflineTests.toneBuffer(frequency: 880, amplitude: 0.3, frames: 48000, channels: 2)
            player.scheduleBuffer(short, at: nil, completionCallbackType: .dataPlayedBack) { _ in played.signal() }
            player.play()
            #expect(played.wait(timeout: .now() + 4) == .success, "the re-attached player played its new buffer back")
            usleep(200_000)
            engine.stop()
            let recorded = recording.stop()
            let left = stride(from: 0, to: recorded.count, by: 2).map { recorded[$0] }
            let runs = Self.loudRuns(left)
            try #require(runs.count == 2, "two tones heard (before the detach, after the re-attach): \(runs)")
            let first = Double(runs[0].1 - runs[0].0) / 48000
            let gap = Double(runs[1].0 - runs[0].1) / 48000
            let second = Double(runs[1].1 - runs[1].0) / 48000
            #expect(first > 0.6 && first < 1.5, "the first tone stops at the detach (about 1 s): \(first) s")
            #expect(gap > 0.6, "silence while detached: \(gap) s")
            #expect(abs(second - 1.0) < 0.05, "the re-attached player's 1 s buffer is heard whole: \(second) s")
            let mid = runs[1].0 + 12000
            let at880 = phaseOffset(left[mid..<(mid + 4800)], start: mid, frequency: 880, rate: 48000).amplitude
            let at523 = phaseOffset(left[mid..<(mid + 4800)], start: mid, frequency: 523.25, rate: 48000).amplitude
            #expect(at880 > 0.25 && at523 < 0.03, "the second tone is the new buffer (880 Hz \(at880), 523 Hz \(at523))")
        }
    }
}
