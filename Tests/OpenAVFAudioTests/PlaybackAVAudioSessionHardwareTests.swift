import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The session's input gain (the PulseAudio source's volume) and preferred channel counts (the
/// engine's device format), against a private PulseAudio daemon.
@Suite(.serialized, .requires(TestResource.pulseAudioMissing))
struct PlaybackAVAudioSessionHardwareTests {
    @Test("setInputGain sets the PulseAudio source's volume; inputGain reads it back; out of range throws")
    func inputGainIsTheSourceVolume() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        setenv("PULSE_SERVER", daemon.server, 1)
        setenv("OAT_INPUT", "pulse:oat_test.monitor", 1)
        defer { unsetenv("PULSE_SERVER"); unsetenv("OAT_INPUT"); daemon.stop() }
        let session = AVAudioSession.sharedInstance()
        #expect(session.isInputGainSettable)
        #expect(abs(session.inputGain - 1) < 0.01, "a new source is at 100 %: \(session.inputGain)")
        try session.setInputGain(0.5)
        #expect(abs(session.inputGain - 0.5) < 0.01, "read back \(session.inputGain)")
        let pactl = try daemon.pactl(["get-source-volume", "oat_test.monitor"])
        #expect(pactl.contains("50%"), "pactl sees the source at 50 %: \(pactl)")
        #expect(throws: (any Error).self) { try session.setInputGain(1.5) }
        try session.setInputGain(1)
        #expect(abs(session.inputGain - 1) < 0.01)
    }

    @Test("A preferred output channel count is the engine's device format: one channel gives a mono WAV; more than the port has throws")
    func preferredOutputChannels() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        setenv("PULSE_SERVER", daemon.server, 1)
        let dir = try ScratchDirectory("avf-channels")
        let path = dir.path + "/mono.wav"
        setenv("OAT_OUTPUT", "wav:\(path),rate=48000", 1)
        let session = AVAudioSession.sharedInstance()
        defer {
            try? session.setPreferredOutputNumberOfChannels(0)
            unsetenv("PULSE_SERVER"); unsetenv("OAT_OUTPUT"); daemon.stop(); dir.remove()
        }
        #expect(session.maximumOutputNumberOfChannels == 2)
        #expect(throws: (any Error).self) { try session.setPreferredOutputNumberOfChannels(3) }
        try session.setPreferredOutputNumberOfChannels(1)
        #expect(session.preferredOutputNumberOfChannels == 1 && session.outputNumberOfChannels == 1)
        let engine = AVAudioEngine()
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: nil)
        #expect(engine.outputNode.outputFormat(forBus: 0).channelCount == 1)
        let tone = AVAudioEngineOfflineTests.toneBuffer(frequency: 440, amplitude: 0.3, frames: 24000, channels: 2)
        let done = DispatchSemaphore(value: 0)
        player.scheduleBuffer(tone, at: nil, completionCallbackType: .dataPlayedBack) { _ in done.signal() }
        try engine.start()
        player.play()
        #expect(done.wait(timeout: .now() + 10) == .success)
        engine.stop()
        let file = try AVAudioFile(forReading: URL(fileURLWithPath: path))
        #expect(file.fileFormat.channelCount == 1, "the WAV has \(file.fileFormat.channelCount) channels")
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: file.processingFormat, frameCapacity: AVAudioFrameCount(file.length)))
        try file.read(into: buffer)
        let samples = UnsafeBufferPointer(start: buffer.floatChannelData![0], count: Int(buffer.frameLength))
        let loud = samples.filter { abs($0) > 0.05 }.count
        #expect(loud > 10000, "the tone is in the mono file: \(loud) loud samples")
    }
}
