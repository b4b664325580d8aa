import OATCore
import COATDSPLazy
import COATRubberBand
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// How a ``TimePitchProcessor`` changes rate and pitch (Apple's
/// `kAudioQueueTimePitchAlgorithm_*`).
public enum TimePitchAlgorithm: String, Sendable, CaseIterable {
    /// Highest quality, for music: Rubber Band's R3 ("finer") engine in real-time mode.
    case spectral
    /// Cheaper, suited to speech: Rubber Band's R2 ("faster") engine in real-time mode.
    case timeDomain
    /// Plain resampling: rate and pitch are linked (playing at 2x raises the pitch an octave),
    /// no added latency, bit-exact at rate 1 and pitch 0.
    case varispeed
}

/// Changes playback rate without changing pitch, and pitch without changing rate, in real time.
///
/// Rate is 0.5...2.0 (2.0 plays twice as fast), pitch -2400...+2400 cents. The spectral and
/// time-domain algorithms run through Rubber Band (librubberband, real-time mode, no threads);
/// varispeed resamples. Parameters may be set from any thread; the processing thread picks them
/// up at its next call without locks.
///
/// Two ways to drive it, on one thread at a time:
/// - push: ``process(_:frames:final:)`` then ``retrieve(into:maxFrames:)`` while
///   ``availableFrames`` > 0 (the queue's feeder does this);
/// - pull: ``render(into:frames:source:)`` asks `source` for input until it has the output
///   (a render-graph node does this).
///
/// Output is aligned with the input: the processor feeds Rubber Band its preferred start pad and
/// drops its start delay, so the first output frame corresponds to the first input frame (the
/// cost is that it holds back about ``latencyFrames`` of input before it produces output).
/// At rate 1 and pitch 0, before the processor has ever been engaged or while ``bypass`` is set,
/// input is copied to output unchanged.
///
/// Thread safety: the setters are safe from any thread. ``process(_:frames:final:)``,
/// ``retrieve(into:maxFrames:)``, ``render(into:frames:source:)`` and ``reset()`` belong to one
/// processing thread; they do not allocate or lock after ``init`` (Rubber Band in real-time mode
/// with a maximum process size set; see docs/timepitch.md for what was measured).
public final class TimePitchProcessor: @unchecked Sendable {
    /// The lowest rate accepted.
    public static let minimumRate: Double = 0.5
    /// The highest rate accepted.
    public static let maximumRate: Double = 2.0
    /// The pitch range in cents, either way.
    public static let maximumPitchCents: Double = 2400

    /// Sample rate in Hz.
    public let sampleRate: Double
    /// Channels (planar buffers, one per channel).
    public let channels: Int
    /// The most frames one ``process(_:frames:final:)`` or ``retrieve(into:maxFrames:)`` call takes.
    public let maximumFramesPerCall: Int
    /// The algorithm, fixed at creation.
    public let algorithm: TimePitchAlgorithm

    private let rateBits = Atomic<UInt64>(Double(1).bitPattern)
    private let pitchBits = Atomic<UInt64>(Double(0).bitPattern)
    private let bypassFlag = Atomic<Bool>(false)
    private let resetRequest = Atomic<Bool>(false)

    // Processing-thread state.
    private var state: RubberBandState?
    private var appliedRate: Double = 1
    private var appliedPitch: Double = 0
    private var engaged = false
    private var dropOutput = 0
    private var finished = false
    /// Output frames the input pushed so far should make (input / rate, summed per call) and
    /// frames handed out; after the final input, output stops at the expected length (R3 flushes
    /// a little more than that).
    private var expectedOutput: Double = 0
    private var producedOutput = 0
    /// Pass-through FIFO used while bypassed (planar, capacity `fifoCapacity` per channel).
    private let fifo: UnsafeMutablePointer<Float>
    private let fifoCapacity: Int
    private var fifoCount = 0
    private let inPointers: UnsafeMutablePointer<UnsafePointer<Float>?>
    private let outPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
    private let scratch: UnsafeMutablePointer<Float>
    private let padPointers: UnsafeMutablePointer<UnsafePointer<Float>?>
    private let zeros: UnsafeMutablePointer<Float>
    // Varispeed state: the last 4 input frames per channel and the fractional read position.
    private var history: UnsafeMutablePointer<Float>
    private var varPosition: Double = 0
    private var varWarmup = 2
    private let pullIn: UnsafeMutablePointer<UnsafePointer<Float>>
    private let pullOut: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    private let renderOut: UnsafeMutablePointer<UnsafeMutablePointer<Float>>

