import OATCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A source whose audio comes from a user callback (Apple's render callback on an input bus).
///
/// The callback runs **on the render thread**: real-time rules apply to it. It must not
/// allocate, lock, log, do I/O or wait; it should copy from preallocated memory or compute.
/// It fills `frames` frames into every channel of `buffers` (non-interleaved Float32).
public final class AURenderCallbackNode: RenderNode, @unchecked Sendable {
    /// The user render callback: fill every channel of the buffers with `frames` frames
    /// starting at `sampleTime` (this node's timeline).
    public typealias Callback = @Sendable (_ buffers: AUBufferList, _ frames: Int, _ sampleTime: Int64) -> Void
    private let callback: Callback

    /// Creates a source of `channels` channels rendered by `callback`.
    public init(channels: Int, name: String = "render callback", callback: @escaping Callback) {
        self.callback = callback
        super.init(name: name, inputChannels: [], outputChannels: [channels])
    }

    /// Calls the callback.
    public override func render(_ context: AURenderContext) {
        callback(context.output(0), context.frames, context.sampleTime)
    }
}

/// A multichannel mixer (Apple's `kAudioUnitSubType_MultiChannelMixer`): many input buses,
/// one output bus, per-input volume, pan and mute (enable), and a master volume.
///
/// Pan law (constant power): with θ = (pan + 1)·π/4, a mono input goes to the left with
/// gain cos θ and to the right with sin θ (−3.01 dB each at the centre; L² + R² = 1 at every
/// pan). A stereo input is balanced: left gain min(1, √2·cos θ), right gain min(1, √2·sin θ)
/// (both 1 at the centre). Outputs of other widths take channel c from input channel
/// c mod (input channels), and pan applies to stereo outputs only. A mono output sums.
/// All gains glide over 10 ms when changed. An enabled input at volume 0 is still rendered (not
/// heard), as Apple's mixers pull it; a disabled input (enable 0) is not pulled.
public final class AUMixerNode: RenderNode, @unchecked Sendable {
    /// Apple's `kMultiChannelMixerParam_Volume` (input scope: per input, output scope: master).
    public static let volumeID: UInt32 = 0
    /// Apple's `kMultiChannelMixerParam_Enable` (input scope, 0 mutes).
    public static let enableID: UInt32 = 1
    /// Apple's `kMultiChannelMixerParam_Pan` (input scope, −1 ... 1).
    public static let panID: UInt32 = 2

    private var gains: UnsafeMutablePointer<AUSmoothedValue>   // 2 per input (L, R)
    private var master = AUSmoothedValue(1)
    private var gainCount = 0

    /// Creates a mixer of `inputs` input buses of `inputChannels` channels each into
    /// `outputChannels` channels.
    public init(inputs: Int, inputChannels: Int = 2, outputChannels: Int = 2, name: String = "mixer") {
        var params: [NodeParameter] = []
        let n = max(1, inputs)
        for i in 0..<n {
            params.append(NodeParameter(id: AUMixerNode.volumeID, name: "input \(i) volume", unit: .linearGain, range: 0...4, defaultValue: 1, scope: .input, element: i))
            params.append(NodeParameter(id: AUMixerNode.enableID, name: "input \(i) enable", unit: .boolean, range: 0...1, defaultValue: 1, scope: .input, element: i))
            params.append(NodeParameter(id: AUMixerNode.panID, name: "input \(i) pan", unit: .pan, range: -1...1, defaultValue: 0, scope: .input, element: i))
        }
        params.append(NodeParameter(id: AUMixerNode.volumeID, name: "master volume", unit: .linearGain, range: 0...4, defaultValue: 1, scope: .output, element: 0))
        gains = .allocate(capacity: 1)
        super.init(name: name, inputChannels: Array(repeating: inputChannels, count: n), outputChannels: [outputChannels], parameters: params)
    }

    deinit { gains.deinitialize(count: gainCount); gains.deallocate() }

    /// Input `i`'s volume (linear gain 0 ... 4).
    public func volume(input i: Int) -> NodeParameter { parameters[i * 3] }
    /// Input `i`'s enable switch (0 mutes).
    public func enable(input i: Int) -> NodeParameter { parameters[i * 3 + 1] }
    /// Input `i`'s pan (−1 left ... 1 right).
    public func pan(input i: Int) -> NodeParameter { parameters[i * 3 + 2] }
    /// The master volume (linear gain 0 ... 4).
    public var masterVolume: NodeParameter { parameters[parameters.count - 1] }

    /// The (left, right) gains the pan law gives for `pan` and an input of `channels` channels.
    public static func panGains(pan: Float, inputChannels channels: Int) -> (left: Float, right: Float) {
        let theta = (Double(min(max(pan, -1), 1)) + 1) * Double.pi / 4
        if channels == 1 { return (Float(cos(theta)), Float(sin(theta))) }
        return (Float(min(1, 2.0.squareRoot() * cos(theta))), Float(min(1, 2.0.squareRoot() * sin(theta))))
    }

    /// Allocates the gain smoothers.
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        gains.deinitialize(count: gainCount)
        gains.deallocate()
        gainCount = inputChannels.count * 2
        gains = .allocate(capacity: gainCount)
        let ramp = max(1, Int(sampleRate * 0.01))
        for i in 0..<inputChannels.count {
            let g = targetGains(i)
            (gains + 2 * i).initialize(to: AUSmoothedValue(g.left, rampFrames: ramp))
            (gains + 2 * i + 1).initialize(to: AUSmoothedValue(g.right, rampFrames: ramp))
        }
        master = AUSmoothedValue(masterVolume.value, rampFrames: ramp)
    }

    private func targetGains(_ i: Int) -> (left: Float, right: Float) {
        let v = enable(input: i).value >= 0.5 ? volume(input: i).value : 0
        if outputChannels[0] != 2 { return (v, v) }
        let p = AUMixerNode.panGains(pan: pan(input: i).value, inputChannels: inputChannels[i])
        return (v * p.left, v * p.right)
    }

    /// Mixes.
    public override func render(_ context: AURenderContext) {
        let out = context.output(0)
        out.silence()
        let frames = context.frames
        let outChannels = out.channelCount
        for i in 0..<min(context.inputCount, gainCount / 2) {
            let t = targetGains(i)
            gains[2 * i].setTarget(t.left)
            gains[2 * i + 1].setTarget(t.right)
            guard context.isInputConnected(i) else { continue }
            if !gains[2 * i].isRamping && !gains[2 * i + 1].isRamping && t.left == 0 && t.right == 0 {
                // Silent, not skipped: an enabled input at volume 0 is still rendered (as Apple's
                // mixers pull it), so what is upstream of it (taps, players' time) goes on.
                if enable(input: i).value >= 0.5 { _ = context.input(i) }
                continue
            }
            let input = context.input(i)
            let inChannels = input.channelCount
            if outChannels == 2 {
                let l = input[0], r = inChannels > 1 ? input[1] : input[0]
                let ol = out[0], or = out[1]
                var gl = gains[2 * i], gr = gains[2 * i + 1]
                if gl.isRamping || gr.isRamping {
                    for f in 0..<frames {
                        ol[f] += l[f] * gl.next()
                        or[f] += r[f] * gr.next()
                    }
                } else {
                    let a = gl.current, b = gr.current
                    for f in 0..<frames {
                        ol[f] += l[f] * a
                        or[f] += r[f] * b
                    }
                }
                gains[2 * i] = gl
                gains[2 * i + 1] = gr
            } else {
                var g = gains[2 * i]
                let start = g
                for c in 0..<outChannels {
                    g = start
                    let o = out[c]
                    if outChannels == 1 && inChannels > 1 {
                        for f in 0..<frames {
                            let v = g.next()
                            var s: Float = 0
                            for k in 0..<inChannels { s += input[k][f] }
                            o[f] += s * v
                        }
                    } else {
                        let src = input[c % inChannels]
                        for f in 0..<frames { o[f] += src[f] * g.next() }
                    }
                }
                gains[2 * i] = g
                _ = gains[2 * i + 1].advance(frames)
            }
        }
        master.setTarget(masterVolume.value)
        if master.isRamping || master.current != 1 {
            var m = master
            let start = m
            for c in 0..<outChannels {
                m = start
                let o = out[c]
                for f in 0..<frames { o[f] *= m.next() }
            }
            master = m
        }
    }
}

