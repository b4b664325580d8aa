import OATCore
#if canImport(Glibc)
import Glibc
#endif

/// A Schroeder/Moorer reverb (Apple's `kAudioUnitSubType_Reverb2` in role): per channel,
/// eight parallel feedback comb filters with a one-pole low pass in each loop, then four
/// series all-pass diffusers; the right channel's delays are 23 samples longer for width.
///
/// Each comb's loop gain is set from the decay time: g = 10^(−3·d / (RT60·rate)) for a comb of
/// d samples, so every comb decays by 60 dB in RT60 seconds at 0 Hz. The loop low pass makes
/// the decay at the Nyquist frequency the "decay at Nyquist" time (damping).
///
/// Parameters (Apple's `kReverb2Param_*` IDs, global scope): dry/wet mix 0 (percent wet,
/// 0 ... 100, default 30), gain 1 (dB, −20 ... 20, default 0), decay time at 0 Hz 4 (seconds,
/// 0.1 ... 20, default 1.5), decay time at Nyquist 5 (seconds, 0.01 ... 20, default 0.6).
/// The decay times apply at the next slice (the loop gains are recomputed per slice).
public final class AUReverbNode: RenderNode, @unchecked Sendable {
    static let combTunings = [1116, 1188, 1277, 1356, 1422, 1491, 1557, 1617]
    static let allpassTunings = [556, 441, 341, 225]
    private var lines: UnsafeMutablePointer<Float>
    private var lengths: [Int] = []     // per channel: 8 combs then 4 all-passes
    private var offsets: [Int] = []
    private var positions: UnsafeMutablePointer<Int>
    private var filters: UnsafeMutablePointer<Float>
    private var mix = AUSmoothedValue(0.3)

    /// Creates a reverb of `channels` channels.
    public init(channels: Int = 2, decayTime: Float = 1.5, decayAtNyquist: Float = 0.6, wetDryMix: Float = 30, name: String = "reverb") {
        lines = .allocate(capacity: 1)
        positions = .allocate(capacity: 1)
        filters = .allocate(capacity: 1)
        super.init(name: name, inputChannels: [channels], outputChannels: [channels], parameters: [
            NodeParameter(id: 0, name: "dry/wet mix", unit: .percent, range: 0...100, defaultValue: wetDryMix),
            NodeParameter(id: 1, name: "gain", unit: .decibels, range: -20...20, defaultValue: 0),
            NodeParameter(id: 4, name: "decay time at 0 Hz", unit: .seconds, range: 0.1...20, defaultValue: decayTime),
            NodeParameter(id: 5, name: "decay time at Nyquist", unit: .seconds, range: 0.01...20, defaultValue: decayAtNyquist),
        ])
    }

    deinit {
        lines.deallocate(); positions.deallocate(); filters.deallocate()
    }

    /// Percent wet.
    public var wetDryMix: NodeParameter { parameters[0] }
    /// Output gain (dB).
    public var gain: NodeParameter { parameters[1] }
    /// RT60 at low frequencies (s).
    public var decayTime: NodeParameter { parameters[2] }
    /// RT60 at the Nyquist frequency (s).
    public var decayAtNyquist: NodeParameter { parameters[3] }

    /// The time the tail takes to fall 90 dB: 1.5 times the longer decay time (the decay times
    /// are RT60s), plus the longest comb line.
    public override var tailSeconds: Double {
        1.5 * Double(max(decayTime.value, decayAtNyquist.value)) + 0.05
    }

    /// Decay times for named rooms (`small`, `medium`, `large`, `hall`, `cathedral`, `plate`).
    public static let rooms: [String: (decay: Float, nyquist: Float, wet: Float)] = [
        "small": (0.5, 0.2, 20), "medium": (1.2, 0.5, 25), "large": (2.2, 0.8, 30),
        "hall": (3.2, 1.2, 30), "cathedral": (6, 2, 35), "plate": (1.8, 1.6, 30),
    ]

