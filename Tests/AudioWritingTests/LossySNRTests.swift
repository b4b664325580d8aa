import OATTestSupport
import OpenAudioToolbox
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// How much of the waveform our lossy encoders keep, next to FFmpeg's command encoding the same
/// signal with the same codec and bit rate: the recording tests' reference (a chirp and two tones
/// at 48 kHz, silence around it), decoded by our reader and aligned the same way
/// (``lossyAlign(recording:reference:channels:segmentFrames:drift:)``). The figures are in
/// docs/recording.md; they show why the issue's 60 dB is out of reach for perceptual codecs.
@Suite(.requires(TestResource.ffmpegMissing)) struct LossySNRTests {
    /// The recording tests' signal: 16-bit exact, chirp 300 Hz to 3.3 kHz left, 441 + 1234 Hz right.
    static func reference(rate: Int, seconds: Double) -> [Float] {
        let frames = Int(Double(rate) * seconds)
        var out = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let t = Double(i) / Double(rate)
            let chirp = 0.45 * sin(2 * Double.pi * (300 + 1500 / seconds * t) * t + 0.3)
            let tones = 0.2 * sin(2 * Double.pi * 441 * t + 1) + 0.15 * sin(2 * Double.pi * 1234 * t + 0.5)
            out[2 * i] = Float((chirp * 32768).rounded()) / 32768
            out[2 * i + 1] = Float((tones * 32768).rounded()) / 32768
        }
        return out
    }

    /// (our data format, file extension, FFmpeg encoder, bit rate)
    @Test(arguments: [("aac", "m4a", "aac", 128_000), ("aac", "m4a", "aac", 256_000), ("aac", "m4a", "aac", 512_000),
                      (".mp3", "mp3", "libmp3lame", 128_000), (".mp3", "mp3", "libmp3lame", 192_000),
                      (".mp3", "mp3", "libmp3lame", 256_000), (".mp3", "mp3", "libmp3lame", 320_000),
                      ("opus", "opus", "libopus", 96_000), ("opus", "opus", "libopus", 256_000), ("opus", "opus", "libopus", 510_000)])
    func oursKeepsAsMuchAsFFmpegs(_ data: String, _ ext: String, _ ffmpegCodec: String, _ bitRate: Int) throws {
        let s = Scratch("lossy-snr")
        defer { s.cleanup() }
        let reference = Self.reference(rate: 48000, seconds: 2)
        let pad = [Float](repeating: 0, count: 12000 * 2)
        let padded = pad + reference + pad
        // The input as 16-bit WAV (exact: every sample is a multiple of 1/32768).
        let input = s.path("in.wav")
        let format = AudioStreamBasicDescription.linearPCM(sampleRate: 48000, channels: 2, bitsPerChannel: 16)
        let writer = try AudioFileWriter(path: input, fileType: .wave, dataFormat: format)
        var bytes = [UInt8]()
        for x in padded {
            let v = Int16(clamping: Int((x * 32768).rounded()))
            bytes.append(UInt8(truncatingIfNeeded: v)); bytes.append(UInt8(truncatingIfNeeded: v >> 8))
        }
        try writer.writePackets(AudioPacketBatch(data: bytes, packetCount: padded.count / 2))
        try writer.close()

        let ours = s.path("ours.\(ext)")
        var settings = AudioFileConversionSettings()
        settings.fileType = AudioFileConversion.fileType(forExtension: ours)
        settings.dataFormat = AudioFileConversion.dataFormat(named: data)
        settings.encoder.bitRate = bitRate
        _ = try AudioFileConversion.convert(input: input, output: ours, settings: settings)
        let theirs = s.path("ffmpeg.\(ext)")
        #expect(shell("ffmpeg -v error -nostdin -y -i '\(input)' -c:a \(ffmpegCodec) -b:a \(bitRate) '\(theirs)' 2>/dev/null").status == 0)

        let a = try #require(lossyAlign(recording: try decodeWithToolbox(ours).samples, reference: reference, channels: 2))
        let b = try #require(lossyAlign(recording: try decodeWithToolbox(theirs).samples, reference: reference, channels: 2))
        print("lossy SNR \(data) \(bitRate / 1000) kb/s: ours \(a); ffmpeg \(ffmpegCodec) \(b)")
        #expect(a.snr >= b.snr - 1, "\(data) at \(bitRate): ours \(dB(a.snr)) dB, ffmpeg's \(dB(b.snr)) dB")
        #expect(a.offset == 12000 && a.offsetSpread == 0, "\(a)")
        #expect(a.snr >= 20, "\(a)")
    }
}

