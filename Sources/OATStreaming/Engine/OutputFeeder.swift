import OATConversion
import OATCore
import OATNetwork
import OATDevices
import OATFiles
import OATQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// When playback starts, stops for an underrun and starts again: the start and rebuffer targets
/// (``BufferingPolicy/startSeconds``, ``BufferingPolicy/rebufferSeconds``), grown after each
/// underrun up to ``BufferingPolicy/maximumTargetSeconds``.
///
/// A value the decoder thread owns: it is told what is decoded and what the queue reports and
/// answers what to do; the decoder thread carries that out on the queue.
struct BufferingController {
    enum Phase { case starting, playing, rebuffering, ending }
    var phase = Phase.starting
    private(set) var startTarget: Double
    private(set) var rebufferTarget: Double
    let growth: Double
    let maximumTarget: Double
    /// Underruns that paused playback to rebuffer.
    private(set) var underruns = 0
    /// The queue's underrun count as last seen.
    var lastUnderrunCount = 0

    init(policy: BufferingPolicy) {
        startTarget = policy.startSeconds
        rebufferTarget = policy.rebufferSeconds
        growth = policy.growthAfterUnderrun
        maximumTarget = policy.maximumTargetSeconds
    }

    /// Waiting for audio before (re)starting the queue.
    var isBuffering: Bool { phase == .starting || phase == .rebuffering }

    /// The decoded seconds to wait for in this phase.
    var target: Double { phase == .starting ? startTarget : rebufferTarget }

    /// Whether the queue may start: `decoded` seconds of audio wait in the queue; `full` when
    /// every queue buffer is in use; `inputDone` when no more bytes will come; `undecoded` the
    /// seconds of received bytes not decoded yet (nil when they cannot be estimated or cannot
    /// grow: an unknown bit rate, the network thread at its byte limit). Decoded audio decides
    /// (a queue started on the bytes of a burst the decoder had not been through yet began with
    /// one frame in its ring and underran at once), up to what the queue holds: once it is
    /// full, the rest of the target is counted in received bytes, which the decoder turns into
    /// audio as the ring drains (the play ring holds less than the grown targets).
    func readyToStart(decoded: Double, full: Bool, inputDone: Bool, undecoded: Double? = nil) -> Bool {
        guard isBuffering else { return false }
        if decoded >= target || (inputDone && decoded > 0) { return true }
        guard full else { return false }
        guard let undecoded else { return true }
        return decoded + undecoded >= target
    }

    /// Whether the play ring holds what the start counted on: `ring` seconds in the ring,
    /// `decoded` seconds enqueued and not played, `pendingBuffers` enqueued buffers the queue's
    /// thread has not copied into the ring yet. Everything enqueued has reached the ring, or the
    /// ring alone holds the start target (capped at ``ringStartCap``: a grown target beyond what
    /// the ring holds is met in buffers and bytes, see ``readyToStart(decoded:full:inputDone:undecoded:)``).
    static func ringCovers(_ ring: Double, decoded: Double, target: Double, pendingBuffers: Int) -> Bool {
        pendingBuffers == 0 || ring >= min(decoded, target, ringStartCap)
    }

    /// The most the ring must hold before a start when buffers are still waiting to be copied
    /// (the live ring is 0.7 s).
    static let ringStartCap = 0.5

    /// The progress shown while buffering, 0...1 in steps of 0.01, for `buffered` seconds
    /// (decoded audio plus an estimate for the bytes not decoded yet).
    func progress(buffered: Double) -> Double {
        (min(1, buffered / max(0.001, target)) * 100).rounded() / 100
    }

