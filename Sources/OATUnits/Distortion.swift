import OATCore
#if canImport(Glibc)
import Glibc
#endif

/// A multistage distortion (Apple's `kAudioUnitSubType_Distortion`, the unit behind
/// `AVAudioUnitDistortion`). Each sample goes through, in order:
///
/// 1. pre-gain (``preGain``, dB);
/// 2. a delay: y = (1 − m)·x + m·d, where d is the line `delay` ms back and the line is fed
///    x + feedback·d with feedback = min(0.9, decay / 55) (`delayMix` m in percent);
/// 3. decimation: sample-and-hold over 1 + round(decimation% × 15) samples (down to 1/16 of the
///    rate, aliasing as a decimator does), then rounding: quantisation to
///    2^(16 − rounding% × 14) levels (16 bits down to 2), mixed by `decimationMix`;
/// 4. a polynomial waveshaper: linear·y + squared·y² + cubic·y³ (the squared term adds even
///    harmonics and a DC offset, the cubic odd harmonics), mixed by `polynomialMix`;
/// 5. a ring modulator: y times a blend (`ringModBalance`) of two sines at `ringModFreq1` and
///    `ringModFreq2` Hz, mixed by `ringModMix`;
/// 6. a soft clipper: c·tanh(y / c) with ceiling c = `softClipGain` (dB): transparent for
///    small signals, never above c;
/// 7. the final mix with the dry input (``finalMix``, percent wet; 0 passes the input through
///    bit for bit).
///
/// Parameters (global scope, in Apple's `kDistortionParam_*` order): delay 0 (ms, 0.1 ... 500),
/// decay 1 (0.1 ... 50), delay mix 2, decimation 3, rounding 4, decimation mix 5 (percent),
/// linear term 6 (0 ... 1), squared term 7, cubic term 8 (0 ... 20), polynomial mix 9,
/// ring-mod frequency 1 10 and 2 11 (Hz, 0.5 ... 8000), ring-mod balance 12, ring-mod mix 13,
/// soft-clip gain 14 (dB, −80 ... 20), final mix 15, and pre-gain 16 (dB, −80 ... 20).
/// Thread safety: parameters from any thread; ``render(_:)`` is real-time safe (state is
/// allocated in ``prepare(sampleRate:maxFrames:)``).
public final class AUDistortionNode: RenderNode, @unchecked Sendable {
    private var line: UnsafeMutablePointer<Float>
    private var lineFrames = 1
    private var write = 0
    private var held: UnsafeMutablePointer<Float>
    private var holdCount = 0
    private var phase1 = 0.0
    private var phase2 = 0.0

    /// Creates a distortion of `channels` channels (Apple's defaults).
    public init(channels: Int = 2, name: String = "distortion") {
        line = .allocate(capacity: 1)
        held = .allocate(capacity: max(1, channels))
        held.initialize(repeating: 0, count: max(1, channels))
        super.init(name: name, inputChannels: [channels], outputChannels: [channels], parameters: [
            NodeParameter(id: 0, name: "delay", unit: .milliseconds, range: 0.1...500, defaultValue: 0.1),
            NodeParameter(id: 1, name: "decay", unit: .generic, range: 0.1...50, defaultValue: 1),
            NodeParameter(id: 2, name: "delay mix", unit: .percent, range: 0...100, defaultValue: 50),
            NodeParameter(id: 3, name: "decimation", unit: .percent, range: 0...100, defaultValue: 50),
            NodeParameter(id: 4, name: "rounding", unit: .percent, range: 0...100, defaultValue: 0),
            NodeParameter(id: 5, name: "decimation mix", unit: .percent, range: 0...100, defaultValue: 50),
            NodeParameter(id: 6, name: "linear term", unit: .generic, range: 0...1, defaultValue: 1),
            NodeParameter(id: 7, name: "squared term", unit: .generic, range: 0...20, defaultValue: 0),
            NodeParameter(id: 8, name: "cubic term", unit: .generic, range: 0...20, defaultValue: 0),
            NodeParameter(id: 9, name: "polynomial mix", unit: .percent, range: 0...100, defaultValue: 50),
            NodeParameter(id: 10, name: "ring mod freq 1", unit: .hertz, range: 0.5...8000, defaultValue: 100),
            NodeParameter(id: 11, name: "ring mod freq 2", unit: .hertz, range: 0.5...8000, defaultValue: 100),
            NodeParameter(id: 12, name: "ring mod balance", unit: .percent, range: 0...100, defaultValue: 50),
            NodeParameter(id: 13, name: "ring mod mix", unit: .percent, range: 0...100, defaultValue: 0),
            NodeParameter(id: 14, name: "soft clip gain", unit: .decibels, range: -80...20, defaultValue: -6),
            NodeParameter(id: 15, name: "final mix", unit: .percent, range: 0...100, defaultValue: 50),
            NodeParameter(id: 16, name: "pre gain", unit: .decibels, range: -80...20, defaultValue: -6),
        ])
    }

    deinit {
        line.deallocate()
        held.deallocate()
    }

