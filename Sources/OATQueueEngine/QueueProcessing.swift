import OATCore
import OATProcessing
import Synchronization

// `AudioQueueProcessingTapFlags` (`.preEffects`, `.postEffects`, `.siphon`, `.startOfStream`,
// `.endOfStream`) is Apple's C option set (COATCoreAudioTypes, re-exported by OATCore), shared with
// the compat API's C callback type.

/// A processing tap on an output queue (Apple's `AudioQueueProcessingTapRef`).
///
/// The queue calls the tap's callback on its feeder thread (never the device thread) with a
/// frame count and planar Float32 buffers; the callback calls ``getSourceAudio(frames:into:)``
/// to receive that many frames of the queue's audio (at the tap's position), may change them,
/// and returns the frames it produced. A siphon tap's output is ignored. Audio arrives in chunks
/// of at most ``maximumFrames`` frames; every frame of the stream passes the tap exactly once.
///
/// Thread safety: the callback runs on the queue's feeder thread; ``getSourceAudio(frames:into:)``
/// may only be called from inside it.
public final class AudioQueueProcessingTap: @unchecked Sendable {
    /// The tap's callback: (tap, frames requested, sample time of the first frame, planar
    /// output buffers of ``maximumFrames`` frames, flags in/out) -> frames produced.
    public typealias Callback = @Sendable (AudioQueueProcessingTap, Int, AudioTimeStamp,
                                           UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>,
                                           inout AudioQueueProcessingTapFlags) -> Int
    /// Position and siphon flags.
    public let flags: AudioQueueProcessingTapFlags
    /// The most frames one callback sees.
    public let maximumFrames: Int
    /// The format of the tap's buffers: Float32, non-interleaved, the queue's device rate and channels.
    public let processingFormat: AudioStreamBasicDescription
    let callback: Callback
    let channels: Int
    // Feeder-side: the chunk the current callback may take.
    fileprivate var source: UnsafeMutablePointer<Float>
    fileprivate var sourceFrames = 0
    fileprivate var sourceTaken = 0
    fileprivate var sourceFlags: AudioQueueProcessingTapFlags = []
    fileprivate var sourceTime: Double = 0
    fileprivate let output: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>
    fileprivate var inCallback = false

    init(flags: AudioQueueProcessingTapFlags, maximumFrames: Int, channels: Int, sampleRate: Double, callback: @escaping Callback) {
        self.flags = flags
        self.maximumFrames = maximumFrames
        self.channels = channels
        self.callback = callback
        var asbd = AudioStreamBasicDescription.linearPCM(sampleRate: sampleRate, channels: UInt32(channels), bitsPerChannel: 32, isFloat: true)
        asbd.formatFlags.insert(.isNonInterleaved)
        asbd.bytesPerFrame = 4
        asbd.bytesPerPacket = 4
        processingFormat = asbd
        source = .allocate(capacity: maximumFrames * channels)
        source.initialize(repeating: 0, count: maximumFrames * channels)
        output = .allocate(capacity: channels)
        for c in 0..<channels {
            let p = UnsafeMutablePointer<Float>.allocate(capacity: maximumFrames)
            p.initialize(repeating: 0, count: maximumFrames)
            output.baseAddress!.advanced(by: c).initialize(to: p)
        }
    }

    deinit {
        source.deallocate()
        for p in output { p.deallocate() }
        output.deallocate()
    }

    /// Inside the callback: copies up to `frames` frames of the queue's audio at this tap's
    /// position into `buffers` (planar), returning the frames given, their flags and the sample
    /// time of the first (Apple's `AudioQueueProcessingTapGetSourceAudio`). Outside the
    /// callback it returns 0 frames.
    public func getSourceAudio(frames: Int, into buffers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>)
        -> (frames: Int, flags: AudioQueueProcessingTapFlags, time: AudioTimeStamp) {
        guard inCallback else { return (0, [], AudioTimeStamp()) }
        let n = max(0, min(frames, sourceFrames - sourceTaken))
        let t = AudioTimeStamp(sampleTime: sourceTime + Double(sourceTaken), hostTime: 0, rateScalar: 1, flags: .sampleTimeValid)
        for c in 0..<min(channels, buffers.count) {
            buffers[c].update(from: source + c * maximumFrames + sourceTaken, count: n)
        }
        sourceTaken += n
        return (n, sourceFlags, t)
    }
}

/// Time-pitch settings of an output queue (Apple's `kAudioQueueProperty_EnableTimePitch`,
/// `_TimePitchAlgorithm`, `_TimePitchBypass`, `kAudioQueueParam_PlayRate`, `_Pitch`).
struct QueueTimePitchSettings: Sendable, Equatable {
    var enabled = false
    var algorithm: TimePitchAlgorithm = .spectral
    var bypass = false
    var rate: Float = 1
    var pitch: Float = 0
}