    /// The queue reports `count` underruns in all, with `aheadFrames` enqueued but not played
    /// at `rate`. True when playback must pause to rebuffer: the ring ran dry mid-stream
    /// (not at the end of the input); the targets grow.
    mutating func underrun(count: Int, paused: Bool, inputDone: Bool, aheadFrames: Int64, rate: Double) -> Bool {
        guard phase == .playing, !paused, count > lastUnderrunCount else { return false }
        lastUnderrunCount = count
        guard !inputDone, aheadFrames < Int64(0.05 * rate) else { return false }
        underruns += 1
        phase = .rebuffering
        startTarget = min(maximumTarget, startTarget * growth)
        rebufferTarget = min(maximumTarget, rebufferTarget * growth)
        return true
    }

    /// Whether a source silent for `secondsSinceActivity` has stalled: only while buffering
    /// (before the queue first started, or rebuffering) and past `timeout`.
    func stalled(queueStarted: Bool, secondsSinceActivity: Double, timeout: Double) -> Bool {
        (!queueStarted || phase == .rebuffering) && secondsSinceActivity > timeout
    }
}

/// Free buffers of an output queue: the queue's thread returns them, the decoder thread takes
/// them. Generic so that the hand-over is tested with plain objects, without a queue.
final class BufferPool<Buffer: AnyObject & Sendable>: Sendable {
    private let buffers = Locked<[Buffer]>([])
    /// The decoder is waiting for a free buffer: only then does a returned buffer wake it
    /// (otherwise a steady stream woke it for every buffer the queue handed back).
    private let waiting = Atomic<Bool>(false)

    /// Hands `buffer` back (any thread); calls `wake` when the taker is waiting for one.
    func put(_ buffer: Buffer, wake: () -> Void = {}) {
        buffers.withLock { $0.append(buffer) }
        if waiting.load(ordering: .sequentiallyConsistent) { wake() }
    }

    /// Takes a free buffer, calling `wait` while none is free (it returns on a wake-up or a
    /// timeout, or throws to give up).
    func take(wait: () throws -> Void) rethrows -> Buffer {
        while true {
            if let b = buffers.withLock({ $0.popLast() }) { return b }
            // Announce the wait, then look again: a buffer returned in between is either seen
            // here or calls the wake-up.
            waiting.store(true, ordering: .sequentiallyConsistent)
            defer { waiting.store(false, ordering: .sequentiallyConsistent) }
            if let b = buffers.withLock({ $0.popLast() }) { return b }
            try wait()
        }
    }

    /// No buffer is free (all are queued).
    var isEmpty: Bool { buffers.withLock { $0.isEmpty } }
    /// Free buffers.
    var count: Int { buffers.withLock { $0.count } }

    func removeAll() { buffers.withLock { $0.removeAll() } }
}

/// The output feeder: the ``AudioOutputQueue``, its buffer pool and PCM staging buffer, the
/// frames enqueued since the last reset, and the crossfade held back before the queue.
///
/// Decoder thread only. It decides nothing about when playback starts (``BufferingController``
/// and the decoder thread do): it opens the queue for a format and moves PCM into it, waiting
/// for free buffers through the `wait` the decoder thread passes (its tick).
final class OutputFeeder {
    /// The output format the queue was opened with (interleaved Float32 at the device rate).
    struct Plan: Equatable {
        var sampleRate: Double
        var channels: Int
        /// Frames per queue buffer: about 46 ms at the rate, so that the ten buffers hold the
        /// same time at every rate (2048 frames were 0.46 s at 44.1 kHz, 0.11 s at 192 kHz).
        var framesPerBuffer: Int

        init(sampleRate: Double, channelsPerFrame: UInt32) {
            self.sampleRate = sampleRate
            channels = Int(min(8, max(1, channelsPerFrame)))
            framesPerBuffer = max(64, Int((sampleRate * 2048 / 44100).rounded(.up)))
        }

        var format: AudioStreamBasicDescription {
            .linearPCM(sampleRate: sampleRate, channels: UInt32(channels), bitsPerChannel: 32, isFloat: true)
        }