    /// Parameter `i` (the order above).
    public func parameter(_ i: Int) -> NodeParameter { parameters[i] }
    /// Delay in milliseconds.
    public var delay: NodeParameter { parameters[0] }
    /// Echo decay (feedback = min(0.9, decay / 55)).
    public var decay: NodeParameter { parameters[1] }
    /// Delay mix, percent.
    public var delayMix: NodeParameter { parameters[2] }
    /// Decimation, percent.
    public var decimation: NodeParameter { parameters[3] }
    /// Rounding (bit reduction), percent.
    public var rounding: NodeParameter { parameters[4] }
    /// Decimation mix, percent.
    public var decimationMix: NodeParameter { parameters[5] }
    /// Linear term.
    public var linearTerm: NodeParameter { parameters[6] }
    /// Squared term.
    public var squaredTerm: NodeParameter { parameters[7] }
    /// Cubic term.
    public var cubicTerm: NodeParameter { parameters[8] }
    /// Polynomial mix, percent.
    public var polynomialMix: NodeParameter { parameters[9] }
    /// First ring-modulator frequency, Hz.
    public var ringModFreq1: NodeParameter { parameters[10] }
    /// Second ring-modulator frequency, Hz.
    public var ringModFreq2: NodeParameter { parameters[11] }
    /// Ring-modulator balance between the two frequencies, percent (0: all freq 1).
    public var ringModBalance: NodeParameter { parameters[12] }
    /// Ring-modulator mix, percent.
    public var ringModMix: NodeParameter { parameters[13] }
    /// Soft-clip ceiling, dB.
    public var softClipGain: NodeParameter { parameters[14] }
    /// Final wet/dry mix, percent wet.
    public var finalMix: NodeParameter { parameters[15] }
    /// Gain before the stages, dB.
    public var preGain: NodeParameter { parameters[16] }

    /// Allocates the delay line (500 ms).
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        line.deallocate()
        lineFrames = max(2, Int(sampleRate * 0.5) + 2)
        let channels = inputChannels[0]
        line = .allocate(capacity: lineFrames * channels)
        line.initialize(repeating: 0, count: lineFrames * channels)
        write = 0
        holdCount = 0
        held.update(repeating: 0, count: channels)
        phase1 = 0
        phase2 = 0
    }

    @inline(__always) private static func gain(dB: Float) -> Float { Float(pow(10, Double(dB) / 20)) }

    /// Distorts.
    public override func render(_ context: AURenderContext) {
        let input = context.input(0), out = context.output(0)
        let channels = min(input.channelCount, out.channelCount)
        let frames = context.frames
        let wet = min(1, max(0, finalMix.value / 100))
        if wet == 0 {
            // All dry: the input as it is (the state does not advance; nothing is heard from it).
            out.copy(from: input)
            return
        }
        let pre = Self.gain(dB: preGain.value)
        let delayFrames = min(lineFrames - 1, max(1, Int((Double(delay.value) / 1000 * sampleRate).rounded())))
        let feedback = min(0.9, decay.value / 55)
        let dMix = min(1, max(0, delayMix.value / 100))
        let hold = 1 + Int((min(1, max(0, decimation.value / 100)) * 15).rounded())
        let levels = Float(exp2(Double(16 - min(1, max(0, rounding.value / 100)) * 14)))
        let decMix = min(1, max(0, decimationMix.value / 100))
        let lin = linearTerm.value, sq = squaredTerm.value, cu = cubicTerm.value
        let polyMix = min(1, max(0, polynomialMix.value / 100))
        let step1 = 2 * Double.pi * Double(ringModFreq1.value) / sampleRate
        let step2 = 2 * Double.pi * Double(ringModFreq2.value) / sampleRate
        let balance = min(1, max(0, ringModBalance.value / 100))
        let ringMix = min(1, max(0, ringModMix.value / 100))
        let ceiling = max(1e-6, Self.gain(dB: softClipGain.value))
        let cap = lineFrames
        var w = write, count = holdCount, p1 = phase1, p2 = phase2
        for f in 0..<frames {
            let carrier = Float((1 - Double(balance)) * sin(p1) + Double(balance) * sin(p2))
            let sampleHeld = count == 0
            for c in 0..<channels {
                let dry = input[c][f]
                var y = dry * pre
                // 2. delay
                let l = line + c * cap
                var r = w - delayFrames
                if r < 0 { r += cap }
                let d = l[r]
                l[w] = y + feedback * d
                y = (1 - dMix) * y + dMix * d
                // 3. decimation and rounding
                if sampleHeld { held[c] = (y * levels).rounded() / levels }
                y = (1 - decMix) * y + decMix * held[c]
                // 4. polynomial
                let shaped = lin * y + sq * y * y + cu * y * y * y
                y = (1 - polyMix) * y + polyMix * shaped
                // 5. ring modulation
                y = (1 - ringMix) * y + ringMix * y * carrier
                // 6. soft clip
                y = ceiling * tanhf(y / ceiling)
                // 7. final mix
                out[c][f] = (1 - wet) * dry + wet * y
            }
            w += 1
            if w == cap { w = 0 }
            count += 1
            if count >= hold { count = 0 }
            p1 += step1
            if p1 > 2 * Double.pi { p1 -= 2 * Double.pi }
            p2 += step2
            if p2 > 2 * Double.pi { p2 -= 2 * Double.pi }
        }
        for c in channels..<out.channelCount { out[c].update(from: out[0], count: frames) }
        write = w
        holdCount = count
        phase1 = p1
        phase2 = p2
    }
}
