import OATCore
import OATDevices
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A live monitor: the microphone (an ``AUInputNode``) routed through optional effects to an
/// output device, in one ``AudioGraph`` driven by the output device (`afrecord --monitor`).
///
/// The chain: input → [voice processing: echo cancellation and noise suppression against what
/// the monitor itself plays, mono] → gain → [EQ] → [compressor and −1 dBFS limiter] → [reverb]
/// → output. With voice processing the reference is the monitor's own output of the previous
/// slice (so the canceller removes the monitor's sound coming back into the microphone).
///
/// Thread safety: control plane (any one thread) for ``start(input:output:inputOptions:outputOptions:)``
/// and ``stop()``; parameters of the nodes from any thread.
public final class AULiveMonitor: @unchecked Sendable {
    /// What goes in the chain.
    public struct Options: Sendable {
        /// The graph's rate (both devices run at it; PulseAudio resamples as needed).
        public var sampleRate: Double = 48000
        /// Channels captured (and processed; voice processing is mono).
        public var inputChannels: Int = 2
        /// Channels played.
        public var outputChannels: Int = 2
        /// Frames per render slice at most.
        public var maxFramesPerSlice: Int = 512
        /// Gain in dB applied to the input (−60 ... 24).
        public var gainDB: Float = 0
        /// EQ bands (nil: no EQ).
        public var eq: [AUEQBand]?
        /// Compressor (−24 dB, 3:1, +6 dB makeup) and a −1 dBFS limiter.
        public var compress = false
        /// A reverb room of ``AUReverbNode/rooms`` (nil: none).
        public var reverbRoom: String?
        /// Echo cancellation and noise suppression (SpeexDSP), mono.
        public var voiceProcessing = false
        /// The PulseAudio output buffering in seconds (low for monitoring).
        public var outputLatency: Double = 0.02
        /// The PulseAudio capture fragment in seconds.
        public var inputFragment: Double = 0.005
        /// The ALSA period in frames, both directions.
        public var alsaPeriodFrames: Int = 256
        /// The PulseAudio server (nil: `PULSE_SERVER` or the default).
        public var pulseServer: String?
        /// Defaults: 48 kHz stereo, no effects.
        public init() {}
    }

    /// The options it was made with.
    public let options: Options
    /// The graph.
    public let graph: AudioGraph
    /// The input node.
    public let input: AUInputNode
    /// The gain stage.
    public let gain: AUGainNode
    /// The EQ, if any.
    public let eq: AUNBandEQNode?
    /// The voice processor, if any.
    public let voice: AUVoiceProcessingNode?
    private(set) var opened: (input: AudioInput.Opened, output: AudioOutput.Opened)?

    /// Builds the graph (no device is opened yet).
    public init(options: Options = Options()) throws(AudioError) {
        self.options = options
        let g = try AudioGraph(sampleRate: options.sampleRate, channels: options.outputChannels, maxFramesPerSlice: options.maxFramesPerSlice)
        graph = g
        let inCh = max(1, options.inputChannels)
        input = AUInputNode(channels: inCh, capacityFrames: max(8192, Int(options.sampleRate)))
        try g.add(input)
        var last: RenderNode = input
        var width = inCh
        func append(_ n: RenderNode, input bus: Int = 0) throws(AudioError) {
            try g.add(n)
            try g.connect(last, to: n, input: bus)
            last = n
        }
        var send: MonitorReferenceSend?
        if options.voiceProcessing {
            if width != 1 { try append(AUFormatConverterNode(inputChannels: width, outputChannels: 1)); width = 1 }
            let v = AUVoiceProcessingNode()
            let reference = MonitorReferenceReturn()
            try g.add(reference)
            try append(v)
            try g.connect(reference, to: v, input: 1)
            send = MonitorReferenceSend(channels: options.outputChannels, into: reference)
            voice = v
        } else {
            voice = nil
        }
        gain = AUGainNode(channels: width, gain: Float(pow(10, Double(min(24, max(-60, options.gainDB))) / 20)))
        try append(gain)
        if let bands = options.eq {
            let e = AUNBandEQNode(channels: width, bands: bands)
            try append(e)
            eq = e
        } else {
            eq = nil
        }
        if options.compress {
            try append(AUDynamicsNode(channels: width, threshold: -24, ratio: 3, knee: 6, attack: 0.01, release: 0.15, makeup: 6))
            try append(AUPeakLimiterNode(channels: width, ceiling: -1))
        }
        if let room = options.reverbRoom {
            guard let r = AUReverbNode.rooms[room] else {
                throw AudioError(.invalidArgument, component: "AULiveMonitor", "unknown reverb room \(room) (\(AUReverbNode.rooms.keys.sorted().joined(separator: ", ")))")
            }
            try append(AUReverbNode(channels: width, decayTime: r.decay, decayAtNyquist: r.nyquist, wetDryMix: r.wet))
        }
        if width != options.outputChannels { try append(AUFormatConverterNode(inputChannels: width, outputChannels: options.outputChannels)) }
        if let send { try append(send) }
        try g.connect(last, to: g.output)
        try g.commit()
    }