        /// Whether a queue opened on this plan before the stream's format was known can play
        /// `format` (with `hasLayout` when the stream names a channel layout the device must take).
        func fits(_ format: AudioStreamBasicDescription, hasLayout: Bool) -> Bool {
            format.sampleRate == sampleRate && Plan(sampleRate: format.sampleRate, channelsPerFrame: format.channelsPerFrame).channels == channels
                && (!hasLayout || channels <= 2)
        }
    }

    /// Buffers in the pool.
    static let bufferCount = 10

    private(set) var queue: AudioOutputQueue?
    /// A queue opened by ``openSpeculatively(_:)`` before the stream's format was known.
    private(set) var isSpeculative = false
    private(set) var plan = Plan(sampleRate: 44100, channelsPerFrame: 2)
    let pool = BufferPool<QueueBuffer>()
    private var pcm: AudioPCMBuffer?
    /// Frames enqueued since the queue was created or last reset.
    private(set) var enqueuedFrames: Int64 = 0
    /// Frames the device played before the queue's count was last reset (seek, skip).
    private(set) var playedBeforeReset: Int64 = 0
    /// Crossfades between items (set up with the queue, for its channel count).
    private(set) var crossfade = CrossfadeMixer(channels: 2)
    /// ``BufferingPolicy/crossfadeSeconds``.
    let crossfadeSeconds: Double
    /// The play ring of the next queue opened: ``BufferingPolicy/liveRingSeconds`` for a live
    /// first item, ``onDemandRingSeconds`` otherwise.
    var ringSeconds = OutputFeeder.onDemandRingSeconds
    /// The play ring for an on-demand first item: the decoder parses about this far ahead, so a
    /// seek forward inside it lands on the exact frame.
    static let onDemandRingSeconds = 2.0

    init(crossfadeSeconds: Double) {
        self.crossfadeSeconds = crossfadeSeconds
    }

    var deviceRate: Double { plan.sampleRate }
    var channels: Int { plan.channels }
    var format: AudioStreamBasicDescription { plan.format }
    /// Frames of a crossfade at the device rate (0: none).
    var crossfadeFrames: Int { Int(min(30, max(0, crossfadeSeconds)) * deviceRate) }

    /// Opens the queue for `plan`; `returned` is called on the queue's thread when a buffer came
    /// back and the feeder waits for one; `events` gets the queue's events.
    func open(_ plan: Plan, layout labels: [ChannelLabel]?, output: @escaping AudioOutputDeviceFactory,
              returned: @escaping @Sendable () -> Void, events: @escaping @Sendable (AudioOutputQueueEvent) -> Void) throws {
        self.plan = plan
        let pool = self.pool
        let q = try AudioOutputQueue(format: plan.format, deviceFormat: AudioDeviceFormat(sampleRate: plan.sampleRate, channels: plan.channels, channelLabels: labels),
                                     ringSeconds: ringSeconds, bufferReturn: .whenCopied, output: output) { _, buffer in
            pool.put(buffer, wake: returned)
        }
        for _ in 0..<Self.bufferCount {
            pool.put(try q.allocateBuffer(byteCapacity: plan.framesPerBuffer * plan.channels * 4))
        }
        q.eventHandler = events
        pcm = try AudioPCMBuffer(format: plan.format, frameCapacity: plan.framesPerBuffer)
        crossfade = CrossfadeMixer(channels: plan.channels)
        queue = q
    }

    /// Marks the open queue as opened before the stream's format was known.
    func markSpeculative() { isSpeculative = true }

    /// The stream's format is known: true when the speculative queue (if any) stays; otherwise
    /// it is dropped, to be opened again for `format`.
    func confirm(_ format: AudioStreamBasicDescription, hasLayout: Bool) -> Bool {
        guard isSpeculative else { return queue != nil }
        isSpeculative = false
        if plan.fits(format, hasLayout: hasLayout) { return true }
        drop()
        return false
    }

    /// Disposes of a queue nothing was enqueued to, and its buffers.
    func drop() {
        queue?.dispose(immediately: true)
        queue = nil
        pcm = nil
        pool.removeAll()
    }