    /// Throws when `algorithm` cannot run here: the spectral and time-domain algorithms need
    /// the Rubber Band library (loaded on first use), varispeed needs nothing.
    public static func checkAvailable(_ algorithm: TimePitchAlgorithm) throws(AudioError) {
        guard algorithm != .varispeed else { return }
        if let why = oat_rubberband_load() {
            throw AudioError(.unsupportedFormat, component: "TimePitchProcessor", String(cString: why))
        }
    }

    /// Creates a processor. `maximumFramesPerCall` bounds each push, retrieve and render call.
    public init(sampleRate: Double, channels: Int, algorithm: TimePitchAlgorithm = .spectral,
                maximumFramesPerCall: Int = 4096) throws(AudioError) {
        guard sampleRate >= 8000, sampleRate <= 384_000 else {
            throw AudioError(.invalidArgument, component: "TimePitchProcessor", "sample rate \(sampleRate) is outside 8000...384000", osStatus: -50)
        }
        guard channels >= 1, channels <= 32 else {
            throw AudioError(.invalidArgument, component: "TimePitchProcessor", "channel count \(channels) is outside 1...32", osStatus: -50)
        }
        guard maximumFramesPerCall >= 16, maximumFramesPerCall <= 65536 else {
            throw AudioError(.invalidArgument, component: "TimePitchProcessor", "maximum frames per call \(maximumFramesPerCall) is outside 16...65536", osStatus: -50)
        }
        self.sampleRate = sampleRate
        self.channels = channels
        self.algorithm = algorithm
        self.maximumFramesPerCall = maximumFramesPerCall
        // Varispeed at its slowest (rate 0.5, -2400 cents) makes 8 output frames per input frame.
        fifoCapacity = maximumFramesPerCall * 9
        fifo = .allocate(capacity: fifoCapacity * channels)
        fifo.initialize(repeating: 0, count: fifoCapacity * channels)
        inPointers = .allocate(capacity: channels)
        inPointers.initialize(repeating: nil, count: channels)
        outPointers = .allocate(capacity: channels)
        outPointers.initialize(repeating: nil, count: channels)
        padPointers = .allocate(capacity: channels)
        zeros = .allocate(capacity: maximumFramesPerCall)
        zeros.initialize(repeating: 0, count: maximumFramesPerCall)
        padPointers.initialize(repeating: UnsafePointer(zeros), count: channels)
        scratch = .allocate(capacity: maximumFramesPerCall * channels)
        scratch.initialize(repeating: 0, count: maximumFramesPerCall * channels)
        pullIn = .allocate(capacity: channels)
        pullOut = .allocate(capacity: channels)
        renderOut = .allocate(capacity: channels)
        for c in 0..<channels {
            pullIn.advanced(by: c).initialize(to: UnsafePointer(scratch + c * maximumFramesPerCall))
            pullOut.advanced(by: c).initialize(to: scratch + c * maximumFramesPerCall)
            renderOut.advanced(by: c).initialize(to: scratch + c * maximumFramesPerCall)
        }
        history = .allocate(capacity: 4 * channels)
        history.initialize(repeating: 0, count: 4 * channels)
        if algorithm != .varispeed {
            var options = Int32(RubberBandOptionProcessRealTime.rawValue) | Int32(RubberBandOptionThreadingNever.rawValue)
            options |= Int32(RubberBandOptionPitchHighConsistency.rawValue) | Int32(RubberBandOptionChannelsTogether.rawValue)
            if algorithm == .spectral {
                options |= Int32(RubberBandOptionEngineFiner.rawValue)
            } else {
                options |= Int32(RubberBandOptionEngineFaster.rawValue) | Int32(RubberBandOptionTransientsMixed.rawValue)
            }
            // Rubber Band is loaded on first use (COATDSPLazy); a missing library is an error here.
            if let why = oat_rubberband_load() {
                throw AudioError(.unsupportedFormat, component: "TimePitchProcessor", String(cString: why))
            }
            guard let s = rubberband_new(UInt32(sampleRate), UInt32(channels), options, 1, 1) else {
                throw AudioError(.unsupportedFormat, component: "TimePitchProcessor", "Rubber Band could not start for \(sampleRate) Hz, \(channels) channels")
            }
            rubberband_set_max_process_size(s, UInt32(maximumFramesPerCall))
            state = s
            warmUp(s)
        }
        startEngine()
    }