/// The feeder-side stages between the decoder and the play ring: pre-effects taps, time-pitch,
/// post-effects taps. With none of them active, frames pass straight through.
///
/// Thread safety: the queue's feeder thread only (it allocates only when the configuration changes).
final class QueueProcessingChain {
    let channels: Int
    let sampleRate: Double
    let chunk: Int
    private var timePitch: TimePitchProcessor?
    private var settings = QueueTimePitchSettings()
    private var preTaps: [AudioQueueProcessingTap] = []
    private var postTaps: [AudioQueueProcessingTap] = []
    /// Planar FIFOs: decoded audio waiting for the pre stage, processed audio waiting for the post stage.
    private var pre: [[Float]]
    private var post: [[Float]]
    private var preTime: Double = 0
    private var postTime: Double = 0
    private var preStarted = false
    private var postStarted = false
    /// The work buffers of the stages (`chunk` * 9 frames per channel each, 72 KB at stereo),
    /// allocated when a stage is first configured: a queue that only ever passes audio through
    /// (afplay, a stream) does not keep 147 KB of zeroed memory resident for them.
    private struct Buffers {
        let planarIn: UnsafeMutablePointer<UnsafePointer<Float>>
        let planarOut: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        let work: UnsafeMutablePointer<Float>
        let interleaved: UnsafeMutablePointer<Float>
    }
    private var buffers: Buffers?
    private var planarIn: UnsafeMutablePointer<UnsafePointer<Float>> { buffers!.planarIn }
    private var planarOut: UnsafeMutablePointer<UnsafeMutablePointer<Float>> { buffers!.planarOut }
    private var work: UnsafeMutablePointer<Float> { buffers!.work }
    private var interleaved: UnsafeMutablePointer<Float> { buffers!.interleaved }

    init(channels: Int, sampleRate: Double, chunk: Int = 1024) {
        self.channels = channels
        self.sampleRate = sampleRate
        self.chunk = chunk
        pre = Array(repeating: [], count: channels)
        post = Array(repeating: [], count: channels)
    }

    deinit {
        guard let b = buffers else { return }
        b.work.deallocate()
        b.interleaved.deallocate()
        b.planarIn.deallocate()
        b.planarOut.deallocate()
    }

    /// Allocates the work buffers (once, when a stage is first configured).
    private func allocateBuffers() {
        guard buffers == nil else { return }
        let work = UnsafeMutablePointer<Float>.allocate(capacity: chunk * 9 * channels)
        work.initialize(repeating: 0, count: chunk * 9 * channels)
        let interleaved = UnsafeMutablePointer<Float>.allocate(capacity: chunk * 9 * channels)
        interleaved.initialize(repeating: 0, count: chunk * 9 * channels)
        let planarIn = UnsafeMutablePointer<UnsafePointer<Float>>.allocate(capacity: channels)
        let planarOut = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
        for c in 0..<channels {
            planarIn.advanced(by: c).initialize(to: UnsafePointer(work + c * chunk * 9))
            planarOut.advanced(by: c).initialize(to: work + c * chunk * 9)
        }
        buffers = Buffers(planarIn: planarIn, planarOut: planarOut, work: work, interleaved: interleaved)
    }

    /// Whether the work buffers were allocated (a stage was configured).
    var hasWorkBuffers: Bool { buffers != nil }

    /// True when audio passes straight through.
    var isIdle: Bool { preTaps.isEmpty && postTaps.isEmpty && (timePitch == nil || settings.bypass) && pre[0].isEmpty && post[0].isEmpty }

    /// Takes the current configuration (between buffers). Returns why the time-pitch stage
    /// could not be set up (it is then left out), nil when it runs or is off.
    @discardableResult
    func configure(_ s: QueueTimePitchSettings, taps: [AudioQueueProcessingTap]) -> AudioError? {
        var failure: AudioError?
        // Every stage runs in the work buffers; once allocated they stay (audio held in `pre`
        // or `post` is still processed after the stages are turned off).
        if s.enabled || !taps.isEmpty { allocateBuffers() }
        if s.enabled {
            if timePitch == nil || timePitch!.algorithm != s.algorithm {
                do throws(AudioError) {
                    timePitch = try TimePitchProcessor(sampleRate: sampleRate, channels: channels, algorithm: s.algorithm, maximumFramesPerCall: chunk)
                } catch {
                    timePitch = nil
                    failure = error
                }
            }
            try? timePitch?.setRate(Double(s.rate))
            try? timePitch?.setPitch(cents: Double(s.pitch))
            timePitch?.bypass = s.bypass
        } else {
            timePitch = nil
        }
        settings = s
        preTaps = taps.filter { !$0.flags.contains(.postEffects) }
        postTaps = taps.filter { $0.flags.contains(.postEffects) }
        return failure
    }

    /// Drops everything held (reset, stop).
    func reset() {
        for c in 0..<channels { pre[c].removeAll(keepingCapacity: true); post[c].removeAll(keepingCapacity: true) }
        timePitch?.reset()
        preTime = 0
        postTime = 0
        preStarted = false
        postStarted = false
    }