/// One input to several outputs (Apple's `kAudioUnitSubType_Splitter`): every output bus
/// carries a copy of the input.
public final class AUSplitterNode: RenderNode, @unchecked Sendable {
    /// Creates a splitter of `channels` channels into `outputs` outputs.
    public init(channels: Int = 2, outputs: Int = 2, name: String = "splitter") {
        super.init(name: name, inputChannels: [channels], outputChannels: Array(repeating: channels, count: max(1, outputs)))
    }

    /// Copies the input to every output.
    public override func render(_ context: AURenderContext) {
        let input = context.input(0)
        for bus in 0..<context.outputCount { context.output(bus).copy(from: input) }
    }
}

/// A pass-through that copies the frames going by into a lock-free ring, which a reader on
/// another (non-real-time) thread drains with ``read(into:)``. When the reader falls behind,
/// the frames that do not fit are dropped and counted (``droppedFrames``).
public final class AUTapNode: RenderNode, @unchecked Sendable {
    /// The ring of interleaved frames.
    private let ring: SPSCRingBuffer<Float>
    private var scratch: UnsafeMutablePointer<Float>
    private let drops = AtomicCounter()
    /// The node sample time of the first frame written to the ring (-1: none yet).
    private let firstSample = Atomic<Int64>(-1)

