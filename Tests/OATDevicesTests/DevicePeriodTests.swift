import OATCore
import OATTestSupport
import Testing
@testable import OATDevices

/// Issue 19 §1: render sizes are set in time, not frames. A fixed 1024-frame period was 5 ms at
/// 192 kHz (underruns) and 128 ms at 8 kHz (latency); the default period is now 1024 frames at
/// 44.1 kHz, 23.2 ms, at every rate, and an explicit period is given in seconds.
@Suite struct DevicePeriodTests {
    static let defaultPeriod = 1024.0 / 44100
    static let rates: [Double] = [8000, 192_000]

    /// The device's period in seconds is `seconds` within one frame (ALSA may round a period to
    /// what the PCM supports: allow 10 %).
    static func expectPeriod(_ frames: Int, _ rate: Double, _ seconds: Double, tolerance: Double, _ what: String) {
        let actual = Double(frames) / rate
        #expect(abs(actual - seconds) <= tolerance, "\(what) at \(Int(rate)) Hz: \(frames) frames = \(actual * 1000) ms, wanted \(seconds * 1000) ms")
    }

    @Test(arguments: rates)
    func nullAndWAVOutputsRenderTheSameTimeAtEveryRate(_ rate: Double) throws {
        let format = AudioDeviceFormat(sampleRate: rate, channels: 2)
        let oneFrame = 1 / rate
        Self.expectPeriod(NullOutputDevice(format: format).framesPerRender, rate, Self.defaultPeriod, tolerance: oneFrame, "null default")
        Self.expectPeriod(NullOutputDevice(format: format, period: 0.010).framesPerRender, rate, 0.010, tolerance: oneFrame, "null 10 ms")
        let path = uniqueTempPath("period", "wav")
        defer { removeFile(path) }
        let wav = try NullOutputDevice.wavFile(path: path, format: format)
        Self.expectPeriod(wav.framesPerRender, rate, Self.defaultPeriod, tolerance: oneFrame, "wav default")
        wav.close()
        let opened = try AudioOutput.open(.null(realTime: false), format: format)
        Self.expectPeriod(opened.device.framesPerRender, rate, Self.defaultPeriod, tolerance: oneFrame, "AudioOutput.open(.null)")
    }

    @Test(arguments: rates)
    func alsaPeriodIsATime(_ rate: Double) throws {
        let format = AudioDeviceFormat(sampleRate: rate, channels: 2)
        let byDefault = try ALSAOutputDevice(device: "null", format: format)
        defer { byDefault.close() }
        #expect(byDefault.format.sampleRate == rate)
        Self.expectPeriod(byDefault.framesPerRender, rate, Self.defaultPeriod, tolerance: Self.defaultPeriod / 10, "alsa default")
        let asked = try ALSAOutputDevice(device: "null", format: format, period: 0.040)
        defer { asked.close() }
        Self.expectPeriod(asked.framesPerRender, rate, 0.040, tolerance: 0.004, "alsa 40 ms")
        Self.expectPeriod(asked.bufferFrames, rate, 0.160, tolerance: 0.016, "alsa buffer of 4 periods")
    }
}
