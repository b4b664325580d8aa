import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing

/// AVAudioConverter's settings change what it does: the resampler's algorithm and quality
/// (alias rejection measured), dither, downmix, and the encoder's bit rate, strategy and lists.
@Suite struct AVAudioConverterSettingsTests {
    /// `frames` of a mono Float32 sine at `rate`.
    static func sine(_ frequency: Double, amplitude: Float, rate: Double, frames: Int) throws -> AVAudioPCMBuffer {
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: rate, channels: 1))
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: AVAudioFrameCount(frames)))
        for i in 0..<frames { buffer.floatChannelData![0][i] = amplitude * Float(sin(2 * .pi * frequency * Double(i) / rate)) }
        buffer.frameLength = AVAudioFrameCount(frames)
        return buffer
    }

    /// Converts all of `input` through `converter` (the input block hands it once, then ends).
    static func convertAll(_ converter: AVAudioConverter, _ input: AVAudioBuffer) throws -> [AVAudioBuffer] {
        var out: [AVAudioBuffer] = []
        var given = false
        while true {
            let buffer: AVAudioBuffer
            if converter.outputFormat.streamDescription.pointee.mFormatID == kAudioFormatLinearPCM {
                buffer = try #require(AVAudioPCMBuffer(pcmFormat: converter.outputFormat, frameCapacity: 8192))
            } else {
                buffer = AVAudioCompressedBuffer(format: converter.outputFormat, packetCapacity: 64, maximumPacketSize: max(1, converter.maximumOutputPacketSize))
            }
            var error: NSError?
            let status = converter.convert(to: buffer, error: &error) { _, status in
                if given { status.pointee = .endOfStream; return nil }
                given = true
                status.pointee = .haveData
                return input
            }
            #expect(status != .error, "\(String(describing: error))")
            if status != .haveData { break }
            out.append(buffer)
        }
        return out
    }

    static func floats(_ buffers: [AVAudioBuffer]) -> [Float] {
        buffers.compactMap { $0 as? AVAudioPCMBuffer }.flatMap { b in (0..<Int(b.frameLength)).map { b.floatChannelData![0][$0] } }
    }

    /// 48 kHz to 44.1 kHz: a 23 kHz tone (above the output's Nyquist) folds to 21.1 kHz. The
    /// level of that alias against the input tone, in dB, with the given settings.
    static func aliasLevel(algorithm: String?, quality: AVAudioQuality, tone: Double = 23000) throws -> Double {
        let input = try sine(tone, amplitude: 0.5, rate: 48000, frames: 48000)
        let output = try #require(AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 1))
        let converter = try #require(AVAudioConverter(from: input.format, to: output))
        converter.sampleRateConverterAlgorithm = algorithm
        converter.sampleRateConverterQuality = quality.rawValue
        let out = floats(try convertAll(converter, input))
        #expect(abs(out.count - 44100) < 64, "\(out.count) frames")
        let alias = toneAmplitude(out, freq: 44100 - tone, rate: 44100, from: 4410, count: 35280)
        return 20 * log10(max(1e-9, alias / 0.5))
    }

    /// The passband: a 19 kHz tone's level through the same settings, in dB.
    static func passbandLevel(algorithm: String?, quality: AVAudioQuality) throws -> Double {
        let input = try sine(19000, amplitude: 0.5, rate: 48000, frames: 48000)
        let output = try #require(AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 1))
        let converter = try #require(AVAudioConverter(from: input.format, to: output))
        converter.sampleRateConverterAlgorithm = algorithm
        converter.sampleRateConverterQuality = quality.rawValue
        let out = floats(try convertAll(converter, input))
        return 20 * log10(max(1e-9, toneAmplitude(out, freq: 19000, rate: 44100, from: 4410, count: 35280) / 0.5))
    }

    @Test
    func resamplerAlgorithmAndQualityChangeTheAliasRejection() throws {
        let minimum = try Self.aliasLevel(algorithm: AVSampleRateConverterAlgorithm_Normal, quality: .min)
        let medium = try Self.aliasLevel(algorithm: AVSampleRateConverterAlgorithm_Normal, quality: .medium)
        let maximum = try Self.aliasLevel(algorithm: AVSampleRateConverterAlgorithm_Normal, quality: .max)
        let mastering = try Self.aliasLevel(algorithm: AVSampleRateConverterAlgorithm_Mastering, quality: .medium)
        let masteringMax = try Self.aliasLevel(algorithm: AVSampleRateConverterAlgorithm_Mastering, quality: .max)
        let deepNormal = try Self.aliasLevel(algorithm: AVSampleRateConverterAlgorithm_Normal, quality: .medium, tone: 26000)
        let deepMastering = try Self.aliasLevel(algorithm: AVSampleRateConverterAlgorithm_Mastering, quality: .medium, tone: 26000)
        print("mastering max \(masteringMax); 26 kHz -> 18.1 kHz: normal \(deepNormal), mastering \(deepMastering)")
        let minimumPhase = try Self.aliasLevel(algorithm: AVSampleRateConverterAlgorithm_MinimumPhase, quality: .medium)
        let passNormal = try Self.passbandLevel(algorithm: AVSampleRateConverterAlgorithm_Normal, quality: .medium)
        let passMastering = try Self.passbandLevel(algorithm: AVSampleRateConverterAlgorithm_Mastering, quality: .medium)
        print("alias 23 kHz -> 21.1 kHz (dB): min \(minimum), medium \(medium), max \(maximum), mastering \(mastering), minimumPhase \(minimumPhase); 19 kHz passband: normal \(passNormal), mastering \(passMastering)")
        #expect(minimum > medium + 6, "a shorter filter lets more alias through: min \(minimum) dB, medium \(medium) dB")
        #expect(maximum < medium - 6, "max quality rejects more: \(maximum) dB vs \(medium) dB")
        #expect(mastering < medium - 60 && masteringMax <= mastering + 1, "mastering rejects far more than normal: \(mastering) dB vs \(medium) dB (max \(masteringMax))")
        #expect(deepNormal < -80 && deepMastering < deepNormal - 20, "deep in the stopband: normal \(deepNormal) dB, mastering \(deepMastering) dB")
        #expect(abs(minimumPhase - medium) < 1, "minimum phase resamples as normal here: \(minimumPhase) dB vs \(medium) dB")
        #expect(abs(passNormal) < 1 && abs(passMastering) < 1, "19 kHz passes: \(passNormal) dB, \(passMastering) dB")
    }

    @Test
    func theAlgorithmReadsBackAsSet() throws {
        let input = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1))
        let output = try #require(AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 1))
        let converter = try #require(AVAudioConverter(from: input, to: output))
        #expect(converter.sampleRateConverterAlgorithm == AVSampleRateConverterAlgorithm_Normal)
        converter.sampleRateConverterAlgorithm = AVSampleRateConverterAlgorithm_Mastering
        #expect(converter.sampleRateConverterAlgorithm == AVSampleRateConverterAlgorithm_Mastering)
        converter.sampleRateConverterAlgorithm = "nonsense"
        #expect(converter.sampleRateConverterAlgorithm == AVSampleRateConverterAlgorithm_Mastering, "unknown strings are ignored")
        converter.sampleRateConverterQuality = AVAudioQuality.high.rawValue
        #expect(converter.sampleRateConverterQuality == AVAudioQuality.high.rawValue)
        #expect(converter.bitRateStrategy == nil && converter.availableEncodeBitRates == nil && converter.availableEncodeChannelLayoutTags == nil,
                "nothing to say about encoding when not encoding")
    }

    /// A sine of 0.4 LSB converted to 16 bits: rounding makes silence of it; dither keeps it
    /// (in the noise, measured as the tone's amplitude).
    @Test
    func ditherKeepsASignalBelowOneLSB() throws {
        func level(dither: Bool) throws -> (tone: Double, rms: Double) {
            let lsb: Float = 1.0 / 32768
            let input = try Self.sine(1000, amplitude: 0.4 * lsb, rate: 48000, frames: 48000)
            let output = try #require(AVAudioFormat(commonFormat: .pcmFormatInt16, sampleRate: 48000, channels: 1, interleaved: true))
            let converter = try #require(AVAudioConverter(from: input.format, to: output))
            converter.dither = dither
            #expect(converter.dither == dither)
            let out = try #require(AVAudioPCMBuffer(pcmFormat: output, frameCapacity: 48000))
            try converter.convert(to: out, from: input)
            let samples = (0..<Int(out.frameLength)).map { Float(out.int16ChannelData![0][$0]) }
            let rms = (samples.reduce(0) { $0 + Double($1 * $1) } / Double(max(1, samples.count))).squareRoot()
            return (toneAmplitude(samples, freq: 1000, rate: 48000, from: 0, count: 48000), rms)
        }
        let plain = try level(dither: false)
        let dithered = try level(dither: true)
        print("0.4 LSB tone at 16 bits: no dither tone \(plain.tone) LSB rms \(plain.rms); TPDF tone \(dithered.tone) LSB rms \(dithered.rms)")
        #expect(plain.rms == 0, "rounded away without dither: rms \(plain.rms) LSB")
        #expect(dithered.rms > 0.3 && dithered.tone > 0.25 && dithered.tone < 0.55, "dither keeps the tone: \(dithered.tone) LSB, rms \(dithered.rms)")
    }

    /// Stereo to mono: by default (as Apple's) the left channel is kept; with downmix the two
    /// are mixed.
    @Test
    func downmixMixesAndTheDefaultRemaps() throws {
        func mono(downmix: Bool?) throws -> [Float] {
            let stereo = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
            let input = try #require(AVAudioPCMBuffer(pcmFormat: stereo, frameCapacity: 48000))
            for i in 0..<48000 {
                input.floatChannelData![0][i] = 0.5 * Float(sin(2 * .pi * 1000 * Double(i) / 48000))
                input.floatChannelData![1][i] = 0.5 * Float(sin(2 * .pi * 3000 * Double(i) / 48000))
            }
            input.frameLength = 48000
            let output = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1))
            let converter = try #require(AVAudioConverter(from: stereo, to: output))
            if let downmix { converter.downmix = downmix }
            let out = try #require(AVAudioPCMBuffer(pcmFormat: output, frameCapacity: 48000))
            try converter.convert(to: out, from: input)
            return (0..<Int(out.frameLength)).map { out.floatChannelData![0][$0] }
        }
        let remapped = try mono(downmix: nil)
        #expect(abs(toneAmplitude(remapped, freq: 1000, rate: 48000, from: 0, count: 48000) - 0.5) < 0.01, "the left channel as it was")
        #expect(toneAmplitude(remapped, freq: 3000, rate: 48000, from: 0, count: 48000) < 0.001, "nothing of the right")
        let mixed = try mono(downmix: true)
        let a = toneAmplitude(mixed, freq: 1000, rate: 48000, from: 0, count: 48000)
        let b = toneAmplitude(mixed, freq: 3000, rate: 48000, from: 0, count: 48000)
        #expect(a > 0.2 && abs(a - b) < 0.01, "both channels mixed, equally: \(a), \(b)")
        let back = try mono(downmix: false)
        #expect(toneAmplitude(back, freq: 3000, rate: 48000, from: 0, count: 48000) < 0.001, "downmix off again remaps")
    }
}