    /// Allocates the delay lines (scaled from 44.1 kHz tunings to the graph rate).
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        lines.deallocate(); positions.deallocate(); filters.deallocate()
        let scale = sampleRate / 44100
        lengths = []
        offsets = []
        var total = 0
        for c in 0..<inputChannels[0] {
            for t in AUReverbNode.combTunings + AUReverbNode.allpassTunings {
                let n = max(1, Int((Double(t + (c % 2) * 23) * scale).rounded()))
                lengths.append(n)
                offsets.append(total)
                total += n
            }
        }
        lines = .allocate(capacity: max(1, total))
        lines.initialize(repeating: 0, count: max(1, total))
        positions = .allocate(capacity: max(1, lengths.count))
        positions.initialize(repeating: 0, count: max(1, lengths.count))
        filters = .allocate(capacity: max(1, lengths.count))
        filters.initialize(repeating: 0, count: max(1, lengths.count))
        mix = AUSmoothedValue(wetDryMix.value / 100, rampFrames: max(1, Int(sampleRate * 0.02)))
    }

    /// Reverberates.
    public override func render(_ context: AURenderContext) {
        let input = context.input(0), out = context.output(0)
        let rate = sampleRate
        let rt0 = Double(decayTime.value), rtN = min(Double(decayAtNyquist.value), rt0)
        let outGain = Float(pow(10, Double(gain.value) / 20))
        mix.setTarget(wetDryMix.value / 100)
        let startMix = mix
        var m = startMix
        let perChannel = 12
        let inputScale: Float = 0.05
        for c in 0..<out.channelCount {
            m = startMix
            let base = c * perChannel
            // Loop gains and damping per comb for this slice.
            var g = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
            var d = g
            withUnsafeMutableBytes(of: &g) { gp in
                withUnsafeMutableBytes(of: &d) { dp in
                    let gg = gp.bindMemory(to: Double.self), dd = dp.bindMemory(to: Double.self)
                    for k in 0..<8 {
                        let len = Double(lengths[base + k])
                        gg[k] = pow(10, -3 * len / (rt0 * rate))
                        let gn = pow(10, -3 * len / (rtN * rate))
                        let ratio = gn / gg[k]
                        dd[k] = (1 - ratio) / (1 + ratio)
                    }
                }
            }
            let src = input[c], dst = out[c]
            withUnsafeBytes(of: g) { gp in
                withUnsafeBytes(of: d) { dp in
                    let gg = gp.bindMemory(to: Double.self), dd = dp.bindMemory(to: Double.self)
                    for f in 0..<context.frames {
                        let x = src[f] * inputScale
                        var acc: Float = 0
                        for k in 0..<8 {
                            let i = base + k
                            let line = lines + offsets[i]
                            let p = positions[i]
                            let y = line[p]
                            let damp = Float(dd[k])
                            let filtered = y * (1 - damp) + filters[i] * damp
                            filters[i] = abs(filtered) < 1e-25 ? 0 : filtered
                            line[p] = x + filtered * Float(gg[k])
                            positions[i] = p + 1 == lengths[i] ? 0 : p + 1
                            acc += y
                        }
                        for k in 8..<12 {
                            let i = base + k
                            let line = lines + offsets[i]
                            let p = positions[i]
                            let b = line[p]
                            let y = b - acc
                            line[p] = acc + b * 0.5
                            positions[i] = p + 1 == lengths[i] ? 0 : p + 1
                            acc = y
                        }
                        let w = m.next()
                        dst[f] = (src[f] * (1 - w) + acc * w) * outGain
                    }
                }
            }
        }
        mix = m
    }
}

/// A feedback delay (Apple's `kAudioUnitSubType_Delay`): the wet signal is the input delayed
/// by the delay time; the loop feeds back through a one-pole low pass.
///
/// Output = (1 − mix)·input + mix·delayed; the delay line takes input + feedback·lowpass(delayed).
/// The first echo is the input exactly (gain `mix`) at the delay time; the n-th has the
/// feedback and the low pass applied n − 1 times. Delay-time changes glide over 50 ms (read
/// with linear interpolation, which bends the pitch briefly instead of clicking).
///
/// Parameters (Apple's `kDelayParam_*` IDs, global scope): wet/dry mix 0 (percent wet, 0 ... 100,
/// default 50), delay time 1 (seconds, 0 ... 2, default 1), feedback 2 (percent, −100 ... 100,
/// default 50), low-pass cutoff 3 (Hz, 10 ... 24000, default 15000).
public final class AUDelayNode: RenderNode, @unchecked Sendable {
    private var line: UnsafeMutablePointer<Float>
    private var capacity = 1
    private var write = 0
    private var lowpass: UnsafeMutablePointer<Float>
    private var time = AUSmoothedValue(1)
    private var mix = AUSmoothedValue(0.5)