    deinit {
        if let state { rubberband_delete(state) }
        fifo.deallocate()
        inPointers.deallocate()
        outPointers.deallocate()
        padPointers.deallocate()
        zeros.deallocate()
        scratch.deallocate()
        history.deallocate()
        pullIn.deallocate()
        pullOut.deallocate()
        renderOut.deallocate()
    }

    // MARK: Parameters (any thread)

    /// Playback rate, 0.5...2.0; 1 is normal speed.
    public var rate: Double { Double(bitPattern: rateBits.load(ordering: .relaxed)) }
    /// Pitch shift in cents, -2400...2400.
    public var pitchCents: Double { Double(bitPattern: pitchBits.load(ordering: .relaxed)) }

    /// Sets the rate (0.5...2.0). Thread safety: any thread.
    public func setRate(_ rate: Double) throws(AudioError) {
        guard rate.isFinite, rate >= Self.minimumRate, rate <= Self.maximumRate else {
            throw AudioError(.invalidArgument, component: "TimePitchProcessor", "rate \(rate) is outside 0.5...2.0", osStatus: -50)
        }
        rateBits.store(rate.bitPattern, ordering: .relaxed)
    }

    /// Sets the pitch shift in cents (-2400...2400). Thread safety: any thread.
    public func setPitch(cents: Double) throws(AudioError) {
        guard cents.isFinite, abs(cents) <= Self.maximumPitchCents else {
            throw AudioError(.invalidArgument, component: "TimePitchProcessor", "pitch \(cents) cents is outside -2400...2400", osStatus: -50)
        }
        pitchBits.store(cents.bitPattern, ordering: .relaxed)
    }

    /// While true, input passes through unchanged (rate and pitch ignored). Thread safety: any thread.
    public var bypass: Bool {
        get { bypassFlag.load(ordering: .relaxed) }
        set { bypassFlag.store(newValue, ordering: .relaxed) }
    }

    /// Asks the processing thread to drop what it holds and start afresh at its next call.
    /// Thread safety: any thread.
    public func requestReset() { resetRequest.store(true, ordering: .releasing) }

    /// Input frames the engine holds back before output starts (its latency); 0 for varispeed.
    public var latencyFrames: Int {
        guard let state else { return 0 }
        return Int(rubberband_get_start_delay(state))
    }

    // MARK: Processing (one thread)

    /// Drops everything buffered. Thread safety: processing thread only.
    public func reset() {
        if let state { rubberband_reset(state) }
        fifoCount = 0
        engaged = false
        finished = false
        expectedOutput = 0
        producedOutput = 0
        varPosition = 0
        varWarmup = 2
        history.update(repeating: 0, count: 4 * channels)
        startEngine()
    }

    /// Rubber Band creates its pitch resampler the first time the pitch scale leaves 1 (a few
    /// allocations inside `process`): run it once shifted here, on the control thread, so that
    /// later pitch changes on the processing thread find it made.
    private func warmUp(_ s: RubberBandState) {
        rubberband_set_pitch_scale(s, 1.5)
        rubberband_set_time_ratio(s, 0.75)
        for _ in 0..<4 {
            rubberband_process(s, padPointers, UInt32(maximumFramesPerCall), 0)
            while rubberband_available(s) > 0 {
                for c in 0..<channels { outPointers[c] = scratch + c * maximumFramesPerCall }
                _ = rubberband_retrieve(s, outPointers, UInt32(min(Int(rubberband_available(s)), maximumFramesPerCall)))
            }
        }
        rubberband_set_pitch_scale(s, 0.7)
        rubberband_process(s, padPointers, UInt32(maximumFramesPerCall), 0)
        rubberband_reset(s)
    }

    private func startEngine() {
        guard let state else { return }
        applyParameters(force: true)
        dropOutput = Int(rubberband_get_start_delay(state))
        var pad = Int(rubberband_get_preferred_start_pad(state))
        while pad > 0 {
            let n = min(pad, maximumFramesPerCall)
            rubberband_process(state, padPointers, UInt32(n), 0)
            pad -= n
        }
    }