    /// Pushes interleaved frames; `emit` receives interleaved output and returns false to abandon
    /// (reset/stop); returns false then.
    func push(_ frames: UnsafeBufferPointer<Float>, emit: (UnsafeBufferPointer<Float>) -> Bool) -> Bool {
        if isIdle { return emit(frames) }
        let n = frames.count / channels
        for c in 0..<channels {
            pre[c].reserveCapacity(pre[c].count + n)
            for i in 0..<n { pre[c].append(frames[i * channels + c]) }
        }
        return run(final: false, emit: emit)
    }

    /// Flushes what the stages hold at the end of the stream.
    func finish(emit: (UnsafeBufferPointer<Float>) -> Bool) -> Bool {
        if isIdle { return true }
        return run(final: true, emit: emit)
    }

    /// One stage's step: moves the next chunk (at most ``chunk`` frames) of the stage's input
    /// into the work buffers and runs the stage's taps over it, flagging the first and the last
    /// chunk; returns the frames the taps produced (in the work buffers).
    private func runTaps(_ taps: [AudioQueueProcessingTap], on input: inout [[Float]], started: inout Bool,
                         time: inout Double, final: Bool) -> Int {
        let n = min(chunk, input[0].count)
        for c in 0..<channels {
            input[c].withUnsafeBufferPointer { (work + c * chunk * 9).update(from: $0.baseAddress!, count: n) }
            input[c].removeFirst(n)
        }
        var flags: AudioQueueProcessingTapFlags = started ? [] : .startOfStream
        if final && input[0].isEmpty { flags.insert(.endOfStream) }
        started = true
        let produced = applyTaps(taps, frames: n, time: time, flags: flags)
        time += Double(n)
        return produced
    }

    private func run(final: Bool, emit: (UnsafeBufferPointer<Float>) -> Bool) -> Bool {
        // Pre stage: chunks from `pre` through the pre taps, then time-pitch, into `post`.
        var finalDone = false
        while pre[0].count >= chunk || (final && !pre[0].isEmpty) {
            let produced = runTaps(preTaps, on: &pre, started: &preStarted, time: &preTime, final: final)
            finalDone = final && pre[0].isEmpty
            stretch(produced, final: finalDone)
        }
        if final && !finalDone { stretch(0, final: true) }
        // Post stage.
        while post[0].count >= chunk || (final && !post[0].isEmpty) {
            let produced = runTaps(postTaps, on: &post, started: &postStarted, time: &postTime, final: final)
            for i in 0..<produced {
                for c in 0..<channels { interleaved[i * channels + c] = work[c * chunk * 9 + i] }
            }
            if !emit(UnsafeBufferPointer(start: interleaved, count: produced * channels)) { return false }
        }
        return true
    }

    /// Runs `work` (n frames) through time-pitch (or not) into `post`.
    private func stretch(_ n: Int, final: Bool) {
        guard let tp = timePitch else {
            for c in 0..<channels { post[c].append(contentsOf: UnsafeBufferPointer(start: work + c * chunk * 9, count: n)) }
            return
        }
        if n > 0 || final {
            tp.process(planarIn, frames: n, final: final)
        }
        var guardCount = 0
        while true {
            let got = tp.retrieve(into: planarOut, maxFrames: chunk)
            if got > 0 {
                for c in 0..<channels { post[c].append(contentsOf: UnsafeBufferPointer(start: work + c * chunk * 9, count: got)) }
                continue
            }
            if !final || tp.isFinished { break }
            guardCount += 1
            if guardCount > 4096 { break }
            tp.process(planarIn, frames: 0, final: true)
        }
        if final { tp.reset() }
    }

    /// Runs `frames` of `work` through `taps` in order; returns the frames that come out.
    private func applyTaps(_ taps: [AudioQueueProcessingTap], frames: Int, time: Double, flags: AudioQueueProcessingTapFlags) -> Int {
        var n = frames
        for tap in taps {
            var done = 0
            var out = 0
            while done < n {
                let k = min(tap.maximumFrames, n - done)
                for c in 0..<channels { (tap.source + c * tap.maximumFrames).update(from: work + c * chunk * 9 + done, count: k) }
                tap.sourceFrames = k
                tap.sourceTaken = 0
                tap.sourceFlags = flags
                tap.sourceTime = time + Double(done)
                tap.inCallback = true
                var f = flags.union(tap.flags.intersection([.preEffects, .postEffects, .siphon]))
                let produced = max(0, min(k, tap.callback(tap, k, AudioTimeStamp(sampleTime: time + Double(done), hostTime: 0, rateScalar: 1, flags: .sampleTimeValid), tap.output, &f)))
                tap.inCallback = false
                if !tap.flags.contains(.siphon) {
                    // Write the tap's output back in place (out <= done: never overtakes the input).
                    for c in 0..<channels { (work + c * chunk * 9 + out).update(from: tap.output[c], count: produced) }
                    out += produced
                } else {
                    out += k
                }
                done += k
            }
            n = out
        }
        return n
    }
}