    /// Reads PCM from `converter` into the staging buffer, at most one queue buffer's worth;
    /// the frames read (0 when it has none).
    func read(from converter: AudioConverter) -> Int {
        guard let pcm else { return 0 }
        return converter.read(into: pcm)
    }

    /// The staging buffer's first `frames` frames, interleaved.
    func staged(frames: Int) -> UnsafeBufferPointer<Float> {
        guard let pcm else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(rebasing: UnsafeRawBufferPointer(pcm.mutableBytes(0)).bindMemory(to: Float.self)[0..<(frames * channels)])
    }

    /// Fills `buffer` (taken from the pool) with `frames` frames of `bytes` and enqueues it;
    /// the buffer goes back to the pool when the queue refuses it.
    private func send(_ buffer: QueueBuffer, _ bytes: UnsafeRawBufferPointer, frames: Int) throws {
        guard let queue else { pool.put(buffer); return }
        _ = buffer.fill(bytes)
        do {
            try queue.enqueue(buffer)
        } catch {
            pool.put(buffer)
            throw error
        }
        enqueuedFrames += Int64(frames)
    }

    /// Enqueues the first `frames` frames of the staging buffer in a free queue buffer (calling
    /// `wait` while none is free).
    func enqueueStaged(frames: Int, wait: () throws -> Void) throws {
        guard let pcm, queue != nil else { return }
        let buffer = try pool.take(wait: wait)
        try send(buffer, UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(pcm.mutableBytes(0))[0..<(frames * channels * 4)]), frames: frames)
    }

    /// Holds the first `frames` staged frames for the crossfade (mixing in the previous item's
    /// tail); the frames held beyond the fade's length, to be enqueued.
    func holdStaged(frames: Int) -> Int {
        crossfade.add(staged(frames: frames), frames: frames)
        return crossfade.heldFrames - crossfadeFrames
    }

    /// Enqueues the oldest `frames` held frames, a queue buffer at a time (so an interruption
    /// leaves the rest held); `enqueued` is told each buffer's frames.
    func enqueueHeld(frames: Int, wait: () throws -> Void, enqueued: (Int) -> Void) throws {
        guard queue != nil else { return }
        var left = min(frames, crossfade.heldFrames)
        while left > 0 {
            let n = min(left, plan.framesPerBuffer)
            // The buffer first: the wait may look at the crossfade.
            let buffer = try pool.take(wait: wait)
            try crossfade.takeOldest(frames: n) { bytes in try send(buffer, bytes, frames: n) }
            left -= n
            enqueued(n)
        }
    }

    /// An item has ended and another follows: its held frames become the tail the next item
    /// fades in over.
    func handOverFadeTail() {
        guard crossfadeFrames > 0 else { return }
        crossfade.handOver()
    }

    /// Makes whatever crossfade state is held ready to play out; the frames held.
    func prepareFlush() -> Int {
        crossfade.prepareFlush()
        return crossfade.heldFrames
    }

    /// Frames enqueued that the device has not played (`played`: the queue's count).
    func framesAhead(played: Int64) -> Int64 { max(0, enqueuedFrames - played) }

    /// Drops everything queued and held: the count restarts at 0, after adding what the device
    /// played (`played`, at most what was enqueued) to ``playedBeforeReset``.
    func reset(played: Int64) {
        guard let queue else { return }
        playedBeforeReset += min(enqueuedFrames, played)
        queue.reset()
        enqueuedFrames = 0
        crossfade.clear()
    }

    /// Sets the volume and its ramp time (clamped to 0...1 and 0...60 s).
    func setVolume(_ volume: Float, fade: Float) {
        guard let queue else { return }
        try? queue.setParameter(.volumeRampTime, max(0, min(60, fade)))
        try? queue.setParameter(.volume, max(0, min(1, volume)))
    }

    func dispose() {
        queue?.dispose(immediately: true)
    }
}