    private func applyParameters(force: Bool) {
        let r = Double(bitPattern: rateBits.load(ordering: .relaxed))
        let p = Double(bitPattern: pitchBits.load(ordering: .relaxed))
        guard force || r != appliedRate || p != appliedPitch else { return }
        appliedRate = r
        appliedPitch = p
        if let state {
            rubberband_set_time_ratio(state, 1 / r)
            rubberband_set_pitch_scale(state, pow(2, p / 1200))
        }
    }

    private func pickUp() {
        if resetRequest.exchange(false, ordering: .acquiring) { reset() }
        applyParameters(force: false)
        if !engaged && !bypassFlag.load(ordering: .relaxed) && (appliedRate != 1 || appliedPitch != 0) && fifoCount == 0 {
            engaged = true
        }
    }

    /// True while input goes around the engine (bypass, or unity before first engagement).
    private var passThrough: Bool { bypassFlag.load(ordering: .relaxed) || !engaged }

    /// Pushes `frames` (at most ``maximumFramesPerCall``) planar frames; `final` marks the end of
    /// the input (then retrieve until ``availableFrames`` is 0). Returns frames accepted (fewer
    /// only while bypassed with a full pass-through FIFO: retrieve first).
    /// Thread safety: processing thread only; real-time safe.
    @discardableResult
    public func process(_ input: UnsafePointer<UnsafePointer<Float>>, frames: Int, final: Bool = false) -> Int {
        pickUp()
        let n = max(0, min(frames, maximumFramesPerCall))
        if passThrough {
            let take = min(n, fifoCapacity - fifoCount)
            for c in 0..<channels { (fifo + c * fifoCapacity + fifoCount).update(from: input[c], count: take) }
            fifoCount += take
            if final && take == n { finished = true }
            return take
        }
        if algorithm == .varispeed {
            return varispeedPush(input, n, final: final)
        }
        guard let state else { return 0 }
        expectedOutput += Double(n) / appliedRate
        for c in 0..<channels { inPointers[c] = input[c] }
        rubberband_process(state, inPointers, UInt32(n), final ? 1 : 0)
        if final { finished = true }
        return n
    }

    /// Frames ready to retrieve.
    /// Thread safety: processing thread only.
    public var availableFrames: Int {
        if fifoCount > 0 || passThrough || algorithm == .varispeed { return fifoCount }
        guard let state else { return 0 }
        let a = Int(rubberband_available(state))
        if a < 0 { return finished ? outputLeft : 0 }
        return min(max(0, a - dropOutput), outputLeft)
    }

    /// True once input was marked final and all output was retrieved.
    /// Thread safety: processing thread only.
    public var isFinished: Bool {
        guard finished, fifoCount == 0 else { return false }
        if passThrough || algorithm == .varispeed { return true }
        return outputLeft == 0
    }

    /// Output still due: unlimited until the final input, then up to the expected length.
    private var outputLeft: Int {
        finished ? max(0, Int(expectedOutput.rounded()) - producedOutput) : Int.max
    }

    /// Input frames the engine wants before it can produce more output.
    /// Thread safety: processing thread only.
    public var framesRequired: Int {
        if passThrough || algorithm == .varispeed || fifoCount > 0 { return 0 }
        guard let state else { return 0 }
        return Int(rubberband_get_samples_required(state))
    }

    /// Moves up to `maxFrames` output frames into `output` (planar); returns frames written.
    /// Thread safety: processing thread only; real-time safe.
    public func retrieve(into output: UnsafePointer<UnsafeMutablePointer<Float>>, maxFrames: Int) -> Int {
        let want = max(0, min(maxFrames, maximumFramesPerCall))
        if fifoCount > 0 || passThrough || algorithm == .varispeed {
            let n = min(want, fifoCount)
            guard n > 0 else { return 0 }
            for c in 0..<channels {
                let base = fifo + c * fifoCapacity
                output[c].update(from: base, count: n)
                (base).update(from: base + n, count: fifoCount - n)
            }
            fifoCount -= n
            return n
        }
        guard let state else { return 0 }
        // Drop the engine's start delay so output lines up with input.
        while dropOutput > 0 {
            let a = Int(rubberband_available(state))
            if a < 0 { dropOutput = 0; break }
            guard a > 0 else { return 0 }
            let d = min(dropOutput, a, maximumFramesPerCall)
            for c in 0..<channels { outPointers[c] = scratch + c * maximumFramesPerCall }
            let got = Int(rubberband_retrieve(state, outPointers, UInt32(d)))
            if got == 0 { return 0 }
            dropOutput -= got
        }
        let a = Int(rubberband_available(state))
        if a < 0 && finished {
            // The engine is done but ended a few hundred frames short of input / rate (R2 loses
            // part of its last window): complete the expected length with silence.
            let n = min(want, outputLeft)
            for c in 0..<channels { output[c].update(repeating: 0, count: n) }
            producedOutput += n
            return n
        }
        let n = min(want, max(0, a), outputLeft)
        guard n > 0 else { return 0 }
        for c in 0..<channels { outPointers[c] = output[c] }
        let got = Int(rubberband_retrieve(state, outPointers, UInt32(n)))
        producedOutput += got
        return got
    }

