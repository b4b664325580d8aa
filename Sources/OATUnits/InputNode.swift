import OATCore
import OATDevices
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Counters of an ``AUInputNode`` (a snapshot; every field is read from an atomic).
public struct AUInputStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Frames the input device delivered into the ring.
    public var capturedFrames: Int64 = 0
    /// Captured frames lost because the ring was full (the graph was not rendering or fell
    /// behind): overruns.
    public var overrunFrames: Int = 0
    /// Frames the node rendered as silence because the ring ran dry after audio had started:
    /// underruns.
    public var underrunFrames: Int = 0
    /// How many times the ring ran dry.
    public var underruns: Int = 0
    /// Frames skipped to bound the latency: the backlog found at (re)start and what the drift
    /// control dropped when the input clock ran faster than the output clock.
    public var skippedFrames: Int = 0
    /// Frames added by the drift control when the input clock ran slower than the output clock.
    public var insertedFrames: Int = 0
    /// Frames waiting in the ring now.
    public var fillFrames: Int = 0

    /// A one-line summary.
    public var description: String {
        "captured \(capturedFrames), overrun \(overrunFrames), underrun \(underrunFrames) (\(underruns)x), skipped \(skippedFrames), inserted \(insertedFrames), fill \(fillFrames)"
    }
}

/// The microphone: a source node whose audio comes from an input device (PulseAudio or ALSA,
/// ``AudioInputDevice``).
///
/// The device's capture thread writes what it captures (interleaved Float32 at the input rate)
/// into a lock-free single-producer single-consumer ring (``SPSCRingBuffer``); the render
/// thread reads it in ``render(_:)`` without allocating or locking. Frames that do not fit the
/// ring are dropped and counted (overruns); when the ring runs dry the node renders silence,
/// counts the underrun and waits for the ring to refill to its working level before it plays
/// again.
///
/// **Latency and clock drift.** The input and output devices run on different clocks, so the
/// ring would slowly fill up (growing latency) or drain (repeated underruns). The node keeps
/// the fill level bounded: it watches the smallest number of frames left in the ring after a
/// render over windows of a quarter second. At the first render (and after an underrun) it
/// waits for a slice, ``safetyFrames`` and one capture block to be there and skips any
/// backlog beyond that; afterwards, when the window minimum exceeds
/// ``safetyFrames`` by more than the hysteresis (``safetyFrames`` or 32 frames, whichever is
/// larger), it drops the excess (in the first second after priming at once: that is the
/// capture's start-up backlog, not drift), and when the minimum falls below half of ``safetyFrames`` it
/// inserts frames. A larger excess than drift can bring in one window (more than 64 frames
/// beyond the hysteresis: start-up, a stalled renderer, bursty capture) is skipped at once;
/// drift corrections are spread over successive slices, at most 1/64 of a slice each, by
/// linear-interpolation resampling of that slice (a pitch change of at most 1.6 % for a few
/// tens of milliseconds, no click). With equal clocks this only happens at start; with a 100 ppm mismatch it
/// moves about 5 frames a second at 48 kHz.
///
/// **Input at its own rate.** With `inputSampleRate` set (a voice app capturing at 16 kHz
/// under a 48 kHz graph), the device is opened at that rate and the ring holds frames at
/// that rate: ``pull(into:channelCount:frames:)`` hands them out as they are (the C API's
/// `AudioUnitRender` on element 1, whose client format names that rate), and ``render(_:)``
/// converts them to the graph's rate with a 16-tap windowed-sinc interpolator (a low-pass at
/// 0.45 of the lower rate; the kernel table and buffers are made in ``prepare(sampleRate:maxFrames:)``,
/// nothing is allocated on the render thread). The drift control works on the ring in input frames.
///
/// Thread safety: ``start(device:)``, ``start(_:options:)`` and ``stop()`` from the control
/// plane; ``write(_:frames:)`` from one producer thread (the device's, or a test's);
/// ``render(_:)`` / ``pull(into:channelCount:frames:)`` from the render thread;
/// ``statistics`` from anywhere.
public final class AUInputNode: RenderNode, @unchecked Sendable {
    /// Channels captured and rendered.
    public let channels: Int
    /// The ring's size in frames.
    public let capacityFrames: Int
    private let ring: SPSCRingBuffer<Float>
    private let requestedInputRate: Double?
    private let safety: Atomic<Int>
    private let captured = Atomic<Int64>(0)
    private let lastWrite = Atomic<Int>(0)
    private let overruns = AtomicCounter()
    private let underrunFramesCounter = AtomicCounter()
    private let underrunCounter = AtomicCounter()
    private let skipped = AtomicCounter()
    private let inserted = AtomicCounter()
    private let deviceBox = Locked<(any AudioInputDevice)?>(nil)
    // Render-thread state.
    private var scratch: UnsafeMutablePointer<Float>
    private var scratchFrames = 0
    private var primed = false
    private var hasPlayed = false
    private var windowMin = Int.max
    private var windowFrames = 0
    private var windowLength = 12000
    private var pendingAdjust = 0   // > 0: frames to drop, < 0: frames to insert
    private var settlingWindows = 0 // drift windows left in the start-up phase
    private var pullMax = 0
    // Rate conversion in render(_:) (input rate != graph rate): input frames held per channel
    // (`convertHave` of them, the first at position floor(convertPosition)).
    private var convert: UnsafeMutablePointer<Float>
    private var convertStride = 0
    private var convertPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    private var convertHave = 0
    private var convertPosition = 0.0
    // The converter's kernel: a windowed sinc of `kernelTaps` taps at `kernelPhases` + 1
    // fractional positions (interpolated between them).
    private static let kernelTaps = 16
    private static let kernelPhases = 256
    private var kernel: UnsafeMutablePointer<Float>

