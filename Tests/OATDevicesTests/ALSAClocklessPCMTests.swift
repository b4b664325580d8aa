#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATTestSupport
import Foundation
import Testing
@testable import OATDevices

/// ALSA PCMs that no sound card paces: `null`, and chains that end in it (a `plug` over a
/// `file` over `null`, which `snd_pcm_type` reports as a plug PCM). They are clockless (not
/// real time) unless the wall clock paces them (`pacesClocklessPCM`), as AVAudioEngine asks.
@Suite struct ALSAClocklessPCMTests {
    /// A `plug` PCM (to 22,050 Hz) over a `file` PCM over `null`.
    static func chainConfig(_ pcm: String, _ path: String) -> String {
        "pcm.\(pcm) { type plug slave { pcm { type file slave.pcm null file \"\(path)\" format raw } rate 22050 } }\n"
    }

    @Test("A plug over a file over null is clockless (it was taken as real time: its type is plug)")
    func aChainEndingInNullIsClockless() throws {
        let path = uniqueTempPath("alsa-chain", "raw")
        defer { removeFile(path) }
        let chained = try ALSAOutputDevice(device: "oatchain", format: AudioDeviceFormat(sampleRate: 48000, channels: 2),
                                           periodFrames: 480, configText: Self.chainConfig("oatchain", path))
        #expect(chained.isClockless)
        #expect(!chained.isRealTime, "a chain ending in null is not real time")
        chained.close()
        let null = try ALSAOutputDevice(device: "null", format: AudioDeviceFormat(sampleRate: 48000, channels: 2), periodFrames: 480)
        #expect(null.isClockless && !null.isRealTime)
        null.close()
    }

    @Test("Paced by the wall clock, a clockless PCM renders about a second's frames in a second, not as fast as it can")
    func aPacedClocklessPCMTracksTheWallClock() throws {
        let path = uniqueTempPath("alsa-paced", "raw")
        defer { removeFile(path) }
        for (name, config) in [("null", nil as String?), ("oatpaced", Self.chainConfig("oatpaced", path))] {
            let device = try ALSAOutputDevice(device: name, format: AudioDeviceFormat(sampleRate: 48000, channels: 2),
                                              periodFrames: 1024, configText: config)
            device.pacesClocklessPCM = true
            #expect(device.isRealTime, "\(name): paced, it is real time")
            // An endless source of silence.
            try device.start { _, frames, _ in AudioRenderResult(frames: frames) }
            let began = HostTime.now()
            usleep(1_000_000)
            let rendered = device.renderedFrames
            let seconds = HostTime.seconds(ticks: HostTime.now() - began)
            device.stop(drain: false)
            device.close()
            let expected = seconds * 48000
            // At most the buffer (4 periods) ahead of the clock, and not far behind it.
            #expect(Double(rendered) < expected + Double(device.bufferFrames) + 2048, "\(name): \(rendered) frames in \(seconds) s")
            #expect(Double(rendered) > expected * 0.8, "\(name): \(rendered) frames in \(seconds) s")
        }
    }
}