    /// Opens the input and output and starts monitoring; returns the opened devices (with
    /// their notices when `auto` fell back).
    @discardableResult
    public func start(input inputSpec: AudioInputSpec, output outputSpec: AudioOutputSpec) throws(AudioError)
        -> (input: AudioInput.Opened, output: AudioOutput.Opened) {
        var inOptions = AudioInput.Options(pulseServer: options.pulseServer)
        inOptions.pulseFragment = options.inputFragment
        inOptions.alsaPeriodFrames = options.alsaPeriodFrames
        var outOptions = AudioOutput.Options()
        outOptions.pulseServer = options.pulseServer
        outOptions.pulseLatency = options.outputLatency
        outOptions.alsaPeriodFrames = options.alsaPeriodFrames
        let i = try input.start(inputSpec, options: inOptions)
        do {
            let o = try graph.start(outputSpec, options: outOptions)
            opened = (i, o)
            return (i, o)
        } catch {
            input.stop()
            throw error
        }
    }

    /// Stops both devices.
    public func stop() {
        graph.stop()
        input.stop()
        opened = nil
    }

    deinit { stop() }

    // MARK: Latency

    /// The result of ``measureLatency(input:output:options:clicks:interval:)``.
    public struct LatencyMeasurement: Sendable, CustomStringConvertible {
        /// Round trip in frames (output written → input read, through the devices), from the
        /// cross-correlation of the whole click train.
        public var frames: Int
        /// The graph rate.
        public var sampleRate: Double
        /// Clicks played.
        public var clicks: Int
        /// The lag of each click that came back (at least half its energy), in frames: clicks
        /// lost to an input underrun or moved by a skip show up here, not in ``frames``.
        public var perClick: [Int]
        /// The correlation peak relative to the click train's energy (about 1 for a clean
        /// loopback; low when the clicks were not heard).
        public var confidence: Double
        /// The input node's counters at the end.
        public var statistics: AUInputStatistics
        /// Round trip in milliseconds.
        public var milliseconds: Double { Double(frames) / sampleRate * 1000 }
        /// The largest minus the smallest per-click lag, in milliseconds.
        public var spreadMilliseconds: Double {
            Double((perClick.max() ?? 0) - (perClick.min() ?? 0)) / sampleRate * 1000
        }
        /// `round-trip latency: 41.7 ms (2000 frames at 48000 Hz; ...)`.
        public var description: String {
            "round-trip latency: \(fixed(milliseconds, 1)) ms (\(frames) frames at \(Int(sampleRate.rounded())) Hz; \(perClick.count) of \(clicks) clicks found, spread \(fixed(spreadMilliseconds, 1)) ms, confidence \(fixed(confidence, 2)))"
        }
    }