    /// Creates a delay of `channels` channels.
    public init(channels: Int = 2, delayTime: Float = 1, feedback: Float = 50, lowPassCutoff: Float = 15000, wetDryMix: Float = 50, name: String = "delay") {
        line = .allocate(capacity: 1)
        lowpass = .allocate(capacity: 1)
        super.init(name: name, inputChannels: [channels], outputChannels: [channels], parameters: [
            NodeParameter(id: 0, name: "wet/dry mix", unit: .percent, range: 0...100, defaultValue: wetDryMix),
            NodeParameter(id: 1, name: "delay time", unit: .seconds, range: 0...2, defaultValue: delayTime),
            NodeParameter(id: 2, name: "feedback", unit: .percent, range: -100...100, defaultValue: feedback),
            NodeParameter(id: 3, name: "low-pass cutoff", unit: .hertz, range: 10...24000, defaultValue: lowPassCutoff),
        ])
    }

    deinit { line.deallocate(); lowpass.deallocate() }

    /// Percent wet.
    public var wetDryMix: NodeParameter { parameters[0] }
    /// Delay time (s).
    public var delayTime: NodeParameter { parameters[1] }
    /// Feedback (percent).
    public var feedback: NodeParameter { parameters[2] }
    /// Low-pass cutoff in the loop (Hz).
    public var lowPassCutoff: NodeParameter { parameters[3] }

    /// The time the echoes take to fall 90 dB: the delay time for each 1/feedback step down
    /// (one echo without feedback), at most 60 s.
    public override var tailSeconds: Double {
        let f = min(1, abs(Double(feedback.value)) / 100)
        let echoes = f <= 0 ? 1 : f >= 0.999 ? .infinity : 1 + (-90 / 20 * log(10)) / log(f)
        return min(60, Double(delayTime.value) * echoes + 0.01)
    }

    /// Allocates 2 s of delay line per channel.
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        line.deallocate(); lowpass.deallocate()
        capacity = Int(sampleRate * 2) + 4
        line = .allocate(capacity: capacity * inputChannels[0])
        line.initialize(repeating: 0, count: capacity * inputChannels[0])
        lowpass = .allocate(capacity: inputChannels[0])
        lowpass.initialize(repeating: 0, count: inputChannels[0])
        write = 0
        time = AUSmoothedValue(delayTime.value * Float(sampleRate), rampFrames: max(1, Int(sampleRate * 0.05)))
        mix = AUSmoothedValue(wetDryMix.value / 100, rampFrames: max(1, Int(sampleRate * 0.02)))
    }

    /// Delays.
    public override func render(_ context: AURenderContext) {
        let input = context.input(0), out = context.output(0)
        let channels = out.channelCount
        let fb = feedback.value / 100
        let cutoff = min(Double(lowPassCutoff.value), 0.49 * sampleRate)
        let a = Float(exp(-2 * Double.pi * cutoff / sampleRate))
        time.setTarget(min(delayTime.value * Float(sampleRate), Float(capacity - 3)))
        mix.setTarget(wetDryMix.value / 100)
        let cap = capacity
        for f in 0..<context.frames {
            let d = max(0, time.next())
            let w = mix.next()
            let di = Int(d), frac = d - Float(di)
            var r0 = write - di
            if r0 < 0 { r0 += cap }
            var r1 = r0 - 1
            if r1 < 0 { r1 += cap }
            for c in 0..<channels {
                let buf = line + c * cap
                let x = input[c][f]
                // d == 0: the echo is the input itself.
                let delayed = di == 0 && frac == 0 ? x : buf[r0] * (1 - frac) + buf[r1] * frac
                var lp = lowpass[c]
                lp = (1 - a) * delayed + a * lp
                if abs(lp) < 1e-25 { lp = 0 }
                lowpass[c] = lp
                buf[write] = x + fb * lp
                out[c][f] = x * (1 - w) + delayed * w
            }
            write += 1
            if write == cap { write = 0 }
        }
    }
}

/// Varispeed (Apple's `kAudioUnitSubType_Varispeed`): plays its input at `rate` times the
/// speed by resampling with 4-point cubic (Catmull-Rom) interpolation, so the pitch changes with
/// the rate. It pulls rate × frames input frames per call (in pieces of at most
/// `maxFrames`). There is no anti-alias filter when speeding up.
///
/// Parameters (Apple's IDs, global scope): playback rate 0 (0.25 ... 4, default 1), playback
/// cents 1 (−2400 ... 2400: rate = 2^(cents/1200); applies when not 0, overriding the rate).
/// Rate changes glide over 10 ms.
public final class AUVarispeedNode: RenderNode, @unchecked Sendable {
    private var fifo: UnsafeMutablePointer<Float>
    private var fifoCapacity = 1
    private var count = 0
    private var position = 1.0
    private var rate = AUSmoothedValue(1)
    /// Input frames consumed so far (render thread writes; read after rendering).
    public private(set) var consumedFrames: Int64 = 0