    /// Creates an input of `channels` channels whose ring holds `capacityFrames` frames (at the
    /// input rate), keeping about `safetyFrames` frames in reserve (nil: 3 ms at the input rate,
    /// at least 64). `inputSampleRate` is the rate the device captures at (nil: the graph's).
    public init(channels: Int = 1, capacityFrames: Int = 16384, safetyFrames: Int? = nil, inputSampleRate: Double? = nil, name: String = "input") {
        self.channels = max(1, channels)
        self.capacityFrames = max(256, capacityFrames)
        ring = SPSCRingBuffer(minimumCapacity: self.capacityFrames * self.channels, zero: 0)
        safety = Atomic(safetyFrames ?? -1)
        requestedInputRate = inputSampleRate.flatMap { $0 > 0 ? $0 : nil }
        scratch = .allocate(capacity: 1)
        convert = .allocate(capacity: 1)
        convertPointers = .allocate(capacity: self.channels)
        convertPointers.initialize(repeating: convert, count: self.channels)
        kernel = .allocate(capacity: 1)
        super.init(name: name, inputChannels: [], outputChannels: [self.channels])
    }

    deinit {
        stop()
        scratch.deallocate()
        convert.deallocate()
        convertPointers.deallocate()
        kernel.deallocate()
    }

    /// Refuses: the channel count is fixed at creation (the ring is sized for it).
    public override func setOutputChannels(_ channels: Int, bus: Int) throws(AudioError) {
        throw AudioError(.invalidState, component: "AUInputNode", "\(name): the channel count is fixed when the input node is created", osStatus: -10865)
    }

    /// The frames kept in the ring beyond what a slice needs (any thread; takes effect at the
    /// next drift window).
    public var safetyFrames: Int {
        get {
            let s = safety.load(ordering: .relaxed)
            return s >= 0 ? s : max(64, Int(inputSampleRate * 0.003))
        }
        set { safety.store(max(0, newValue), ordering: .relaxed) }
    }

    /// The counters.
    public var statistics: AUInputStatistics {
        AUInputStatistics(capturedFrames: captured.load(ordering: .relaxed), overrunFrames: overruns.value,
                          underrunFrames: underrunFramesCounter.value, underruns: underrunCounter.value,
                          skippedFrames: skipped.value, insertedFrames: inserted.value,
                          fillFrames: ring.availableToRead / channels)
    }

    /// The rate the device captures at and the ring holds (the graph's rate unless the node was
    /// created with another).
    public var inputSampleRate: Double { requestedInputRate ?? sampleRate }

