#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATTestSupport
import Synchronization
import Testing
@testable import OATDevices

/// ALSA capture without a sound card: a `file` PCM whose `infile` supplies the "captured"
/// samples, read back through ``ALSAInputDevice``'s device thread; and the input specs.
@Suite struct ALSAInputDeviceTests {
    @Test func filePCMCapturesExactlyTheInfileSamples() throws {
        let frames = 24_000
        var samples = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            samples[2 * i] = Float(i % 1000) / 1000 - 0.5
            samples[2 * i + 1] = Float(-(i % 777)) / 1000
        }
        let path = uniqueTempPath("alsa-in", "raw")
        defer { removeFile(path) }
        let written = samples.withUnsafeBytes { raw in writeFile(path, Array(raw)) }
        try #require(written)
        let config = "pcm.oatin { type file slave.pcm null file \"/dev/null\" infile \"\(path)\" format raw }\n"
        let device = try ALSAInputDevice(device: "oatin", format: AudioDeviceFormat(sampleRate: 48000, channels: 2),
                                         periodFrames: 1000, configText: config)
        #expect(device.sampleFormat == .float32)
        final class Captured: Sendable {
            let samples = Locked<[Float]>([])
            let times = Locked<[(Double, Int)]>([])
        }
        let captured = Captured()
        try device.start { s, n, time in
            captured.samples.withLock { $0.append(contentsOf: s) }
            captured.times.withLock { $0.append((time.sampleTime, n)) }
        }
        #expect(waitUntil(10) { captured.samples.withLock { $0.count } >= frames * 2 })
        device.close()
        let got = captured.samples.withLock { $0 }
        #expect(got.count >= frames * 2)
        var mismatches = 0
        for i in 0..<min(got.count, samples.count) where got[i] != samples[i] { mismatches += 1 }
        #expect(mismatches == 0, "\(mismatches) samples differ from the infile")
        var expected = 0.0
        for (t, n) in captured.times.withLock({ $0 }) {
            #expect(t == expected)
            expected += Double(n)
        }
        #expect(Int64(expected) == device.capturedFrames)
    }

    @Test func missingCapturePCMIsDeviceUnavailable() {
        #expect(throws: AudioError.self) {
            _ = try ALSAInputDevice(device: "oat_no_such_pcm", format: AudioDeviceFormat(sampleRate: 48000, channels: 2))
        }
        do {
            _ = try AudioInput.open(.alsa(device: "oat_no_such_pcm"), format: AudioDeviceFormat(sampleRate: 48000, channels: 2))
            Issue.record("opened a missing PCM")
        } catch {
            #expect(error.code == .deviceUnavailable && error.message.contains("oat_no_such_pcm"))
        }
    }

    @Test func inputSpecsParse() {
        #expect(AudioInputSpec(parsing: "auto") == .auto)
        #expect(AudioInputSpec(parsing: "pulse") == .pulse(source: nil))
        #expect(AudioInputSpec(parsing: "pulse:oat_test.monitor") == .pulse(source: "oat_test.monitor"))
        #expect(AudioInputSpec(parsing: "alsa") == .alsa(device: "default"))
        #expect(AudioInputSpec(parsing: "alsa:hw:1,0") == .alsa(device: "hw:1,0"))
        #expect(AudioInputSpec(parsing: "wav:x") == nil)
        #expect(AudioInputSpec(parsing: "auto:x") == nil)
        #expect(AudioInputSpec.pulse(source: "s").description == "pulse:s")
    }
}