    /// Creates a varispeed of `channels` channels.
    public init(channels: Int = 2, rate: Float = 1, name: String = "varispeed") {
        fifo = .allocate(capacity: 1)
        super.init(name: name, inputChannels: [channels], outputChannels: [channels], parameters: [
            NodeParameter(id: 0, name: "playback rate", unit: .ratio, range: 0.25...4, defaultValue: rate),
            NodeParameter(id: 1, name: "playback cents", unit: .generic, range: -2400...2400, defaultValue: 0),
        ])
    }

    deinit { fifo.deallocate() }

    /// Playback rate.
    public var playbackRate: NodeParameter { parameters[0] }
    /// Playback cents (overrides the rate when not 0).
    public var playbackCents: NodeParameter { parameters[1] }

    /// Allocates the input FIFO.
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        fifo.deallocate()
        fifoCapacity = maxFrames + 8
        fifo = .allocate(capacity: fifoCapacity * inputChannels[0])
        fifo.initialize(repeating: 0, count: fifoCapacity * inputChannels[0])
        count = 1          // one zero sample of history for the first interpolation
        position = 1
        rate = AUSmoothedValue(currentRate(), rampFrames: max(1, Int(sampleRate * 0.01)))
    }

    private func currentRate() -> Float {
        let cents = playbackCents.value
        return cents != 0 ? min(max(Float(exp2(Double(cents) / 1200)), 0.25), 4) : playbackRate.value
    }

    /// Resamples.
    public override func render(_ context: AURenderContext) {
        let out = context.output(0)
        let channels = out.channelCount
        let cap = fifoCapacity
        rate.setTarget(currentRate())
        for f in 0..<context.frames {
            // Need samples at floor(position) - 1 ... floor(position) + 2.
            while Int(position) + 2 >= count {
                // Keep the last samples from floor(position) - 1 on, then pull more.
                let keepFrom = max(0, Int(position) - 1)
                let keep = count - keepFrom
                if keepFrom > 0 {
                    for c in 0..<channels {
                        let b = fifo + c * cap
                        b.update(from: b + keepFrom, count: keep)
                    }
                    position -= Double(keepFrom)
                    count = keep
                }
                let want = min(maxFrames, cap - count)
                let input = context.pullInput(0, frames: want)
                for c in 0..<channels { (fifo + c * cap + count).update(from: input[c], count: want) }
                count += want
                consumedFrames += Int64(want)
            }
            let i = Int(position)
            let t = Float(position - Double(i))
            for c in 0..<channels {
                let b = fifo + c * cap
                let y0 = b[max(0, i - 1)], y1 = b[i], y2 = b[i + 1], y3 = b[i + 2]
                let a0 = -0.5 * y0 + 1.5 * y1 - 1.5 * y2 + 0.5 * y3
                let a1 = y0 - 2.5 * y1 + 2 * y2 - 0.5 * y3
                let a2 = -0.5 * y0 + 0.5 * y2
                out[c][f] = ((a0 * t + a1) * t + a2) * t + y1
            }
            position += Double(rate.next())
        }
    }
}

/// Changes the channel count (Apple's `kAudioUnitSubType_AUConverter` for the channel part;
/// every bus in a graph is at the graph rate, so rates are converted at the sources: the
/// player converts its file through an AudioConverter). Output channel c takes input channel
/// c when it exists, else input channel c mod (input channels) (mono is duplicated); a mono
/// output is the average of the input channels.
public final class AUFormatConverterNode: RenderNode, @unchecked Sendable {
    /// Creates a converter from `inputChannels` to `outputChannels` channels.
    public init(inputChannels: Int, outputChannels: Int, name: String = "converter") {
        super.init(name: name, inputChannels: [inputChannels], outputChannels: [outputChannels])
    }

    /// Maps the channels.
    public override func render(_ context: AURenderContext) {
        let input = context.input(0), out = context.output(0)
        let m = input.channelCount, n = out.channelCount
        if n == 1 && m > 1 {
            let o = out[0], scale = 1 / Float(m)
            for f in 0..<context.frames {
                var s: Float = 0
                for c in 0..<m { s += input[c][f] }
                o[f] = s * scale
            }
        } else {
            for c in 0..<n { out[c].update(from: input[c < m ? c : c % m], count: context.frames) }
        }
    }
}