/// The lossy alignment itself, on a synthetic "recording" whose answer is known: the reference
/// after 1234 frames of silence, a 300-frame gap in the middle (a playback underrun), and noise
/// 40 dB below the signal.
@Suite struct LossyAlignmentTests {
    @Test func findsOffsetGapAndNoiseLevel() throws {
        let reference = LossySNRTests.reference(rate: 48000, seconds: 2)
        var rng = SplitMix(seed: 7)
        var power = 0.0
        for x in reference { power += Double(x) * Double(x) }
        let noiseRMS = (power / Double(reference.count) / 1e4).squareRoot() // -40 dB
        let cut = 50_000 * 2
        var recording = [Float](repeating: 0, count: 1234 * 2) + reference[..<cut] + [Float](repeating: 0, count: 300 * 2)
            + reference[cut...] + [Float](repeating: 0, count: 4800 * 2)
        for i in recording.indices {
            // Uniform noise in ±a has RMS a / sqrt(3).
            let u = Double(rng.next() >> 11) / Double(1 << 53) * 2 - 1
            recording[i] += Float(u * noiseRMS * 3.0.squareRoot())
        }
        let m = try #require(lossyAlign(recording: recording, reference: reference, channels: 2))
        print("synthetic: \(m)")
        #expect(m.offset == 1234)
        #expect(m.offsetSpread == 300, "the gap moves the later segments by 300 frames: \(m)")
        #expect(m.segments.last.map { $0.recordingFrame - $0.referenceFrame } == 1534)
        // The segment holding the gap is split where the gap is; every piece, and the whole,
        // sits at the noise level.
        #expect(m.segments.count == 21 && m.segments.contains { $0.referenceFrame == 50_000 && $0.recordingFrame == 51_534 }, "\(m)")
        #expect(m.segments.allSatisfy { abs($0.snr - 40) < 1.5 }, "\(m.segments.map { dB($0.snr) })")
        #expect(abs(m.snr - 40) < 0.5, "\(m)")
        // Without the split the gap would cost the whole figure: a drop of frames does count.
        var dropped = recording
        dropped.removeSubrange((1234 + 70_000) * 2..<(1234 + 70_300) * 2)
        let d = try #require(lossyAlign(recording: dropped, reference: reference, channels: 2))
        print("synthetic with 300 frames dropped: \(d)")
        #expect(d.snr < 30 && d.snr > 15, "300 frames missing must show: \(d)")
    }
}

extension LossyAlignmentTests {
    /// Gaps longer than a segment, anywhere: each costs nothing.
    @Test(arguments: [[(6037, 28_000)], [(6037, 28_800)], [(6037, 30_000)], [(6037, 33_500)], [(12_000, 40_000)], [(300, 4_799)],
                      [(3000, 30_000), (3037, 34_000)], [(3000, 30_000), (3037, 31_000)], [(1000, 29_000), (2000, 30_500), (3037, 36_000)]])
    func longGapsAnywhere(_ gaps: [(Int, Int)]) throws {
        let reference = LossySNRTests.reference(rate: 48000, seconds: 2)
        var rng = SplitMix(seed: 11)
        var recording = [Float](repeating: 0, count: 10_000 * 2)
        var from = 0
        for (gap, at) in gaps {
            recording += reference[(from * 2)..<(at * 2)]
            recording += [Float](repeating: 0, count: gap * 2)
            from = at
        }
        recording += reference[(from * 2)...]
        recording += [Float](repeating: 0, count: 4800 * 2)
        let gap = gaps.map(\.0).reduce(0, +)
        let at = gaps.map(\.1)
        for i in recording.indices {
            let u = Double(rng.next() >> 11) / Double(1 << 53) * 2 - 1
            recording[i] += Float(u * 0.003)
        }
        let m = try #require(lossyAlign(recording: recording, reference: reference, channels: 2))
        print("gap \(gap) at \(at): \(m)")
        #expect(m.offset == 10_000 && m.offsetSpread == gap, "\(m)")
        #expect(m.segments.allSatisfy { $0.snr > 35 }, "\(m.segments.map { "\($0.referenceFrame)@\($0.recordingFrame - $0.referenceFrame): \(dB($0.snr))" })")
    }
}
