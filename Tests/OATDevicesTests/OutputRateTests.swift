#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATTestSupport
import Testing
@testable import OATDevices

/// The rate an output runs at: the `,rate=HZ` option of an output spec, and an ALSA PCM's own
/// rate (what the engine renders at for `alsa:PCM`), with PCMs that need no card.
@Suite struct OutputRateTests {
    @Test func theRateOptionIsParsedAndLeftOutOfTheSpec() {
        #expect(AudioOutputSpec(parsing: "wav:/tmp/a.wav,rate=44100") == .wav(path: "/tmp/a.wav", realTime: false))
        #expect(AudioOutputSpec.sampleRate(parsing: "wav:/tmp/a.wav,rate=44100") == 44100)
        #expect(AudioOutputSpec(parsing: "null:fast,rate=32000") == .null(realTime: false))
        #expect(AudioOutputSpec.sampleRate(parsing: "null:fast,rate=32000") == 32000)
        #expect(AudioOutputSpec(parsing: "null:rate=22050") == .null(realTime: true))
        #expect(AudioOutputSpec.sampleRate(parsing: "null:rate=22050") == 22050)
        #expect(AudioOutputSpec(parsing: "alsa:hw:0,0,rate=96000") == .alsa(device: "hw:0,0"))
        #expect(AudioOutputSpec.sampleRate(parsing: "alsa:hw:0,0,rate=96000") == 96000)
        // No option, or not a rate: the text is the spec as before.
        #expect(AudioOutputSpec(parsing: "alsa:hw:0,0") == .alsa(device: "hw:0,0"))
        #expect(AudioOutputSpec.sampleRate(parsing: "alsa:hw:0,0") == nil)
        #expect(AudioOutputSpec(parsing: "wav:/tmp/a,rate=fast.wav") == .wav(path: "/tmp/a,rate=fast.wav", realTime: false))
        #expect(AudioOutputSpec.sampleRate(parsing: "wav:/tmp/a.wav,rate=0") == nil)
        #expect(AudioOutputSpec.sampleRate(parsing: "wav:/tmp/a.wav,rate=-5") == nil)
        #expect(AudioOutputSpec(parsing: "wav:,rate=44100") == nil)
    }

    /// A `plug` PCM whose slave runs at 22,050 Hz (the shape of `plughw:` over a card that only
    /// does 22,050): its native rate is the slave's, not the 48,000 asked for; PCMs that take any
    /// rate give the rate asked for; a PCM that does not exist gives nil.
    @Test func anALSAPCMsNativeRateIsItsSlaves() throws {
        let config = "pcm.oat_plug22 { type plug slave { pcm null rate 22050 } }\n"
        #expect(ALSAOutputDevice.nativeSampleRate(device: "oat_plug22", near: 48000, configText: config) == 22050)
        #expect(ALSAOutputDevice.nativeSampleRate(device: "oat_plug22", near: 8000, configText: config) == 22050)
        #expect(ALSAOutputDevice.nativeSampleRate(device: "null", near: 48000) == 48000)
        #expect(ALSAOutputDevice.nativeSampleRate(device: "null", near: 44100) == 44100)
        #expect(ALSAOutputDevice.nativeSampleRate(device: "oat_no_such_pcm", near: 48000) == nil)
        // Opened at that rate, the device runs at it (nothing for ALSA to convert).
        let device = try ALSAOutputDevice(device: "oat_plug22", format: AudioDeviceFormat(sampleRate: 22050, channels: 2),
                                          periodFrames: 512, configText: config)
        defer { device.close() }
        #expect(device.format.sampleRate == 22050)
    }
}