/// The encoder's settings through AVAudioConverter: bit rate and strategy change the encoded
/// size of AAC; the lists are what the encoder takes.
@Suite struct AVAudioConverterEncoderSettingsTests {
    static func aacConverter(rate: Double = 44100, channels: AVAudioChannelCount = 2) throws -> AVAudioConverter {
        let pcm = try #require(AVAudioFormat(standardFormatWithSampleRate: rate, channels: channels))
        let aac = try #require(AVAudioFormat(settings: [AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: rate, AVNumberOfChannelsKey: channels]))
        return try #require(AVAudioConverter(from: pcm, to: aac))
    }

    /// Two seconds of noise-like music (several inharmonic tones with a tremolo) encoded: the
    /// bytes of all packets.
    static func encodedBytes(_ converter: AVAudioConverter) throws -> Int {
        let format = converter.inputFormat
        let frames = Int(format.sampleRate) * 2
        let input = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: AVAudioFrameCount(frames)))
        for c in 0..<Int(format.channelCount) {
            var seed: UInt32 = 12345 &+ UInt32(c)
            for i in 0..<frames {
                seed = seed &* 1_664_525 &+ 1_013_904_223
                let noise = Float(Int32(bitPattern: seed)) / Float(Int32.max) * 0.05
                let t = Double(i) / format.sampleRate
                let tones = [220.0, 331.0, 1234.0, 4321.0, 9876.0].reduce(0.0) { $0 + 0.08 * sin(2 * .pi * $1 * t) }
                input.floatChannelData![c][i] = Float(tones * (0.6 + 0.4 * sin(2 * .pi * 3 * t))) + noise
            }
        }
        input.frameLength = AVAudioFrameCount(frames)
        let buffers = try AVAudioConverterSettingsTests.convertAll(converter, input)
        let packets = buffers.compactMap { $0 as? AVAudioCompressedBuffer }
        #expect(packets.reduce(0) { $0 + Int($1.packetCount) } > frames / 1024, "packets for all the frames")
        return packets.reduce(0) { $0 + Int($1.byteLength) }
    }

    @Test func bitRateAndStrategyChangeTheEncodedSize() throws {
        let low = try Self.aacConverter()
        low.bitRate = 64000
        #expect(low.bitRate == 64000)
        let high = try Self.aacConverter()
        high.bitRate = 192_000
        let lowBytes = try Self.encodedBytes(low), highBytes = try Self.encodedBytes(high)
        // 2 s: 64 kb/s is 16 000 bytes, 192 kb/s 48 000.
        print("AAC 2 s stereo: 64 kb/s \(lowBytes) bytes, 192 kb/s \(highBytes) bytes")
        #expect(abs(Double(lowBytes) / 16000 - 1) < 0.15 && abs(Double(highBytes) / 48000 - 1) < 0.15, "\(lowBytes), \(highBytes) bytes")

        let constant = try Self.aacConverter()
        #expect(constant.bitRateStrategy == AVAudioBitRateStrategy_Constant, "AAC defaults to a constant bit rate")
        let variable = try Self.aacConverter()
        variable.bitRateStrategy = AVAudioBitRateStrategy_Variable
        #expect(variable.bitRateStrategy == AVAudioBitRateStrategy_Variable)
        let constantBytes = try Self.encodedBytes(constant), variableBytes = try Self.encodedBytes(variable)
        print("AAC 2 s stereo, no bit rate set: constant \(constantBytes) bytes, variable (quality-driven) \(variableBytes) bytes")
        #expect(abs(Double(variableBytes) / Double(constantBytes) - 1) > 0.1, "the strategy changes the size: \(constantBytes) vs \(variableBytes)")
        variable.bitRateStrategy = "nonsense"
        #expect(variable.bitRateStrategy == AVAudioBitRateStrategy_Variable, "unknown strings are ignored")
    }

    @Test func theListsAreWhatTheEncoderTakes() throws {
        let stereo = try Self.aacConverter()
        let available = try #require(stereo.availableEncodeBitRates).map(\.intValue)
        let applicable = try #require(stereo.applicableEncodeBitRates).map(\.intValue)
        #expect(available.contains(64000) && available.contains(128_000) && available.contains(320_000), "\(available)")
        #expect(Set(applicable).isSubset(of: Set(available)) && !applicable.isEmpty, "\(applicable)")
        let mono = try Self.aacConverter(rate: 22050, channels: 1)
        let monoRates = try #require(mono.applicableEncodeBitRates).map(\.intValue)
        #expect(monoRates.allSatisfy { $0 <= 6 * 22050 } && monoRates.count < applicable.count, "mono 22.05 kHz takes fewer: \(monoRates)")
        // Each applicable rate is one the encoder opens with (it reads back as set).
        for rate in monoRates {
            let c = try Self.aacConverter(rate: 22050, channels: 1)
            c.bitRate = rate
            #expect(c.bitRate == rate, "the encoder took \(rate)")
        }
        let sampleRates = try #require(stereo.availableEncodeSampleRates).map(\.doubleValue)
        #expect(sampleRates.contains(44100) && sampleRates.contains(48000), "\(sampleRates)")
        #expect(try #require(stereo.applicableEncodeSampleRates).map(\.doubleValue).contains(44100))
        let tags = try #require(stereo.availableEncodeChannelLayoutTags).map(\.uint32Value)
        #expect(tags.contains(kAudioChannelLayoutTag_Mono) && tags.contains(kAudioChannelLayoutTag_Stereo), "\(tags)")
        #expect(tags.contains(kAudioChannelLayoutTag_MPEG_5_1_A), "AAC takes 5.1: \(tags)")
        #expect(stereo.maximumOutputPacketSize > 0)
    }
}