    /// The most input frames one ``pull(into:channelCount:frames:)`` delivers: the graph's
    /// slice at the input rate, plus a few (valid once prepared).
    public var maxInputFrames: Int { pullMax }

    /// The estimated input latency in seconds: the device's capture latency plus the reserve
    /// and one capture block the ring keeps (control plane).
    public var inputLatency: Double {
        let rate = inputSampleRate
        guard rate > 0 else { return 0 }
        return (device?.latency ?? 0) + Double(safetyFrames + lastWrite.load(ordering: .relaxed)) / rate
    }

    /// The device feeding the node, if started.
    public var device: (any AudioInputDevice)? { deviceBox.withLock { $0 } }

    /// Allocates the render buffers (and the converter's kernel when the input runs at another
    /// rate than the graph).
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        let inRate = inputSampleRate
        pullMax = inRate == sampleRate ? maxFrames : Int((Double(maxFrames) * inRate / sampleRate).rounded(.up)) + Self.kernelTaps + 4
        scratch.deallocate()
        scratchFrames = pullMax + pullMax / 64 + 2
        scratch = .allocate(capacity: scratchFrames * channels)
        scratch.initialize(repeating: 0, count: scratchFrames * channels)
        windowLength = max(pullMax, Int(inRate / 4))
        convert.deallocate()
        let taps = Self.kernelTaps, half = taps / 2
        convertStride = pullMax + taps + 8
        convert = .allocate(capacity: convertStride * channels)
        convert.initialize(repeating: 0, count: convertStride * channels)
        for c in 0..<channels { convertPointers[c] = convert + c * convertStride }
        // Start with the history the kernel reaches back to (silence).
        convertHave = half - 1
        convertPosition = Double(half - 1)
        // Low-pass at 0.45 of the lower of the two rates (in input samples), Blackman window,
        // each phase normalised to unity gain at DC.
        kernel.deallocate()
        let phases = Self.kernelPhases
        guard inRate != sampleRate else {
            kernel = .allocate(capacity: 1)
            return
        }
        kernel = .allocate(capacity: (phases + 1) * taps)
        let cutoff = 0.45 * min(1, sampleRate / inRate)
        for p in 0...phases {
            let frac = Double(p) / Double(phases)
            var sum = 0.0
            for k in 0..<taps {
                let t = Double(k - half + 1) - frac          // tap k sits at b[i - half + 1 + k]
                let x = 2 * cutoff * t
                let sinc = abs(x) < 1e-12 ? 1 : sin(Double.pi * x) / (Double.pi * x)
                let w = (t + Double(half)) / Double(taps)    // 0 ... 1 over the span
                let window = 0.42 - 0.5 * cos(2 * Double.pi * w) + 0.08 * cos(4 * Double.pi * w)
                let v = 2 * cutoff * sinc * max(0, window)
                kernel[p * taps + k] = Float(v)
                sum += v
            }
            for k in 0..<taps { kernel[p * taps + k] = Float(Double(kernel[p * taps + k]) / sum) }
        }
    }

    // MARK: Producer

    /// Producer: appends `frames` interleaved frames (`samples.count >= frames * channels`);
    /// what does not fit is dropped and counted as an overrun. Real-time safe.
    public func write(_ samples: UnsafeBufferPointer<Float>, frames: Int) {
        let n = min(frames, samples.count / channels)
        guard n > 0, let base = samples.baseAddress else { return }
        lastWrite.store(n, ordering: .relaxed)
        let fit = min(n, ring.availableToWrite / channels)
        if fit > 0 { ring.write(UnsafeBufferPointer(start: base, count: fit * channels)) }
        if fit < n { overruns.add(n - fit) }
        captured.add(Int64(fit), ordering: .relaxed)
    }

    /// Starts `device` capturing into the ring. The device must deliver ``inputSampleRate`` (the
    /// node must be prepared: added to a graph) and the node's channel count.
    public func start(device: any AudioInputDevice) throws(AudioError) {
        guard isPrepared else {
            throw AudioError(.invalidState, component: "AUInputNode", "\(name): add the input node to a graph before starting its device", osStatus: -10867)
        }
        guard device.format.sampleRate == inputSampleRate, device.format.channels == channels else {
            throw AudioError(.unsupportedFormat, component: "AUInputNode",
                             "device \(device.name) delivers \(device.format), the input node takes \(channels) channels at \(inputSampleRate) Hz", osStatus: -10868)
        }
        let busy = deviceBox.withLock { d -> Bool in
            if d != nil { return true }
            d = device
            return false
        }
        if busy { throw AudioError(.invalidState, component: "AUInputNode", "\(name) is already capturing", osStatus: -10863) }
        do {
            try device.start { [self] samples, frames, _ in write(samples, frames: frames) }
        } catch {
            deviceBox.withLock { $0 = nil }
            throw error
        }
    }

    /// Opens `spec` at ``inputSampleRate`` and the node's channel count and starts capturing from
    /// it; returns the opened input (with its notice when ``AudioInputSpec/auto`` fell back).
    @discardableResult
    public func start(_ spec: AudioInputSpec, options: AudioInput.Options = AudioInput.Options()) throws(AudioError) -> AudioInput.Opened {
        guard isPrepared else {
            throw AudioError(.invalidState, component: "AUInputNode", "\(name): add the input node to a graph before starting its device", osStatus: -10867)
        }
        let opened = try AudioInput.open(spec, format: AudioDeviceFormat(sampleRate: inputSampleRate, channels: channels), options: options)
        do { try start(device: opened.device) } catch {
            opened.device.close()
            throw error
        }
        return opened
    }

    /// Stops and closes the device; the ring keeps what it holds.
    public func stop() {
        let d = deviceBox.withLock { d -> (any AudioInputDevice)? in
            defer { d = nil }
            return d
        }
        d?.stop()
        d?.close()
    }

    // MARK: Render

    /// Renders the captured audio (converted to the graph's rate when the input runs at another).
    public override func render(_ context: AURenderContext) {
        let out = context.output(0)
        let inRate = inputSampleRate
        if inRate == sampleRate {
            pull(into: out.channels, channelCount: out.channelCount, frames: context.frames)
            return
        }
        let frames = context.frames
        guard frames > 0 else { return }
        let step = inRate / sampleRate
        let taps = Self.kernelTaps, half = taps / 2, phases = Self.kernelPhases
        let last = convertPosition + Double(frames - 1) * step
        // Frames needed in hand: what the kernel reaches for the last output, and everything
        // the position moves past.
        let need = min(convertStride, max(Int(last) + half + 1, Int(last + step) + 1))
        if need > convertHave {
            // Append after the frames in hand.
            for c in 0..<channels { convertPointers[c] = convert + c * convertStride + convertHave }
            pull(into: convertPointers, channelCount: channels, frames: need - convertHave)
            for c in 0..<channels { convertPointers[c] = convert + c * convertStride }
            convertHave = need
        }
        for c in 0..<out.channelCount {
            let o = out[c], b = convert + (c % channels) * convertStride
            var x = convertPosition
            for f in 0..<frames {
                let i = min(Int(x), convertHave - half - 1)
                let p = Float(x - Double(i)) * Float(phases)
                let pi = min(Int(p), phases - 1)
                let pf = p - Float(pi)
                let k0 = kernel + pi * taps, k1 = k0 + taps
                let s = b + (i - half + 1)
                var acc: Float = 0
                for k in 0..<taps { acc += s[k] * (k0[k] + (k1[k] - k0[k]) * pf) }
                o[f] = acc
                x += step
            }
        }
        convertPosition += Double(frames) * step
        // Keep the history the kernel reaches back to.
        let drop = max(0, min(Int(convertPosition) - (half - 1), convertHave))
        convertPosition -= Double(drop)
        let keep = convertHave - drop
        for c in 0..<channels {
            let b = convert + c * convertStride
            for k in 0..<keep { b[k] = b[drop + k] }
        }
        convertHave = keep
    }

    /// Render thread: writes `frames` frames (at most ``maxInputFrames``) of captured audio
    /// into `channelCount` non-interleaved channels (extra channels repeat channel c mod
    /// ``channels``), with the underrun handling and drift control described above. Used by
    /// ``render(_:)`` and by the C API's `AudioUnitRender` on element 1. No allocation, no locks.
    public func pull(into buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, channelCount: Int, frames: Int) {
        let frames = min(frames, pullMax)
        guard frames > 0 else { return }
        let ch = channels
        let reserve = safetyFrames
        var available = ring.availableToRead / ch
        if !primed {
            // Start with a capture block (the latest write's size) in hand on top of the reserve
            // (the window control takes off what turns out not to be needed).
            let block = min(lastWrite.load(ordering: .relaxed), capacityFrames / 2)
            guard available >= frames + reserve + block else {
                if hasPlayed { underrunFramesCounter.add(frames) }
                for c in 0..<channelCount { buffers[c].update(repeating: 0, count: frames) }
                return
            }
            let excess = available - frames - reserve - block
            if excess > 0 {
                ring.skip(excess * ch)
                skipped.add(excess)
                available -= excess
            }
            primed = true
            hasPlayed = true
            windowMin = Int.max
            windowFrames = 0
            pendingAdjust = 0
            settlingWindows = 4
        }
        // How many ring frames this slice consumes: more to drop, fewer to insert.
        let step = max(1, frames / 64)
        var delta = 0
        if frames >= 16 && pendingAdjust > 0 { delta = min(pendingAdjust, step, max(0, available - frames)) }
        if frames >= 16 && pendingAdjust < 0 { delta = -min(-pendingAdjust, step, frames - 2) }
        let consume = frames + delta
        if available < consume {
            // Underrun: play what is there, then silence, and re-prime.
            let n = available
            if n > 0 { ring.read(into: UnsafeMutableBufferPointer(start: scratch, count: n * ch)) }
            for c in 0..<channelCount {
                let o = buffers[c], k = c % ch
                for f in 0..<n { o[f] = scratch[f * ch + k] }
                (o + n).update(repeating: 0, count: frames - n)
            }
            underrunFramesCounter.add(frames - n)
            underrunCounter.add(1)
            primed = false
            return
        }
        ring.read(into: UnsafeMutableBufferPointer(start: scratch, count: consume * ch))
        if delta == 0 {
            for c in 0..<channelCount {
                let o = buffers[c], k = c % ch
                for f in 0..<frames { o[f] = scratch[f * ch + k] }
            }
        } else {
            // Linear interpolation of `consume` frames onto `frames` frames.
            let ratio = Double(consume - 1) / Double(max(1, frames - 1))
            for c in 0..<channelCount {
                let o = buffers[c], k = c % ch
                for f in 0..<frames {
                    let x = Double(f) * ratio
                    let i = min(Int(x), consume - 2)
                    let t = Float(x - Double(i))
                    let a = scratch[i * ch + k], b = scratch[(i + 1) * ch + k]
                    o[f] = a + (b - a) * t
                }
            }
            if delta > 0 { skipped.add(delta) } else { inserted.add(-delta) }
            pendingAdjust -= delta
        }
        // Drift control: the smallest reserve left over a window decides.
        let left = available - consume
        windowMin = min(windowMin, left)
        windowFrames += frames
        if windowFrames >= windowLength {
            let hysteresis = max(32, reserve)
            // In the first second after (re)starting, any excess is start-up backlog (the
            // capture's first bursts), not drift: skipped at once rather than spread (which
            // would play the first second up to 1.6 % sharp).
            let settling = settlingWindows > 0
            if settling { settlingWindows -= 1 }
            if pendingAdjust == 0 {
                if windowMin > reserve + hysteresis + (settling ? 0 : 64) {
                    // More than drift brings in a window (start-up, a stalled renderer, bursty
                    // capture): skip the backlog at once.
                    ring.skip((windowMin - reserve) * ch)
                    skipped.add(windowMin - reserve)
                } else if windowMin > reserve + hysteresis {
                    pendingAdjust = windowMin - reserve
                } else if windowMin < reserve / 2 {
                    pendingAdjust = -(reserve - windowMin)
                }
            }
            windowMin = Int.max
            windowFrames = 0
        }
    }
}