    /// Plays a click train on `output` and finds it in `input` by cross-correlation: the round
    /// trip a monitor has (output buffering, the path back to the input, capture buffering and
    /// the input ring). Runs `warmUp` seconds first (the input ring settles), then `clicks`
    /// clicks every `interval` seconds; lags up to 90 % of `interval` are searched.
    /// Throws ``AudioError/Code/timedOut`` when the output did not render in time or no click came back (correlation below a tenth of the expected).
    public static func measureLatency(input inputSpec: AudioInputSpec, output outputSpec: AudioOutputSpec,
                                      options: Options = Options(), clicks: Int = 8, interval: Double = 0.5,
                                      warmUp: Double = 1) throws(AudioError) -> LatencyMeasurement {
        var o = options
        o.eq = nil; o.compress = false; o.reverbRoom = nil; o.voiceProcessing = false
        let rate = o.sampleRate
        let g = try AudioGraph(sampleRate: rate, channels: o.outputChannels, maxFramesPerSlice: o.maxFramesPerSlice)
        let input = AUInputNode(channels: max(1, o.inputChannels), capacityFrames: max(8192, Int(rate)))
        let period = max(256, Int(interval * rate))
        let start = Int(warmUp * rate)
        let total = start + (clicks + 1) * period
        let probe = LatencyProbeNode(inputChannels: input.channels, outputChannels: o.outputChannels, frames: total,
                                     firstClick: start, period: period, clicks: clicks, rate: rate)
        try g.add(input)
        try g.add(probe)
        try g.connect(input, to: probe)
        try g.connect(probe, to: g.output)
        try g.commit()
        var inOptions = AudioInput.Options(pulseServer: o.pulseServer)
        inOptions.pulseFragment = o.inputFragment
        inOptions.alsaPeriodFrames = o.alsaPeriodFrames
        var outOptions = AudioOutput.Options()
        outOptions.pulseServer = o.pulseServer
        outOptions.pulseLatency = o.outputLatency
        outOptions.alsaPeriodFrames = o.alsaPeriodFrames
        try input.start(inputSpec, options: inOptions)
        do {
            try g.start(outputSpec, options: outOptions)
        } catch {
            input.stop()
            throw error
        }
        let deadline = HostTime.now() + HostTime.ticks(seconds: Double(total) / rate * 3 + 5)
        while probe.recordedFrames < total && HostTime.now() < deadline { usleep(20_000) }
        g.stop()
        input.stop()
        guard probe.recordedFrames >= total else {
            throw AudioError(.timedOut, component: "AULiveMonitor", "the output device rendered only \(probe.recordedFrames) of \(total) frames")
        }
        return try probe.analyse(statistics: input.statistics, maxLag: Int(Double(period) * 0.9))
    }
}

/// Plays a click train and records the input it is fed, frame for frame on the render
/// timeline (preallocated; render thread writes, control plane reads after the recording).
final class LatencyProbeNode: RenderNode, @unchecked Sendable {
    let total: Int
    let firstClick: Int
    let period: Int
    let clicks: Int
    let click: [Float]
    private let recorded: UnsafeMutablePointer<Float>
    private let position = Atomic<Int>(0)

    init(inputChannels: Int, outputChannels: Int, frames: Int, firstClick: Int, period: Int, clicks: Int, rate: Double) {
        total = frames
        self.firstClick = firstClick
        self.period = period
        self.clicks = clicks
        // A 2 ms Hann-windowed 3 kHz burst: short, loud, sharp correlation peak, and it passes
        // real speakers and microphones.
        let n = max(16, Int(rate * 0.002))
        click = (0..<n).map { i in
            let w = 0.5 - 0.5 * cos(2 * Double.pi * Double(i) / Double(n - 1))
            return Float(0.8 * w * sin(2 * Double.pi * 3000 * Double(i) / rate))
        }
        recorded = .allocate(capacity: frames)
        recorded.initialize(repeating: 0, count: frames)
        super.init(name: "latency probe", inputChannels: [inputChannels], outputChannels: [outputChannels])
    }

    deinit { recorded.deallocate() }

    var recordedFrames: Int { position.load(ordering: .acquiring) }

    override func render(_ context: AURenderContext) {
        let input = context.input(0)
        let out = context.output(0)
        let at = position.load(ordering: .relaxed)
        let frames = context.frames
        for f in 0..<frames {
            let t = at + f
            var v: Float = 0
            if t >= firstClick && t < firstClick + clicks * period {
                let k = (t - firstClick) % period
                if k < click.count { v = click[k] }
            }
            for c in 0..<out.channelCount { out[c][f] = v }
            if t < total {
                var s: Float = 0
                for c in 0..<input.channelCount { s += input[c][f] }
                recorded[t] = s / Float(input.channelCount)
            }
        }
        position.store(min(total, at + frames), ordering: .releasing)
    }

