import OATCore
import OATProcessing
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A small deterministic generator (xorshift) for noise.
struct Noise {
    var state: UInt64
    init(seed: UInt64) { state = seed | 1 }
    mutating func next() -> Float {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return Float(Double(state >> 11) / Double(1 << 53) * 2 - 1)
    }
}

/// Far-end "speech": noise shaped by a one-pole low-pass, gated on and off like syllables
/// (200-400 ms bursts with short pauses).
func speechLike(seconds: Double, rate: Int, seed: UInt64) -> [Float] {
    var noise = Noise(seed: seed)
    let n = Int(seconds * Double(rate))
    var out = [Float](repeating: 0, count: n)
    var lp: Float = 0
    for i in 0..<n {
        lp = 0.7 * lp + 0.3 * noise.next()
        let t = Double(i) / Double(rate)
        let syllable = 0.5 + 0.5 * sin(2 * Double.pi * 3.1 * t) * sin(2 * Double.pi * 0.7 * t + 1)
        out[i] = lp * Float(max(0.05, syllable)) * 0.6
    }
    return out
}

/// A room impulse response: a direct path after `delay` samples and an exponentially decaying
/// noise tail (RT60 about `rt60` seconds), total `length` samples.
func roomResponse(length: Int, delay: Int, rate: Int, rt60: Double) -> [Float] {
    var noise = Noise(seed: 99)
    var h = [Float](repeating: 0, count: length)
    h[delay] = 0.6
    for i in (delay + 1)..<length {
        let t = Double(i - delay) / Double(rate)
        h[i] = noise.next() * 0.25 * Float(pow(10, -3 * t / rt60))
    }
    return h
}

func convolve(_ x: [Float], _ h: [Float]) -> [Float] {
    var y = [Float](repeating: 0, count: x.count)
    x.withUnsafeBufferPointer { xp in
        h.withUnsafeBufferPointer { hp in
            y.withUnsafeMutableBufferPointer { yp in
                // Scatter each tap: y[i + k] += h[k] * x[i] (tight pointer loops stay fast in debug builds).
                for k in 0..<hp.count where hp[k] != 0 {
                    let g = hp[k]
                    let n = xp.count - k
                    if n <= 0 { continue }
                    let src = xp.baseAddress!
                    let dst = yp.baseAddress! + k
                    for i in 0..<n { dst[i] += g * src[i] }
                }
            }
        }
    }
    return y
}

func power(_ x: ArraySlice<Float>) -> Double {
    x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, x.count))
}

func run(_ vp: VoiceProcessor, mic: [Float], reference: [Float]) -> [Float] {
    var out = [Float](repeating: 0, count: mic.count)
    mic.withUnsafeBufferPointer { m in
        reference.withUnsafeBufferPointer { r in
            out.withUnsafeMutableBufferPointer { o in
                var at = 0
                while at < mic.count {
                    let n = min(256, mic.count - at)
                    vp.process(microphone: m.baseAddress! + at, reference: r.baseAddress! + at, output: o.baseAddress! + at, frames: n)
                    at += n
                }
            }
        }
    }
    // Undo the processor's one-frame latency.
    return Array(out[vp.latencyFrames...]) + [Float](repeating: 0, count: vp.latencyFrames)
}

@Suite struct VoiceProcessingTests {
    @Test func echoCancellerReachesTwentyDecibelsERLE() throws {
        let rate = 16000
        let far = speechLike(seconds: 12, rate: rate, seed: 7)
        let h = roomResponse(length: 1200, delay: 80, rate: rate, rt60: 0.05)
        let echo = convolve(far, h)
        var floor = Noise(seed: 3)
        let mic = echo.map { $0 + floor.next() * 1e-4 }
        var figures: [String] = []
        var best = -Double.infinity
        for (label, residual) in [("AEC only", false), ("AEC + residual echo suppression", true)] {
            var s = VoiceProcessingSettings()
            s.sampleRate = rate
            s.frameSeconds = 0.01
            s.echoTailSeconds = 0.128
            s.noiseSuppression = false
            s.residualEchoSuppression = residual
            let vp = try VoiceProcessor(settings: s)
            let out = run(vp, mic: mic, reference: far)
            // After convergence: the last 4 seconds.
            let from = mic.count - 4 * rate
            let erle = 10 * log10(power(mic[from...]) / max(1e-20, power(out[from...])))
            let early = 10 * log10(power(mic[0..<rate / 2]) / max(1e-20, power(out[0..<rate / 2])))
            figures.append("\(label): ERLE \(erle) dB after convergence (first 0.5 s: \(early) dB)")
            best = max(best, erle)
            if !residual { #expect(erle >= 20, "linear echo canceller alone: ERLE \(erle) dB") }
        }
        print("voice processing: " + figures.joined(separator: "; "))
        #expect(best >= 20)
    }

    @Test func noiseSuppressorLowersStationaryNoise() throws {
        let rate = 16000
        var noise = Noise(seed: 11)
        let mic = (0..<(6 * rate)).map { _ in noise.next() * 0.03 }
        var s = VoiceProcessingSettings()
        s.sampleRate = rate
        s.echoTailSeconds = 0
        s.noiseSuppressionDB = -30
        let vp = try VoiceProcessor(settings: s)
        let out = run(vp, mic: mic, reference: [Float](repeating: 0, count: mic.count))
        let from = 2 * rate
        let reduction = 10 * log10(power(mic[from...]) / max(1e-20, power(out[from...])))
        print("voice processing: noise suppressor lowers stationary white noise at -36 dBFS RMS by \(reduction) dB")
        #expect(reduction >= 10, "noise reduced by only \(reduction) dB")
    }

    @Test func bypassPassesTheMicrophoneLate() throws {
        var s = VoiceProcessingSettings()
        s.sampleRate = 16000
        let vp = try VoiceProcessor(settings: s)
        vp.bypass = true
        let mic = speechLike(seconds: 1, rate: 16000, seed: 5)
        let out = run(vp, mic: mic, reference: [Float](repeating: 0, count: mic.count))
        let n = mic.count - vp.latencyFrames
        var maxError: Float = 0
        for i in 0..<n { maxError = max(maxError, abs(out[i] - mic[i])) }
        #expect(maxError == 0)
    }

    @Test func rejectsBadSettings() {
        var s = VoiceProcessingSettings()
        s.sampleRate = 1000
        #expect(throws: AudioError.self) { try VoiceProcessor(settings: s) }
        s = VoiceProcessingSettings()
        s.echoTailSeconds = 5
        #expect(throws: AudioError.self) { try VoiceProcessor(settings: s) }
    }
}
