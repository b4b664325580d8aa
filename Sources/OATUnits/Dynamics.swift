import OATCore
#if canImport(Glibc)
import Glibc
#endif

/// A feed-forward compressor with an RMS detector and a soft knee (Apple's
/// `kAudioUnitSubType_DynamicsProcessor`, with explicit ratio and knee).
///
/// The detector averages the square of the loudest channel (stereo-linked) over 5 ms; its
/// level L is in dB RMS (a full-scale sine reads −3.01 dB). The gain the static curve asks
/// for is approached with the attack time constant when it falls and the release one when it
/// rises. The static curve, with threshold T, ratio R and knee
/// width W (dB): below T − W/2 no change; above T + W/2 the gain is (1/R − 1)(L − T); in the
/// knee (1/R − 1)(L − T + W/2)² / (2W). The makeup gain is added after.
///
/// Parameters (global scope): threshold 0 (dB, −60 ... 0, default −20), attack 4 (seconds,
/// 0.0001 ... 0.2, default 0.01), release 5 (seconds, 0.01 ... 3, default 0.1), makeup 6 (dB,
/// −40 ... 40, default 0), ratio 100 (1 ... 50, default 4), knee 101 (dB, 0 ... 24, default 6).
/// IDs 0, 4, 5 and 6 are Apple's `kDynamicsProcessorParam_Threshold`, `_AttackTime`,
/// `_ReleaseTime` and `_OverallGain`.
public final class AUDynamicsNode: RenderNode, @unchecked Sendable {
    private var meanSquare = 0.0
    private var gainDB = 0.0
    private let reduction = AtomicFloat()

    /// Creates a compressor of `channels` channels.
    public init(channels: Int = 2, threshold: Float = -20, ratio: Float = 4, knee: Float = 6, attack: Float = 0.01,
                release: Float = 0.1, makeup: Float = 0, name: String = "compressor") {
        super.init(name: name, inputChannels: [channels], outputChannels: [channels], parameters: [
            NodeParameter(id: 0, name: "threshold", unit: .decibels, range: -60...0, defaultValue: threshold),
            NodeParameter(id: 4, name: "attack", unit: .seconds, range: 0.0001...0.2, defaultValue: attack),
            NodeParameter(id: 5, name: "release", unit: .seconds, range: 0.01...3, defaultValue: release),
            NodeParameter(id: 6, name: "makeup", unit: .decibels, range: -40...40, defaultValue: makeup),
            NodeParameter(id: 100, name: "ratio", unit: .ratio, range: 1...50, defaultValue: ratio),
            NodeParameter(id: 101, name: "knee", unit: .decibels, range: 0...24, defaultValue: knee),
        ])
    }

    /// Threshold (dB).
    public var threshold: NodeParameter { parameters[0] }
    /// Attack time (s).
    public var attack: NodeParameter { parameters[1] }
    /// Release time (s).
    public var release: NodeParameter { parameters[2] }
    /// Makeup gain (dB).
    public var makeup: NodeParameter { parameters[3] }
    /// Ratio.
    public var ratio: NodeParameter { parameters[4] }
    /// Knee width (dB).
    public var knee: NodeParameter { parameters[5] }
    /// The gain reduction at the end of the last slice in dB (≤ 0), readable from any thread.
    public var gainReduction: Float { reduction.value }

    /// The static curve: the gain in dB (without makeup) applied at detector level `level` dB.
    public static func staticGain(level: Double, threshold: Double, ratio: Double, knee: Double) -> Double {
        let over = level - threshold
        let slope = 1 / ratio - 1
        if knee > 0 && abs(over) <= knee / 2 { return slope * (over + knee / 2) * (over + knee / 2) / (2 * knee) }
        return over > 0 ? slope * over : 0
    }

    /// Compresses.
    public override func render(_ context: AURenderContext) {
        let input = context.input(0), out = context.output(0)
        let channels = out.channelCount
        let rate = sampleRate
        let k = 1 - exp(-1 / (0.005 * rate))
        let a = 1 - exp(-1 / (Double(attack.value) * rate)), r = 1 - exp(-1 / (Double(release.value) * rate))
        let t = Double(threshold.value), ratio = Double(self.ratio.value), knee = Double(self.knee.value)
        let mk = Double(makeup.value)
        var ms = meanSquare
        var g = gainDB
        for f in 0..<context.frames {
            var peak = 0.0
            for c in 0..<channels { let x = Double(input[c][f]); peak = max(peak, x * x) }
            ms += k * (peak - ms)
            let level = 10 * log10(ms + 1e-20)
            let target = AUDynamicsNode.staticGain(level: level, threshold: t, ratio: ratio, knee: knee)
            g += (target < g ? a : r) * (target - g)
            let lin = Float(pow(10, (g + mk) / 20))
            for c in 0..<channels { out[c][f] = input[c][f] * lin }
        }
        meanSquare = ms < 1e-30 ? 0 : ms
        gainDB = g
        reduction.value = Float(g)
    }
}

