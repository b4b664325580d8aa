import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `isAutoShutdownEnabled`: an idle running engine releases its device (its PulseAudio stream
/// goes from the server) and opens it again when a player has something to play; off (the
/// default) the stream stays. A private PulseAudio daemon's null sink, recorded from its monitor.
@Suite(.serialized, .requires(TestResource.pulseAudioMissing))
struct PlaybackAVAudioEngineAutoShutdownTests {
    /// The daemon's playback streams (sink inputs).
    static func streams(_ daemon: PulseTestDaemon) throws -> Int {
        try daemon.pactl(["list", "short", "sink-inputs"]).split(separator: "\n").filter { !$0.isEmpty }.count
    }

    /// Plays `seconds` of a tone on `player` and waits until it has been played back.
    static func play(_ player: AVAudioPlayerNode, frequency: Double, seconds: Double) -> Bool {
        let tone = AVAudioEngineOfflineTests.toneBuffer(frequency: frequency, amplitude: 0.3, frames: Int(seconds * 48000), channels: 2)
        let done = DispatchSemaphore(value: 0)
        player.scheduleBuffer(tone, at: nil, completionCallbackType: .dataPlayedBack) { _ in done.signal() }
        player.play()
        return done.wait(timeout: .now() + seconds + 5) == .success
    }

    @Test("Auto shutdown on: the idle engine releases its stream and plays again on demand; off: the stream stays", arguments: [true, false])
    func idleEngineReleasesItsDevice(enabled: Bool) throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        setenv("PULSE_SERVER", daemon.server, 1)
        setenv("OAT_OUTPUT", "pulse:oat_test", 1)
        defer { unsetenv("PULSE_SERVER"); unsetenv("OAT_OUTPUT"); daemon.stop() }
        let recording = try daemon.recordMonitor(to: "\(daemon.directory)/monitor.raw")
        let engine = AVAudioEngine()
        #expect(!engine.isAutoShutdownEnabled, "off by default")
        engine.isAutoShutdownEnabled = enabled
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: nil)
        try engine.start()
        #expect(Self.play(player, frequency: 440, seconds: 0.5), "the first tone was played back")
        #expect(try Self.streams(daemon) == 1, "playing: one stream")
        usleep(2_500_000)
        #expect(engine.isRunning, "the engine runs on")
        let idle = try Self.streams(daemon)
        if enabled {
            #expect(idle == 0, "idle for 2.5 s with auto shutdown: the stream is released (\(idle) streams)")
        } else {
            #expect(idle == 1, "without auto shutdown the stream stays (\(idle) streams)")
        }
        #expect(Self.play(player, frequency: 880, seconds: 0.5), "the second tone was played back")
        #expect(try Self.streams(daemon) == 1)
        engine.stop()
        let recorded = recording.stop()
        let left = stride(from: 0, to: recorded.count, by: 2).map { recorded[$0] }
        let runs = PlaybackAVAudioEngineDetachTests.loudRuns(left)
        try #require(runs.count == 2, "two tones heard: \(runs)")
        for (i, frequency) in [440.0, 880.0].enumerated() {
            let heard = Double(runs[i].1 - runs[i].0) / 48000
            #expect(abs(heard - 0.5) < 0.03, "tone \(i + 1) lasted \(heard) s of 0.5 s")
            let mid = runs[i].0 + 4800
            let level = phaseOffset(left[mid..<(mid + 4800)], start: mid, frequency: frequency, rate: 48000).amplitude
            #expect(level > 0.25, "tone \(i + 1) at \(frequency) Hz: amplitude \(level)")
        }
    }
}
