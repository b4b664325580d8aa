import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing

/// Many buffers scheduled back to back on one AVAudioPlayerNode (the streamers' idiom: each
/// decoded chunk is its own `AVAudioPCMBuffer`) play as one continuous signal: nothing dropped,
/// repeated or zeroed where one buffer ends and the next begins, and, when the buffers' rate is
/// not the engine's, the rate conversion runs on across the joins as it does within one buffer.
@Suite struct AVAudioPlayerNodeScheduledBuffersTests {
    /// Three tones (low, middle, near the top of the band) on two channels: a join that drops,
    /// repeats or restarts anything shows as broadband error against it.
    static func signal(frames: Int, rate: Double) -> [[Float]] {
        (0..<2).map { c in
            (0..<frames).map { i in
                let t = Double(i) / rate
                return Float(0.3 * sin(2 * .pi * 441 * t + Double(c)) + 0.2 * sin(2 * .pi * 3100 * t) + 0.1 * sin(2 * .pi * 15000 * t + 0.5))
            }
        }
    }

    /// `signal[.., range]` as a standard-format buffer at `rate`.
    static func buffer(_ signal: [[Float]], _ range: Range<Int>, rate: Double) throws -> AVAudioPCMBuffer {
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: rate, channels: 2))
        let b = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: AVAudioFrameCount(range.count)))
        for c in 0..<2 {
            signal[c][range].withUnsafeBufferPointer { b.floatChannelData![c].update(from: $0.baseAddress!, count: range.count) }
        }
        b.frameLength = AVAudioFrameCount(range.count)
        return b
    }

    /// Renders `signal` at `rate`, cut at `cuts` into buffers scheduled back to back, offline at
    /// 48 kHz; returns the interleaved output and how many completion handlers ran.
    static func render(_ signal: [[Float]], rate: Double, cuts: [Int], total: Int) throws -> (samples: [Float], completions: Int) {
        let engine = AVAudioEngine()
        let output = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        try engine.enableManualRenderingMode(.offline, format: output, maximumFrameCount: 1024)
        let player = AVAudioPlayerNode()
        engine.attach(player)
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: rate, channels: 2))
        engine.connect(player, to: engine.mainMixerNode, format: format)
        try engine.start()
        let bounds = [0] + cuts + [signal[0].count]
        var completions = 0
        for (start, end) in zip(bounds, bounds.dropFirst()) {
            player.scheduleBuffer(try buffer(signal, start..<end, rate: rate)) { completions += 1 }
        }
        player.play()
        let out = try AVAudioEngineOfflineTests.render(engine, total: total)
        player.stop()
        engine.stop()
        var interleaved = [Float](repeating: 0, count: out[0].count * 2)
        for i in 0..<out[0].count { interleaved[2 * i] = out[0][i]; interleaved[2 * i + 1] = out[1][i] }
        return (interleaved, completions)
    }

    /// Cuts of irregular sizes (1 frame, a few, more than a render slice) over `frames`.
    static func irregularCuts(frames: Int) -> [Int] {
        let sizes = [4096, 1, 37, 1000, 2048, 3, 1153, 4095, 512, 1]
        var cuts: [Int] = []
        var at = 0
        var i = 0
        while true {
            at += sizes[i % sizes.count]
            i += 1
            if at >= frames { return cuts }
            cuts.append(at)
        }
    }

    @Test func buffersAtTheEngineRatePlayAsTheirConcatenationToTheFrame() throws {
        let frames = 48000
        let signal = Self.signal(frames: frames, rate: 48000)
        let cuts = Self.irregularCuts(frames: frames)
        let (out, completions) = try Self.render(signal, rate: 48000, cuts: cuts, total: frames + 1024)
        #expect(completions == cuts.count + 1, "every buffer's completion handler ran")
        var concatenated = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames { concatenated[2 * i] = signal[0][i]; concatenated[2 * i + 1] = signal[1][i] }
        let exact = (0..<(frames * 2)).allSatisfy { out[$0] == concatenated[$0] }
        #expect(exact, "the output is the buffers' concatenation sample for sample: \(dB(snr(concatenated, out))) dB")
        #expect(out[(frames * 2)...].allSatisfy { $0 == 0 }, "silence after the last buffer")
    }

    @Test func buffersAtAnotherRateAreConvertedAcrossTheJoinsAsOneBufferIs() throws {
        // 44.1 kHz buffers of 4096 frames (the streamer's decoded chunks) into a 48 kHz engine,
        // against the same signal scheduled as one buffer.
        let frames = 88200
        let signal = Self.signal(frames: frames, rate: 44100)
        let total = 96000 + 2048
        let whole = try Self.render(signal, rate: 44100, cuts: [], total: total)
        let chunked = try Self.render(signal, rate: 44100, cuts: Array(stride(from: 4096, to: frames, by: 4096)), total: total)
        #expect(chunked.completions == frames / 4096 + 1)
        let firstSound = try #require(firstNonSilentFrame(whole.samples, channels: 2))
        #expect(firstNonSilentFrame(chunked.samples, channels: 2) == firstSound, "the chunked buffers start where the whole one does")
        let overall = snr(whole.samples, chunked.samples)
        // The worst 1024-frame stretch (the joins come every 4096 source frames).
        var worst = Double.infinity
        var worstAt = 0
        for start in stride(from: firstSound, to: firstSound + 96000 - 1024, by: 1024) {
            let s = segmentSNR(chunked.samples, start, whole.samples, start, frames: 1024, channels: 2)
            if s < worst { worst = s; worstAt = start }
        }
        print("44.1 kHz buffers of 4096 frames at 48 kHz against one buffer: \(dB(overall)) dB, worst 1024 frames \(dB(worst)) dB at frame \(worstAt)")
        #expect(overall >= 90, "the chunked buffers sound as the whole one: \(dB(overall)) dB")
        #expect(worst >= 80, "no join stands out: worst 1024 frames \(dB(worst)) dB at frame \(worstAt)")
    }
}