/// A look-ahead peak limiter (Apple's `kAudioUnitSubType_PeakLimiter`): the output never
/// exceeds the ceiling.
///
/// The input is delayed by the look-ahead; a peak-hold envelope of the undelayed input (held
/// for the look-ahead, then released) sets the target gain ceiling/envelope, which the gain
/// approaches with the attack time constant (a fifth of the look-ahead, so it has settled when
/// the peak leaves the delay) and recovers from with the release time. A final safety stage
/// clamps any sample the smoothed gain missed, so the ceiling holds for every sample.
///
/// Parameters (global scope): attack 0 (seconds, 0.001 ... 0.03 — Apple's `kLimiterParam_AttackTime`;
/// here it is the look-ahead, default 0.005), release 1 (seconds, 0.001 ... 0.5, Apple's
/// `kLimiterParam_DecayTime`, default 0.05), pre-gain 2 (dB, −40 ... 40, `kLimiterParam_PreGain`),
/// ceiling 100 (dBFS, −30 ... 0, default −1). The look-ahead is fixed when the node is prepared.
public final class AUPeakLimiterNode: RenderNode, @unchecked Sendable {
    private var delay: UnsafeMutablePointer<Float>
    private var delayLength = 1
    private var writeIndex = 0
    private var envelope: Float = 0
    private var hold = 0
    private var gain: Float = 1

    /// Creates a limiter of `channels` channels.
    public init(channels: Int = 2, ceiling: Float = -1, lookahead: Float = 0.005, release: Float = 0.05, preGain: Float = 0, name: String = "limiter") {
        delay = .allocate(capacity: 1)
        super.init(name: name, inputChannels: [channels], outputChannels: [channels], parameters: [
            NodeParameter(id: 0, name: "lookahead", unit: .seconds, range: 0.001...0.03, defaultValue: lookahead),
            NodeParameter(id: 1, name: "release", unit: .seconds, range: 0.001...0.5, defaultValue: release),
            NodeParameter(id: 2, name: "pre-gain", unit: .decibels, range: -40...40, defaultValue: preGain),
            NodeParameter(id: 100, name: "ceiling", unit: .decibels, range: -30...0, defaultValue: ceiling),
        ])
    }

    deinit { delay.deallocate() }

    /// Look-ahead (s), fixed at prepare.
    public var lookahead: NodeParameter { parameters[0] }
    /// Release (s).
    public var release: NodeParameter { parameters[1] }
    /// Pre-gain (dB).
    public var preGain: NodeParameter { parameters[2] }
    /// Ceiling (dBFS).
    public var ceiling: NodeParameter { parameters[3] }

    /// The look-ahead: what the delay line holds when the input ends.
    public override var tailSeconds: Double { Double(delayLength) / sampleRate }

    /// Allocates the look-ahead delay.
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        delay.deallocate()
        delayLength = max(1, Int(Double(lookahead.value) * sampleRate))
        delay = .allocate(capacity: delayLength * inputChannels[0])
        delay.initialize(repeating: 0, count: delayLength * inputChannels[0])
        writeIndex = 0
    }

    /// Limits.
    public override func render(_ context: AURenderContext) {
        let input = context.input(0), out = context.output(0)
        let channels = out.channelCount
        let ceil = Float(pow(10, Double(ceiling.value) / 20))
        let pre = Float(pow(10, Double(preGain.value) / 20))
        let attackCoef = Float(1 - exp(-5 / Double(delayLength)))
        let releaseCoef = Float(1 - exp(-1 / (Double(release.value) * sampleRate)))
        let envRelease = Float(exp(-1 / (Double(release.value) * sampleRate)))
        var env = envelope, h = hold, g = gain, w = writeIndex
        let L = delayLength
        for f in 0..<context.frames {
            var peak: Float = 0
            for c in 0..<channels { peak = max(peak, abs(input[c][f] * pre)) }
            if peak >= env { env = peak; h = L } else if h > 0 { h -= 1 } else { env *= envRelease }
            let target = env > ceil ? ceil / env : 1
            g += (target < g ? attackCoef : releaseCoef) * (target - g)
            for c in 0..<channels {
                let slot = delay + w * channels + c
                var y = slot.pointee * g
                if y > ceil { y = ceil } else if y < -ceil { y = -ceil }
                slot.pointee = input[c][f] * pre
                out[c][f] = y
            }
            w += 1
            if w == L { w = 0 }
        }
        envelope = env; hold = h; gain = g; writeIndex = w
    }
}

/// A `Float` several threads may read and write (an atomic word).
public final class AtomicFloat: Sendable {
    private let counter = AtomicCounter32()
    /// Creates 0.
    public init() {}
    /// The value.
    public var value: Float {
        get { Float(bitPattern: counter.load()) }
        set { counter.store(newValue.bitPattern) }
    }
}
