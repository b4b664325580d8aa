#if canImport(Glibc)
import Glibc
#endif
import OATConversion
import OATFiles
import OATTestSupport
import Testing

/// Resampling checked on the signal, not only the frame count: a tone keeps its level and its
/// frequency through AudioConverter's rate conversion, up and down, and what cannot be
/// represented at the new rate (images when upsampling, tones above the new Nyquist frequency
/// when downsampling) is rejected.
@Suite struct ResamplingSignalTests {
    /// `frames` of Float32 mono: `amplitude` sine at `frequency` plus `second` (frequency,
    /// amplitude) when given.
    static func tone(_ frequency: Double, amplitude: Double, rate: Double, frames: Int, second: (Double, Double)? = nil) -> [Float] {
        (0..<frames).map { i in
            let t = Double(i) / rate
            var v = amplitude * sin(2 * Double.pi * frequency * t)
            if let (f, a) = second { v += a * sin(2 * Double.pi * f * t) }
            return Float(v)
        }
    }

    /// Converts mono Float32 `input` from `from` Hz to `to` Hz at high quality.
    static func resample(_ input: [Float], from: Double, to: Double) throws -> [Float] {
        let inFormat = AudioStreamBasicDescription.linearPCM(sampleRate: from, channels: 1, bitsPerChannel: 32, isFloat: true)
        let outFormat = AudioStreamBasicDescription.linearPCM(sampleRate: to, channels: 1, bitsPerChannel: 32, isFloat: true)
        let converter = try AudioConverter(from: inFormat, to: outFormat)
        converter.sampleRateConverterQuality = .high
        let bytes = input.withUnsafeBytes { Array($0) }
        try converter.decode(AudioPacketBatch(data: bytes, packetCount: input.count))
        try converter.endOfInput()
        let frames = converter.bufferedFrameCount
        let buffer = try AudioPCMBuffer(format: outFormat, frameCapacity: max(1, frames))
        let n = converter.read(into: buffer)
        return Array(buffer.floatChannel(0)![0..<n])
    }

    /// Level in dB of `frequency` relative to `reference` amplitude, over the middle of `x`
    /// (the filter's ends left out).
    static func level(_ x: [Float], _ frequency: Double, rate: Double, reference: Double) -> Double {
        let count = x.count / 2
        let a = toneAmplitude(x, freq: frequency, rate: rate, from: x.count / 4, count: count)
        return 20 * log10(max(a, 1e-12) / reference)
    }

    @Test(arguments: [(11025.0, 48000.0), (8000.0, 44100.0), (22050.0, 96000.0)])
    func upsamplingKeepsTheToneAndRejectsItsImages(_ rates: (Double, Double)) throws {
        let (from, to) = rates
        let f = 1000.0
        let input = Self.tone(f, amplitude: 0.5, rate: from, frames: Int(from))
        let output = try Self.resample(input, from: from, to: to)
        #expect(abs(output.count - Int(to)) <= 2, "\(output.count) frames for \(Int(to))")
        let toneLevel = Self.level(output, f, rate: to, reference: 0.5)
        let dominant = dominantFrequency(Array(output[output.count / 4..<(output.count * 3 / 4)]), sampleRate: to)
        // The images of a 1 kHz tone sampled at `from` sit at from - f, from + f, 2 from - f, ...
        let images = [from - f, from + f, 2 * from - f].filter { $0 < to / 2 }
        let worstImage = images.map { Self.level(output, $0, rate: to, reference: 0.5) }.max() ?? -200
        print("resample \(Int(from)) -> \(Int(to)): tone \(format1(toneLevel)) dB at \(format1(dominant)) Hz; worst image \(format1(worstImage)) dB")
        #expect(abs(toneLevel) < 0.1, "the tone's level changed by \(format1(toneLevel)) dB")
        #expect(abs(dominant - f) < 2, "the dominant frequency is \(dominant) Hz")
        #expect(worstImage < -70, "an image at \(format1(worstImage)) dB")
    }

    @Test(arguments: [(48000.0, 11025.0), (96000.0, 44100.0), (44100.0, 8000.0)])
    func downsamplingKeepsThePassbandAndRejectsWhatIsAboveTheNewNyquist(_ rates: (Double, Double)) throws {
        let (from, to) = rates
        let f = 1000.0
        // A tone above the new Nyquist frequency (and below the old one): it must not fold back.
        let high = min(from / 2 * 0.9, to / 2 * 1.5)
        let alias = to - high // where it would land folded
        let input = Self.tone(f, amplitude: 0.4, rate: from, frames: Int(from), second: (high, 0.4))
        let output = try Self.resample(input, from: from, to: to)
        #expect(abs(output.count - Int(to)) <= 2, "\(output.count) frames for \(Int(to))")
        let toneLevel = Self.level(output, f, rate: to, reference: 0.4)
        let aliasLevel = Self.level(output, alias, rate: to, reference: 0.4)
        let dominant = dominantFrequency(Array(output[output.count / 4..<(output.count * 3 / 4)]), sampleRate: to)
        print("resample \(Int(from)) -> \(Int(to)): tone \(format1(toneLevel)) dB at \(format1(dominant)) Hz; \(Int(high)) Hz folded to \(Int(alias)) Hz at \(format1(aliasLevel)) dB")
        #expect(abs(toneLevel) < 0.1, "the tone's level changed by \(format1(toneLevel)) dB")
        #expect(abs(dominant - f) < 2, "the dominant frequency is \(dominant) Hz")
        #expect(aliasLevel < -60, "\(Int(high)) Hz folded back to \(Int(alias)) Hz at \(format1(aliasLevel)) dB")
    }
}