    /// Pull mode: fills `frames` output frames, calling `source` for input (planar buffers of
    /// ``maximumFramesPerCall`` frames; it returns frames written, 0 at the end of the input).
    /// Returns frames written (fewer only at the end).
    /// Thread safety: processing thread only; real-time safe if `source` is.
    public func render(into output: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int,
                       source: (UnsafePointer<UnsafeMutablePointer<Float>>, Int) -> Int) -> Int {
        var done = 0
        var stalls = 0
        let total = max(0, frames)
        while done < total {
            for c in 0..<channels { renderOut[c] = output[c] + done }
            let got = retrieve(into: renderOut, maxFrames: total - done)
            done += got
            if done >= total { break }
            if got > 0 { continue }
            if finished {
                if isFinished { break }
                // Real-time mode finishes its tail over further final calls.
                stalls += 1
                if stalls > 4096 { break }
                process(pullIn, frames: 0, final: true)
                continue
            }
            // Need input.
            let want = max(1, min(maximumFramesPerCall, framesRequired == 0 ? min(maximumFramesPerCall, total - done) : framesRequired))
            let n = max(0, min(want, source(UnsafePointer(pullOut), want)))
            process(pullIn, frames: n, final: n == 0)
        }
        return done
    }

    // MARK: Varispeed

    /// Writes the output frames whose position lies in [h1, h2), between the two middle points of
    /// the history, into the FIFO (cubic Catmull-Rom), advancing the position by `step` per frame;
    /// then moves the position on by one input frame. Stops early when the FIFO is full.
    @inline(__always)
    private func interpolateSpan(step: Double) {
        while varPosition < 1 && fifoCount < fifoCapacity {
            let t = Float(varPosition)
            for c in 0..<channels {
                let h = history + c * 4
                let y0 = h[0], y1 = h[1], y2 = h[2], y3 = h[3]
                let a = -0.5 * y0 + 1.5 * y1 - 1.5 * y2 + 0.5 * y3
                let b = y0 - 2.5 * y1 + 2 * y2 - 0.5 * y3
                let cc = -0.5 * y0 + 0.5 * y2
                fifo[c * fifoCapacity + fifoCount] = ((a * t + b) * t + cc) * t + y1
            }
            fifoCount += 1
            varPosition += step
        }
        varPosition -= 1
    }

    /// Resamples by rate·2^(cents/1200) with 4-point cubic (Catmull-Rom) interpolation into the FIFO.
    private func varispeedPush(_ input: UnsafePointer<UnsafePointer<Float>>, _ n: Int, final: Bool) -> Int {
        let step = appliedRate * pow(2, appliedPitch / 1200)
        var i = 0
        // history[c*4 + k] holds x[-3+k] relative to the next input frame, k = 0...3.
        while i < n {
            if fifoCount >= fifoCapacity { break }
            for c in 0..<channels {
                let h = history + c * 4
                h[0] = h[1]; h[1] = h[2]; h[2] = h[3]; h[3] = input[c][i]
            }
            i += 1
            // The first output frame is x[0], once x[0] is h[1] (two frames later).
            if varWarmup > 0 {
                varWarmup -= 1
                continue
            }
            // Output frames while the position lies in [h1, h2): between the two middle points.
            interpolateSpan(step: step)
        }
        if final && i == n {
            // Two frames of the input are still ahead of the interpolation point: flush them.
            for _ in 0..<2 {
                for c in 0..<channels {
                    let h = history + c * 4
                    h[0] = h[1]; h[1] = h[2]; h[2] = h[3]; h[3] = 0
                }
                interpolateSpan(step: step)
            }
            finished = true
        }
        return i
    }
}
