import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `OAT_OUTPUT=alsa:null`: ALSA's null PCM takes audio as fast as it comes, but it stands for a
/// device, so the engine's time tracks the wall clock there as on a sound card. Before, an
/// engine with nothing playing rendered silence as fast as it could (about a hundred seconds of
/// it a second), or, with an idle player, nothing at all. (Playback in the name: the suite sets
/// OAT_OUTPUT for the process, so it runs with the serial real-time suites.)
@Suite(.serialized) struct PlaybackAVAudioEngineClocklessTests {
    @Test("On alsa:null the engine's sample time tracks the wall clock, with and without an idle player", arguments: [false, true])
    func sampleTimeTracksTheWallClock(withPlayer: Bool) throws {
        setenv("OAT_OUTPUT", "alsa:null,rate=48000", 1)
        defer { unsetenv("OAT_OUTPUT") }
        let engine = AVAudioEngine()
        let stereo = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        let player = AVAudioPlayerNode()
        if withPlayer {
            engine.attach(player)
            engine.connect(player, to: engine.mainMixerNode, format: stereo)
        } else {
            _ = engine.mainMixerNode
        }
        try engine.start()
        defer { engine.stop() }
        let began = Date()
        usleep(1_000_000)
        let sampleTime = engine.outputNode.lastRenderTime?.sampleTime ?? 0
        let seconds = Date().timeIntervalSince(began)
        let rendered = Double(sampleTime) / 48000
        #expect(rendered > 0.7 * seconds && rendered < seconds + 0.4, "\(rendered) s of frames rendered in \(seconds) s of wall time")

        if withPlayer {
            // A player's half second plays in about half a second.
            let buffer = try #require(AVAudioPCMBuffer(pcmFormat: stereo, frameCapacity: 24000))
            buffer.frameLength = 24000
            let done = DispatchSemaphore(value: 0)
            player.scheduleBuffer(buffer, at: nil, completionCallbackType: .dataRendered) { _ in done.signal() }
            let start = Date()
            player.play()
            #expect(done.wait(timeout: .now() + 5) == .success)
            let took = Date().timeIntervalSince(start)
            #expect(took > 0.35 && took < 1.2, "0.5 s of audio was rendered in \(took) s")
        }
    }
}
