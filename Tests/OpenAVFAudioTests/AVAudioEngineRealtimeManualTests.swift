import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Real-time manual rendering as Apple's documentation describes it: enable `.realtime`, start,
/// then call `manualRenderingBlock` from the caller's own thread with an `AudioBufferList`.
@Suite struct AVAudioEngineRealtimeManualTests {
    @Test func theRenderBlockRendersAPlayerAtRealTimePaceWithStatuses() throws {
        let engine = AVAudioEngine()
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: nil)
        let format = AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2)!
        try engine.enableManualRenderingMode(.realtime, format: format, maximumFrameCount: 512)
        #expect(engine.isInManualRenderingMode)
        #expect(engine.manualRenderingMode == .realtime)
        #expect(engine.manualRenderingMaximumFrameCount == 512)
        #expect(engine.manualRenderingFormat == format)
        // A 1 s, 500 Hz tone at 0.4.
        let frames = 48000
        let tone = AVAudioPCMBuffer(pcmFormat: format, frameCapacity: AVAudioFrameCount(frames))!
        for c in 0..<2 { for i in 0..<frames { tone.floatChannelData![c][i] = 0.4 * Float(sin(2 * .pi * 500 * Double(i) / 48000)) } }
        tone.frameLength = AVAudioFrameCount(frames)
        player.scheduleBuffer(tone, at: nil)

        let block = engine.manualRenderingBlock
        let out = AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 512)!
        var status: OSStatus = 0
        // Not started yet: an error, "not running".
        #expect(block(256, out.mutableAudioBufferList, &status) == .error)
        #expect(status == -80802)
        try engine.start()
        player.play()
        // Too many frames.
        #expect(block(1024, out.mutableAudioBufferList, &status) == .error)
        #expect(status == kAudioUnitErr_TooManyFramesToProcess)
        // Render 1.5 s in 256-frame calls at about real-time pace (the player feeds itself).
        var left: [Float] = []
        usleep(50_000)
        for _ in 0..<(72000 / 256) {
            let s = block(256, out.mutableAudioBufferList, &status)
            #expect(s == .success)
            out.frameLength = 256
            #expect(out.audioBufferList.pointee.mBuffers.mDataByteSize == 256 * 4)
            left += Array(UnsafeBufferPointer(start: out.floatChannelData![0], count: 256))
            usleep(5_000)
        }
        engine.stop()
        let first = try #require(left.firstIndex { abs($0) > 0.01 }, "the player was not heard")
        let loud = left.filter { abs($0) > 0.01 }.count
        let level = toneAmplitude(left, freq: 500, rate: 48000, from: first + 4800, count: 24000)
        print("real-time manual: onset \(first), \(loud) loud samples, 500 Hz at \(level)")
        #expect(abs(level - 0.4) < 0.02, "level \(level)")
        // The whole second played, once (the loud samples of a sine at 0.4 are about 98 %).
        #expect(abs(Double(loud) - 0.98 * Double(frames)) < 0.02 * Double(frames), "\(loud) loud samples")
        engine.disableManualRenderingMode()
        #expect(!engine.isInManualRenderingMode)
    }

    /// Apple reports a manual-rendering engine as running between `start()` and `pause()`/`stop()`
    /// (no device involved), in both manual modes.
    @Test(arguments: [AVAudioEngineManualRenderingMode.offline, .realtime])
    func isRunningFollowsStartAndStopInManualRenderingMode(_ mode: AVAudioEngineManualRenderingMode) throws {
        let engine = AVAudioEngine()
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: nil)
        let format = AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2)!
        try engine.enableManualRenderingMode(mode, format: format, maximumFrameCount: 512)
        #expect(!engine.isRunning, "running before start()")
        try engine.start()
        #expect(engine.isRunning, "\(mode.rawValue): not running after start()")
        engine.pause()
        #expect(!engine.isRunning, "\(mode.rawValue): still running after pause()")
        try engine.start()
        #expect(engine.isRunning, "\(mode.rawValue): not running after a second start()")
        engine.stop()
        #expect(!engine.isRunning, "\(mode.rawValue): still running after stop()")
        try engine.start()
        engine.stop()
        engine.disableManualRenderingMode()
        #expect(!engine.isRunning)
    }
}
