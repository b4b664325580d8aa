import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing

/// `OAT_OUTPUT=wav:PATH`: a device no clock paces renders while a player wants it. A player
/// attached and played while the engine runs is waited for too. (Playback in the name: the
/// suite sets OAT_OUTPUT for the process, so it runs with the serial real-time suites.)
@Suite(.serialized) struct PlaybackAVAudioEngineWavGateTests {
    /// A stereo buffer of `frames` frames all at `value`.
    static func constant(_ value: Float, frames: Int) throws -> AVAudioPCMBuffer {
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        let b = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: AVAudioFrameCount(frames)))
        for c in 0..<2 { for i in 0..<frames { b.floatChannelData![c][i] = value } }
        b.frameLength = AVAudioFrameCount(frames)
        return b
    }

    @Test func aPlayerAttachedWhileTheEngineRunsIsInTheFileWhole() throws {
        let dir = try ScratchDirectory("avf-wavgate")
        defer { dir.remove() }
        let path = dir.path + "/out.wav"
        setenv("OAT_OUTPUT", "wav:\(path),rate=48000", 1)
        defer { unsetenv("OAT_OUTPUT") }
        let engine = AVAudioEngine()
        let stereo = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        let first = AVAudioPlayerNode()
        engine.attach(first)
        engine.connect(first, to: engine.mainMixerNode, format: stereo)
        let firstDone = DispatchSemaphore(value: 0)
        first.scheduleBuffer(try Self.constant(0.1, frames: 24000), at: nil, completionCallbackType: .dataPlayedBack) { _ in firstDone.signal() }
        try engine.start()
        first.play()
        #expect(firstDone.wait(timeout: .now() + 20) == .success, "the first player's buffer was played back")
        // The first player is done: the gate stops rendering. A second player joins the running engine.
        let second = AVAudioPlayerNode()
        engine.attach(second)
        engine.connect(second, to: engine.mainMixerNode, format: stereo)
        let secondDone = DispatchSemaphore(value: 0)
        second.scheduleBuffer(try Self.constant(0.25, frames: 48000), at: nil, completionCallbackType: .dataPlayedBack) { _ in secondDone.signal() }
        second.play()
        #expect(secondDone.wait(timeout: .now() + 20) == .success, "the second player's buffer was played back (rendered into the file)")
        engine.stop()
        let file = try AVAudioFile(forReading: URL(fileURLWithPath: path))
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: file.processingFormat, frameCapacity: AVAudioFrameCount(file.length)))
        try file.read(into: buffer)
        let left = Array(UnsafeBufferPointer(start: buffer.floatChannelData![0], count: Int(buffer.frameLength)))
        let secondFrames = left.indices.filter { abs(left[$0] - 0.25) < 0.01 }
        let firstFrames = left.filter { abs($0 - 0.1) < 0.01 }.count
        #expect(firstFrames == 24000, "the first player's 24000 frames: \(firstFrames)")
        #expect(secondFrames.count == 48000, "the second player's 48000 frames, whole: \(secondFrames.count)")
        if let a = secondFrames.first, let b = secondFrames.last {
            #expect(b - a + 1 == 48000, "in one piece: from \(a) to \(b)")
        }
    }
}