    /// The sample time (the node's render clock, ``RenderNode/renderedFrames``) of the first frame
    /// that went into the ring, nil before any: with the frames read since, the time of the
    /// frames a reader gets (Apple's tap block `when`).
    public var firstSampleTime: Int64? {
        let t = firstSample.load(ordering: .acquiring)
        return t < 0 ? nil : t
    }

    /// Creates a tap of `channels` channels holding up to `capacityFrames` frames.
    public init(channels: Int = 2, capacityFrames: Int = 1 << 16, name: String = "tap") {
        ring = SPSCRingBuffer(minimumCapacity: max(1, capacityFrames) * channels, zero: 0)
        scratch = .allocate(capacity: 1)
        super.init(name: name, inputChannels: [channels], outputChannels: [channels])
    }

    deinit { scratch.deallocate() }

    /// Allocates the interleaving scratch buffer.
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        scratch.deallocate()
        scratch = .allocate(capacity: maxFrames * inputChannels[0])
    }

    /// Frames dropped because the ring was full.
    public var droppedFrames: Int { drops.value }

    /// Frames waiting to be read.
    public var availableFrames: Int { ring.availableToRead / inputChannels[0] }

    /// Reader: copies up to `destination.count / channels` whole interleaved frames; returns
    /// the frames read. One reader thread at a time.
    public func read(into destination: UnsafeMutableBufferPointer<Float>) -> Int {
        let ch = inputChannels[0]
        let frames = min(destination.count / ch, ring.availableToRead / ch)
        guard frames > 0, let base = destination.baseAddress else { return 0 }
        return ring.read(into: UnsafeMutableBufferPointer(start: base, count: frames * ch)) / ch
    }

    /// Passes audio through and copies it into the ring.
    public override func render(_ context: AURenderContext) {
        let input = context.input(0)
        let out = context.output(0)
        out.copy(from: input)
        let ch = out.channelCount
        let frames = context.frames
        let fit = min(frames, ring.availableToWrite / ch)
        if fit < frames { drops.add(frames - fit) }
        guard fit > 0 else { return }
        if firstSample.load(ordering: .relaxed) < 0 { firstSample.store(context.sampleTime, ordering: .releasing) }
        for c in 0..<ch {
            let src = out[c]
            for f in 0..<fit { scratch[f * ch + c] = src[f] }
        }
        ring.write(UnsafeBufferPointer(start: scratch, count: fit * ch))
    }
}

/// A gain stage (one input, one output of the same width), with a smoothed linear gain.
public final class AUGainNode: RenderNode, @unchecked Sendable {
    private var smoothed = AUSmoothedValue(1)

    /// Creates a gain stage of `channels` channels.
    public init(channels: Int = 2, gain: Float = 1, name: String = "gain") {
        super.init(name: name, inputChannels: [channels], outputChannels: [channels],
                   parameters: [NodeParameter(id: 0, name: "gain", unit: .linearGain, range: 0...16, defaultValue: gain)])
    }

    /// The gain (linear, 0 ... 16).
    public var gain: NodeParameter { parameters[0] }

    /// Sets up the smoother.
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        smoothed = AUSmoothedValue(gain.value, rampFrames: max(1, Int(sampleRate * 0.01)))
    }

    /// Applies the gain.
    public override func render(_ context: AURenderContext) {
        let input = context.input(0), out = context.output(0)
        smoothed.setTarget(gain.value)
        let start = smoothed
        var s = start
        for c in 0..<out.channelCount {
            s = start
            let i = input[c], o = out[c]
            for f in 0..<context.frames { o[f] = i[f] * s.next() }
        }
        smoothed = s
    }
}