    /// Cross-correlates the recording with the click train.
    func analyse(statistics: AUInputStatistics, maxLag: Int) throws(AudioError) -> AULiveMonitor.LatencyMeasurement {
        let rec = UnsafeBufferPointer(start: recorded, count: total)
        let energy = click.reduce(0) { $0 + Double($1) * Double($1) }
        func correlation(click k: Int, lag: Int) -> Double {
            let base = firstClick + k * period + lag
            var s = 0.0
            for i in 0..<click.count where base + i < total { s += Double(click[i]) * Double(rec[base + i]) }
            return s
        }
        var best = (lag: 0, value: -Double.infinity)
        for lag in 0..<maxLag {
            var s = 0.0
            for k in 0..<clicks { s += correlation(click: k, lag: lag) }
            if s > best.value { best = (lag, s) }
        }
        var perClick: [Int] = []
        for k in 0..<clicks {
            var b = (lag: 0, value: -Double.infinity)
            for lag in 0..<maxLag {
                let v = correlation(click: k, lag: lag)
                if v > b.value { b = (lag, v) }
            }
            // A click counts when it came back at least half as strong as it was played.
            if b.value > 0.5 * energy { perClick.append(b.lag) }
        }
        let confidence = best.value / (Double(clicks) * energy)
        guard confidence > 0.1 else {
            throw AudioError(.timedOut, component: "AULiveMonitor",
                             "the clicks did not come back on the input (correlation \(fixed(confidence, 3)) of the expected)")
        }
        return AULiveMonitor.LatencyMeasurement(frames: best.lag, sampleRate: sampleRate, clicks: clicks, perClick: perClick, confidence: confidence, statistics: statistics)
    }
}

/// The voice processor's reference: the output of the previous slice, mono (the monitor's,
/// through ``MonitorReferenceSend``; an AVAudioEngine's, through ``keep(_:frames:)``).
package final class MonitorReferenceReturn: RenderNode, @unchecked Sendable {
    var buffer: UnsafeMutablePointer<Float>
    var frames = 0

    package init(name: String = "monitor reference") {
        buffer = .allocate(capacity: 1)
        buffer.initialize(to: 0)
        super.init(name: name, inputChannels: [], outputChannels: [1])
    }

    /// Render thread: keeps the mono mix of the output just rendered (its last `maxFrames`).
    package func keep(_ output: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, frames total: Int) {
        let n = Swift.min(total, maxFrames)
        let first = total - n
        let width = output.count
        guard width > 0 else { return }
        let scale = 1 / Float(width)
        for f in 0..<n {
            var sum: Float = 0
            for c in 0..<width { sum += output[c][first + f] }
            buffer[f] = sum * scale
        }
        frames = n
    }

    deinit { buffer.deallocate() }

    package override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        buffer.deallocate()
        buffer = .allocate(capacity: maxFrames)
        buffer.initialize(repeating: 0, count: maxFrames)
        frames = 0
    }

    package override func render(_ context: AURenderContext) {
        let o = context.output(0)[0]
        let n = min(frames, context.frames)
        o.update(from: buffer, count: n)
        if n < context.frames { (o + n).update(repeating: 0, count: context.frames - n) }
    }
}

/// Passes the monitor's output through and keeps its mono mix for ``MonitorReferenceReturn``
/// (both run on the render thread, the return first in each slice).
final class MonitorReferenceSend: RenderNode, @unchecked Sendable {
    unowned let target: MonitorReferenceReturn

    init(channels: Int, into target: MonitorReferenceReturn) {
        self.target = target
        super.init(name: "monitor reference send", inputChannels: [channels], outputChannels: [channels])
    }

    override func render(_ context: AURenderContext) {
        let input = context.input(0), out = context.output(0)
        out.copy(from: input)
        let n = min(context.frames, target.maxFrames)
        let ch = input.channelCount
        for f in 0..<n {
            var s: Float = 0
            for c in 0..<ch { s += input[c][f] }
            target.buffer[f] = s / Float(ch)
        }
        target.frames = n
    }
}