/// Sequencing the output feeder: opening the queue, moving decoded PCM into it, and when
/// playback starts.
extension DecoderThread {
    var queue: AudioOutputQueue? { feeder.queue }
    var deviceRate: Double { feeder.deviceRate }
    var enqueuedFrames: Int64 { feeder.enqueuedFrames }

    /// Opens the output once the first item's source has answered, so that the device's set-up
    /// (a PulseAudio context, an ALSA PCM) overlaps the wait for the first audio bytes (an
    /// Icecast server sends its burst about 0.2 s after its response head) instead of following
    /// them; not earlier, where it would compete with loading libcurl and connecting. A queue at
    /// 44.1 kHz stereo (what most streams are), replaced in ``ensureQueue(for:layout:)`` before
    /// anything is enqueued when the stream turns out to be another rate or channel count.
    func openOutputEarly() {
        guard queue == nil, policy.opensOutputEarly else { return }
        do {
            try ensureQueue(for: .linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 32, isFloat: true))
            try queue?.prime(frames: 0)
            feeder.markSpeculative()
            debug("output opened before the first bytes")
        } catch {
            // Opened again (and its error reported) once the format is known.
            debug("output not opened early: \(error)")
            feeder.drop()
        }
    }

    func ensureQueue(for format: AudioStreamBasicDescription, layout: ChannelLayout? = nil) throws {
        let labels = layout?.decodedLabels(for: format)
        if feeder.isSpeculative {
            if feeder.confirm(format, hasLayout: labels != nil) { return }
            debug("output reopened for \(format.sampleRate) Hz, \(format.channelsPerFrame) channels")
        }
        guard queue == nil else { return }
        let plan = OutputFeeder.Plan(sampleRate: format.sampleRate, channelsPerFrame: format.channelsPerFrame)
        feeder.ringSeconds = (pump.current?.isLive ?? false) ? policy.liveRingSeconds : OutputFeeder.onDemandRingSeconds
        let wake = engine.wake
        let engine = self.engine
        try feeder.open(plan, layout: format.channelsPerFrame == UInt32(plan.channels) ? labels : nil, output: engine.output,
                        returned: { wake.signal() }) { event in
            switch event {
            case .ended:
                engine.queueEnded.store(true, ordering: .releasing)
                wake.signal()
            case .underrun:
                wake.signal()
            case .device(.lost(let reason)):
                engine.deviceLost.withLock { if $0 == nil { $0 = (engine.clock.now(), reason) } }
                wake.signal()
            case .device(.restored):
                engine.deviceLost.withLock { $0 = nil }
            default:
                break
            }
        }
        applyVolume()
    }

    /// Moves decoded PCM from the converter into queue buffers (blocking while the queue is full).
    func drainConverter(_ item: ItemDecoder, _ converter: AudioConverter) throws {
        guard queue != nil else { return }
        let fading = feeder.crossfadeFrames > 0 && !item.isLive
        while true {
            let n = feeder.read(from: converter)
            if n == 0 { break }
            item.bytesWithoutAudio = 0
            item.skipRequestsWithoutAudio = 0
            failures.audioArrived()
            if fading {
                // Mixes the previous item's tail into the first frames, holds back the newest
                // crossfade's worth and enqueues what is older.
                let excess = feeder.holdStaged(frames: n)
                if excess > 0 { try enqueueHeld(item, frames: excess) }
                continue
            }
            try feeder.enqueueStaged(frames: n) { try waitTick(milliseconds: 20) }
            item.outputFrames += Int64(n)
            checkStart()
        }
    }

    /// Enqueues the oldest `frames` held frames (a queue buffer at a time, so an interruption
    /// leaves the rest held).
    func enqueueHeld(_ item: ItemDecoder?, frames: Int) throws {
        guard queue != nil else { return }
        try feeder.enqueueHeld(frames: frames, wait: { try waitTick(milliseconds: 20) }) { n in
            item?.outputFrames += Int64(n)
            checkStart()
        }
    }

    /// Plays out whatever crossfade state is held (the end of the queue, or a next item that
    /// could not be opened).
    func flushFade() throws {
        let held = feeder.prepareFlush()
        guard held > 0 else { return }
        try enqueueHeld(pump.current, frames: held)
    }

    /// Decoded seconds waiting, plus an estimate for the undecoded bytes.
    func bufferedSeconds() -> Double {
        Double(feeder.framesAhead(played: queue?.playedStreamFrames ?? 0)) / deviceRate + (undecodedSeconds() ?? 0)
    }

    /// Seconds of audio in the received bytes the decoder has not taken yet; nil when the bit
    /// rate is unknown or the network thread is at its byte limit (no more can be buffered).
    func undecodedSeconds() -> Double? {
        guard let item = pump.current, let parser = item.parser, parser.bitRate > 0 else { return nil }
        let bytes = item.reader.bufferedBytes
        guard bytes < policy.maximumBufferedBytes else { return nil }
        return Double(bytes) * 8 / Double(parser.bitRate)
    }

    /// Starts (or resumes) the queue once enough is buffered.
    func checkStart() {
        guard let queue, buffering.isBuffering else { return }
        let buffered = bufferedSeconds()
        let decoded = Double(feeder.framesAhead(played: queue.playedStreamFrames)) / deviceRate
        // No more audio will be decoded: the decoder has seen the end, or the network thread
        // has ended and the decoder has taken everything it received (not merely "the network
        // thread has ended": a short live burst read to its end in one go still had its bytes
        // waiting, and the queue started on the first 1,004 frames decoded).
        let inputDone = (pump.current?.inputEnded ?? true) || (pump.current?.reader.isDrained ?? true)
        // Every queue buffer is in use: no more decoded audio fits (the play ring holds
        // `liveRingSeconds` of a live stream); the rest of the target is counted in received bytes.
        let full = feeder.pool.isEmpty && decoded > 0
        if buffering.readyToStart(decoded: decoded, full: full, inputDone: inputDone, undecoded: undecodedSeconds()) {
            // Enqueued is not yet playable: the queue's own thread copies enqueued buffers into
            // its play ring, and under load it lags the decoder. The device pulls from the ring
            // as soon as it starts (PulseAudio asks for its whole target length at once), so it
            // starts only once the audio counted above is there (at 2 ms ticks until then).
            let ring = Double(queue.bufferedFrames) / deviceRate
            guard BufferingController.ringCovers(ring, decoded: decoded, target: buffering.target, pendingBuffers: queue.pendingBufferCount) else {
                debug("start waits for the play ring: \(queue.bufferedFrames) frames in it, \(queue.pendingBufferCount) buffers not copied")
                engine.setState(.buffering(progress: buffering.progress(buffered: buffered)))
                return
            }
            debug("start: \(queue.bufferedFrames) frames in the ring, \(queue.pendingBufferCount) buffers not copied, \(feeder.framesAhead(played: queue.playedStreamFrames)) enqueued ahead")
            if engine.control.withLock({ $0.paused }) {
                buffering.phase = .playing
                engine.setState(.paused)
                return
            }
            if startQueue() { buffering.phase = .playing }
        } else {
            engine.setState(.buffering(progress: buffering.progress(buffered: buffered)))
        }
    }

    @discardableResult
    func startQueue() -> Bool {
        guard let queue else { return false }
        do {
            try queue.start()
            debug("queue started")
        } catch {
            debug("queue start failed: \(error)")
            lastError = error
            engine.emit(.error(index: pump.current?.index ?? 0, error))
            engine.requestStop()
            return false
        }
        queueStarted = true
        queuePaused = false
        buffering.lastUnderrunCount = queue.underrunCount
        engine.setState(.playing)
        return true
    }

    func applyVolume() {
        let (volume, fade) = engine.control.withLock { ($0.volume, $0.fade) }
        feeder.setVolume(volume, fade: fade)
    }
}
