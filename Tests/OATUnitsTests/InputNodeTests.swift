import OATCore
import OATTestSupport
import OATUnits
import Foundation
import Testing

/// The input node's ring, underrun/overrun counting and drift control, driven offline: a
/// simulated capture clock writes into the node (as the device thread would) while the graph
/// renders slices on the output clock.
@Suite struct InputNodeTests {
    /// Runs `seconds` of simulated time: captures of `captureFrames` on a clock `ppm` parts per
    /// million fast (negative: slow) interleaved with renders of `slice` frames; captured
    /// sample n of channel c is n + c / 4 (exact in Float up to 2^22). Returns channel 0 of
    /// the output and the fill level seen after every render.
    func simulate(node: AUInputNode, graph: AudioGraph, seconds: Double, ppm: Double, captureFrames: Int = 240,
                  slice: Int = 256, stallAt: Double? = nil, stallSeconds: Double = 0) -> (out: [Float], fill: [Int]) {
        let rate = graph.sampleRate
        let inRate = rate * (1 + ppm / 1e6)
        var out: [Float] = []
        var fills: [Int] = []
        let ch = node.channels
        let buffers = (0..<graph.output.inputChannels[0]).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: slice) }
        defer { buffers.forEach { $0.deallocate() } }
        var pointers = buffers
        var captured = 0, renders = 0
        var capture = [Float](repeating: 0, count: captureFrames * ch)
        while Double(renders * slice) / rate < seconds {
            let tCapture = Double(captured + captureFrames) / inRate   // a capture arrives when complete
            let tRender = Double(renders * slice) / rate
            if tCapture <= tRender {
                for f in 0..<captureFrames { for c in 0..<ch { capture[f * ch + c] = Float(captured + f) + Float(c) / 4 } }
                capture.withUnsafeBufferPointer { node.write($0, frames: captureFrames) }
                captured += captureFrames
            } else {
                let stalled = stallAt.map { tRender >= $0 && tRender < $0 + stallSeconds } ?? false
                if !stalled {
                    pointers.withUnsafeMutableBufferPointer { graph.render(into: $0, frames: slice) }
                    out.append(contentsOf: UnsafeBufferPointer(start: buffers[0], count: slice))
                    fills.append(node.statistics.fillFrames)
                }
                renders += 1
            }
        }
        return (out, fills)
    }

    func makeGraph(channels: Int = 2) throws -> (AudioGraph, AUInputNode) {
        let g = try AudioGraph(sampleRate: 48000, channels: channels, maxFramesPerSlice: 512)
        let input = AUInputNode(channels: channels, capacityFrames: 8192)
        try g.add(input)
        try g.connect(input, to: g.output)
        try g.commit()
        return (g, input)
    }

    @Test func sameClocksDeliverEveryFrameInOrderWithBoundedFill() throws {
        let (g, input) = try makeGraph()
        let (out, fill) = simulate(node: input, graph: g, seconds: 10, ppm: 0)
        let s = input.statistics
        print("input node, equal clocks: \(s)")
        #expect(s.underruns == 0 && s.overrunFrames == 0 && s.insertedFrames == 0)
        // Once the level has settled (the first second) the samples are consecutive capture
        // frames: no gap, no repeat.
        let start = try #require(out.firstIndex { $0 != 0 }) + 48000
        var breaks = 0
        for i in (start + 1)..<out.count where out[i] != out[i - 1] + 1 { breaks += 1 }
        #expect(breaks == 0, "\(breaks) discontinuities")
        // Latency bounded: the ring never holds more than a capture, a slice and the reserve.
        let limit = 240 + 256 + 2 * input.safetyFrames + 32
        #expect(fill.dropFirst(200).allSatisfy { $0 <= limit }, "fill up to \(fill.max() ?? 0), limit \(limit)")
    }

    @Test func fastInputClockIsTrimmedSlowInputClockIsPadded() throws {
        for ppm in [2000.0, -2000.0] {
            let (g, input) = try makeGraph(channels: 1)
            let (out, fill) = simulate(node: input, graph: g, seconds: 30, ppm: ppm)
            let s = input.statistics
            print("input node, input clock \(ppm) ppm: \(s), fill max \(fill.dropFirst(100).max() ?? 0)")
            let drift = Int(30 * 48000 * abs(ppm) / 1e6)   // 2880 frames over 30 s
            #expect(s.underruns <= 1, "\(s.underruns) underruns")
            #expect(s.overrunFrames == 0)
            if ppm > 0 {
                #expect(Double(s.skippedFrames) > 0.8 * Double(drift), "skipped \(s.skippedFrames) of \(drift)")
            } else {
                #expect(Double(s.insertedFrames + s.underrunFrames) > 0.8 * Double(drift), "inserted \(s.insertedFrames) of \(drift)")
            }
            let limit = 240 + 256 + 3 * input.safetyFrames
            #expect(fill.dropFirst(100).allSatisfy { $0 <= limit }, "fill up to \(fill.max() ?? 0), limit \(limit)")
            // The resampled slices stay close to the signal (a ramp): no jump above 2 frames.
            let start = try #require(out.firstIndex { $0 != 0 })
            var jumps = 0
            for i in (start + 1)..<out.count where abs(out[i] - out[i - 1] - 1) > 1 { jumps += 1 }
            #expect(jumps <= 2, "\(jumps) jumps")
        }
    }

    @Test func stalledRenderingCountsOverrunsThenRecovers() throws {
        let (g, input) = try makeGraph()
        // The renderer stalls for 0.5 s (24000 frames > the 8192-frame ring): overrun.
        let (out, fill) = simulate(node: input, graph: g, seconds: 4, ppm: 0, stallAt: 1, stallSeconds: 0.5)
        let s = input.statistics
        print("input node, stalled renderer: \(s)")
        #expect(s.overrunFrames > 10000)
        // The backlog is skipped: the latency comes back down.
        #expect((fill.suffix(100).max() ?? .max) <= 240 + 256 + 2 * input.safetyFrames)
        #expect(out.suffix(1000).allSatisfy { $0 != 0 })
    }

    @Test func starvedInputCountsUnderruns() throws {
        let (g, input) = try makeGraph(channels: 1)
        // The input clock is half the output clock: the ring runs dry again and again.
        let (_, _) = simulate(node: input, graph: g, seconds: 2, ppm: -500_000)
        let s = input.statistics
        print("input node, starved: \(s)")
        #expect(s.underruns > 5)
        #expect(s.underrunFrames > 20000)
    }

    /// Input at its own rate: a 16 kHz capture (80-frame blocks, a 1 kHz or 4 kHz sine at 0.5) under a
    /// 48 kHz graph rendering 256-frame slices, on equal clocks and on clocks 200 ppm apart.
    /// The node converts to the graph rate (windowed sinc): the tone keeps its frequency and
    /// level, its image around 16 kHz stays below -60 dB, and the drift control keeps the
    /// ring's fill bounded.
    @Test func inputAtItsOwnRateIsConvertedToTheGraphRate() throws {
        for (ppm, tone) in [(0.0, 1000.0), (200.0, 1000.0), (-200.0, 1000.0), (0.0, 4000.0)] {
            let g = try AudioGraph(sampleRate: 48000, channels: 1, maxFramesPerSlice: 512)
            let input = AUInputNode(channels: 1, capacityFrames: 8192, inputSampleRate: 16000)
            try g.add(input)
            try g.connect(input, to: g.output)
            try g.commit()
            #expect(input.inputSampleRate == 16000 && input.maxInputFrames >= 171)
            let inRate = 16000 * (1 + ppm / 1e6), slice = 256, block = 80, seconds = 20.0
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: slice)
            defer { buffer.deallocate() }
            var pointers = [buffer]
            var out: [Float] = []
            var fills: [Int] = []
            var captured = 0, renders = 0
            var capture = [Float](repeating: 0, count: block)
            while Double(renders * slice) / 48000 < seconds {
                if Double(captured + block) / inRate <= Double(renders * slice) / 48000 {
                    for f in 0..<block { capture[f] = Float(0.5 * sin(2 * Double.pi * tone * Double(captured + f) / 16000)) }
                    capture.withUnsafeBufferPointer { input.write($0, frames: block) }
                    captured += block
                } else {
                    pointers.withUnsafeMutableBufferPointer { g.render(into: $0, frames: slice) }
                    out.append(contentsOf: UnsafeBufferPointer(start: buffer, count: slice))
                    fills.append(input.statistics.fillFrames)
                    renders += 1
                }
            }
            let s = input.statistics
            let start = try #require(out.firstIndex { $0 != 0 }) + 48000
            let steady = Array(out[start...])
            let freq = dominantFrequency(steady, sampleRate: 48000)
            // The level: the median of 0.05 s windows (a drift correction shifts the phase).
            let windows = stride(from: 0, to: steady.count - 2400, by: 2400).map { goertzelLevel(Array(steady[$0..<($0 + 2400)]), freq: tone, rate: 48000) }.sorted()
            let level = 20 * log10(windows[windows.count / 2] / 0.5)
            let fillMax = fills.dropFirst(400).max() ?? 0
            // The image of the tone around the input rate (16 kHz - tone), re the tone.
            let image = 20 * log10(max(goertzelLevel(Array(steady.prefix(48000)), freq: 16000 - tone, rate: 48000), 1e-12) / 0.5)
            print("input node, 16 kHz input under 48 kHz, \(ppm) ppm: \(s); tone \(String(format: "%.3f", freq)) Hz at \(String(format: "%+.2f", level)) dB, image \(String(format: "%.1f", image)) dB, fill max \(fillMax)")
            #expect(s.underruns <= 1 && s.overrunFrames == 0, "\(s)")
            #expect(abs(freq - tone) < 1, "tone at \(freq) Hz")
            #expect(abs(level) < 0.1, "tone at \(level) dB")
            #expect(image < -60, "image at \(16000 - tone) Hz: \(image) dB")
            // Every input frame is accounted for: rendered (a third of the output frames),
            // skipped or inserted by the drift control, or still in the ring.
            // (The slices before the node was primed were silence and consumed nothing; the
            // converter holds the kernel's span, 16 frames, plus a fraction.)
            let silentSlices = (start - 48000) / slice
            let consumed = Double(out.count - silentSlices * slice) / 3 + Double(s.skippedFrames - s.insertedFrames)
            #expect(abs(consumed + Double(s.fillFrames) - Double(captured)) < 24, "captured \(captured), consumed \(consumed), fill \(s.fillFrames)")
            // The fill stays bounded (input frames): a capture block, a slice's worth and the reserve.
            #expect(fillMax <= block + 86 + 2 * input.safetyFrames + 32, "fill up to \(fillMax)")
            if ppm != 0 {
                let drift = Int(seconds * 16000 * abs(ppm) / 1e6)   // 64 frames
                let corrected = ppm > 0 ? s.skippedFrames : s.insertedFrames
                #expect(corrected > drift / 2, "drift \(drift) frames, corrected \(corrected)")
            }
        }
    }

    @Test func startRefusesAMismatchedDeviceAndAnUnpreparedNode() throws {
        let node = AUInputNode(channels: 2)
        #expect(throws: AudioError.self) { try node.start(.alsa(device: "null")) }
        #expect(throws: AudioError.self) { try node.setOutputChannels(1, bus: 0) }
    }
}

/// The amplitude of `freq` over all of `x` (a single-bin DFT over whole periods).
private func goertzelLevel(_ x: [Float], freq: Double, rate: Double) -> Double {
    let n = Int((Double(x.count) * freq / rate).rounded(.down) * rate / freq)
    var re = 0.0, im = 0.0
    for i in 0..<min(n, x.count) {
        let w = 2 * Double.pi * freq * Double(i) / rate
        re += Double(x[i]) * cos(w)
        im += Double(x[i]) * sin(w)
    }
    return 2 * (re * re + im * im).squareRoot() / Double(max(1, n))
}
