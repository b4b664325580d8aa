import OATCore
import OATDevices
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A player (Apple's `kAudioUnitSubType_AudioFilePlayer` / `ScheduledSoundPlayer` in role): a
/// source node that plays interleaved Float32 frames from a lock-free SPSC ring.
///
/// Frames reach the ring either from ``schedule(_:)`` (PCM you have, from one producer thread)
/// or from a feeder thread started by ``play(from:)`` that calls your pull function (e.g.
/// reading an `ExtendedAudioFile` through its `AudioConverter` at the graph's rate; see
/// `AUPlayerNode.scheduleFile(path:)` in OpenAudioToolbox) whenever the ring has room. The
/// render thread only copies from the ring; when it runs dry before the end of input it plays
/// silence and counts an underrun.
///
/// Parameters (global scope): volume 0 (linear gain 0 ... 4, default 1, glides over 10 ms).
/// Thread safety: one producer (``schedule(_:)`` or the feeder, not both); ``stop()`` and the
/// state properties from any thread.
public final class AUPlayerNode: RenderNode, @unchecked Sendable {
    /// Fills the buffer with interleaved frames; returns how many frames it wrote (0 = end).
    public typealias Pull = (_ interleaved: UnsafeMutableBufferPointer<Float>) throws(AudioError) -> Int

    private let ring: SPSCRingBuffer<Float>
    private var scratch: UnsafeMutablePointer<Float>
    private var volume = AUSmoothedValue(1)
    private let ended = Atomic<Bool>(false)
    private let cancelled = Atomic<Bool>(false)
    private let feederRunning = Atomic<Bool>(false)
    private let played = Atomic<Int64>(0)
    private let underruns = Atomic<Int>(0)
    private let failure = Locked<AudioError?>(nil)
    private let feederThread = Locked<JoinableThread?>(nil)
    // The start gate (``holdPlayback(untilBuffered:)``, ``scheduleStart(atSampleTime:)``): while
    // held, renders are silence and take nothing from the ring.
    private let held = Atomic<Bool>(false)
    private let holdFrames = Atomic<Int>(0)
    /// The render sample time to start at; `Int64.max` while not scheduled, -1 for the next render.
    private let startSample = Atomic<Int64>(Int64.max)
    /// Frames rendered since the node was prepared (render thread only).
    private var renderSampleTime: Int64 = 0
    /// Frames rendered since the last frame taken from the ring (render thread only).
    private var sinceContent: Int64 = 0
    /// Frames rendered since the start gate opened (-1 while it never did).
    private let sinceStart = Atomic<Int64>(-1)
    /// Set by ``flush()``: the next render drops what the ring holds.
    private let flushPending = Atomic<Bool>(false)
    // The producer's idle state (``setProducerIdle(_:)``): frames of silence rendered since the
    // ring ran dry while idle, and how many a device that is not real time should render.
    private let producerIdle = Atomic<Bool>(false)
    private let idleSilence = Atomic<Int64>(0)
    private let idleAllowance = Atomic<Int64>(0)
    // Timeline-anchored playback (``anchorToTimeline(_:)``): frames the render played as
    // silence for want of data since the start gate opened, which the ring's next frames are
    // late by (skipped by the render, or claimed by the producer, which then writes fewer).
    private let anchored = Atomic<Bool>(false)
    private let owed = Atomic<Int64>(0)

    /// Creates a player of `channels` channels whose ring holds `bufferSeconds` at 48 kHz.
    public init(channels: Int = 2, bufferFrames: Int = 48000, name: String = "player") {
        ring = SPSCRingBuffer(minimumCapacity: max(1024, bufferFrames) * channels, zero: 0)
        scratch = .allocate(capacity: 1)
        super.init(name: name, inputChannels: [], outputChannels: [channels], parameters: [
            NodeParameter(id: 0, name: "volume", unit: .linearGain, range: 0...4, defaultValue: 1),
        ])
    }

    deinit {
        stop()
        scratch.deallocate()
    }

    /// The volume parameter.
    public var volumeParameter: NodeParameter { parameters[0] }
    /// Channels per frame.
    public var channels: Int { outputChannels[0] }
    /// Frames played (rendered from the ring) so far.
    public var playedFrames: Int64 { played.load(ordering: .relaxed) }
    /// Render calls that found the ring empty before the end of input.
    public var underrunCount: Int { underruns.load(ordering: .relaxed) }
    /// True once the input ended and every frame was played.
    public var isFinished: Bool { ended.load(ordering: .acquiring) && ring.availableToRead == 0 }
    /// True once the end of input was reached (frames may still be buffered).
    public var isInputEnded: Bool { ended.load(ordering: .acquiring) }
    /// The error that stopped the feeder, if any.
    public var error: AudioError? { failure.withLock { $0 } }
    /// Frames waiting in the ring.
    public var bufferedFrames: Int { ring.availableToRead / channels }
    /// Frames the ring can hold.
    public var capacityFrames: Int { ring.capacity / channels }

    /// Sets the render clock and the sample time ``scheduleStart(atSampleTime:)`` counts in.
    public override func setRenderClock(_ sampleTime: Int64) {
        super.setRenderClock(sampleTime)
        renderSampleTime = sampleTime
    }

    /// Holds playback (Apple's player before its start time stamp, and while it primes): renders
    /// are silence and take nothing from the ring until ``scheduleStart(atSampleTime:)`` has been
    /// called, its sample time has come, and the ring holds `frames` frames (or the input has
    /// ended). So playback never starts on a ring the feeder has only begun to fill, on a
    /// real-time device that cannot wait. Call it before ``play(from:chunkFrames:)``.
    public func holdPlayback(untilBuffered frames: Int) {
        holdFrames.store(max(0, frames), ordering: .relaxed)
        startSample.store(Int64.max, ordering: .relaxed)
        held.store(true, ordering: .releasing)
        owed.store(0, ordering: .releasing)
        sinceStart.store(-1, ordering: .releasing)
    }

    /// Starts a held player at render sample time `sampleTime` (frames rendered since the graph
    /// started; nil or negative: the next render, as Apple's `mSampleTime` -1), once the frames
    /// ``holdPlayback(untilBuffered:)`` asked for are buffered.
    public func scheduleStart(atSampleTime sampleTime: Int64?) {
        startSample.store(max(-1, sampleTime ?? -1), ordering: .releasing)
    }

    /// The player's timeline: frames rendered since the start gate of
    /// ``holdPlayback(untilBuffered:)`` opened (Apple's player's sample time after its start
    /// time stamp), or -1 while it has not opened since the last hold.
    public var timelineSampleTime: Int64 { sinceStart.load(ordering: .acquiring) }

    /// A player is an active source while ``wantsRender``.
    public override var isActiveSource: Bool { wantsRender }

    /// The frames of the last render after the last frame the ring gave.
    public override var framesAfterContent: Int { Int(clamping: sinceContent) }

    /// Whether playback is held (waiting for its start time or its prime frames).
    public var isHeld: Bool { held.load(ordering: .acquiring) }

    /// The feeder's producer says it has nothing to give now (a scheduling player whose
    /// schedule is empty or that is paused), which is not the end of input: renders do not wait
    /// for it (``isReadyToRender(frames:)`` is true) and play what the ring holds, then silence.
    /// Any thread; call it with false as soon as the producer has frames again.
    public func setProducerIdle(_ idle: Bool) {
        if idle && !producerIdle.load(ordering: .acquiring) { idleSilence.store(0, ordering: .relaxed) }
        producerIdle.store(idle, ordering: .releasing)
    }

    /// Frames of silence an idle player (``setProducerIdle(_:)``) still asks a device that is
    /// not real time to render after its ring ran dry (what effects after it hold, their tails
    /// and latency, comes out in them); ``wantsRender`` is false after that. Any thread.
    public func setIdleSilenceAllowance(frames: Int) {
        idleAllowance.store(Int64(max(0, frames)), ordering: .relaxed)
    }

    /// Whether a render would still bring anything out of this player: false while it is held
    /// with no start scheduled (paused), or when its ring is empty and no feeder runs (not started, stopped, or its input ended), or its producer is
    /// idle and the silence allowance (``setIdleSilenceAllowance(frames:)``) has been rendered.
    /// A host driving a device that is not real time (a file) may stop rendering while no
    /// source wants to, so the file holds the sources' audio and not the wall-clock time
    /// between them. Real-time safe (atomics only).
    public var wantsRender: Bool {
        if held.load(ordering: .acquiring) && startSample.load(ordering: .acquiring) == Int64.max { return false }
        if ring.availableToRead > 0 { return true }
        guard feederRunning.load(ordering: .acquiring), !ended.load(ordering: .acquiring) else { return false }
        guard producerIdle.load(ordering: .acquiring) else { return true }
        return idleSilence.load(ordering: .relaxed) < idleAllowance.load(ordering: .relaxed)
    }

    /// Plays each frame at its place on the timeline (Apple's scheduled players, which play
    /// what they have at its time stamp): when the ring runs dry after the start, the frames
    /// that come later are late by the silence rendered meanwhile, and the render skips them (or
    /// the producer, told by ``claimLateFrames(upTo:)``, does not write them) rather than play
    /// everything after them late. Off by default (a stream player plays its ring in order).
    /// Set it before the start.
    public func anchorToTimeline(_ on: Bool) {
        anchored.store(on, ordering: .releasing)
    }

    /// Producer (anchored, ``anchorToTimeline(_:)``): takes up to `frames` of the frames the
    /// timeline has run ahead of what was written; the producer advances its position by the
    /// returned count without writing those frames (their time has passed). Lock-free; the
    /// render thread takes what is left from the ring.
    public func claimLateFrames(upTo frames: Int64) -> Int64 {
        var o = owed.load(ordering: .acquiring)
        while o > 0 && frames > 0 {
            let k = min(o, frames)
            let (exchanged, current) = owed.compareExchange(expected: o, desired: o - k, ordering: .acquiringAndReleasing)
            if exchanged { return k }
            o = current
        }
        return 0
    }

    /// Drops what the ring holds at the next render (Apple's player stopping at once rather
    /// than after the audio it has buffered): a stop takes effect within the device's latency,
    /// not after the ring drains. Call it after the producer stopped (``stop()``) or knowing
    /// that frames it writes meanwhile may be dropped too. Any thread.
    public func flush() {
        flushPending.store(true, ordering: .releasing)
    }

    /// True until the render thread has acted on ``flush()``.
    package var isFlushPending: Bool { flushPending.load(ordering: .acquiring) }

    /// Drops what the ring holds now, on the calling thread: only while the producer is stopped
    /// and no render runs (a stopped graph, an offline caller between renders).
    package func discardBuffered() {
        let n = ring.availableToRead
        if n > 0 { _ = ring.skip(n) }
        flushPending.store(false, ordering: .releasing)
    }

    /// Allocates the deinterleaving scratch buffer.
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        scratch.deallocate()
        scratch = .allocate(capacity: maxFrames * channels)
        volume = AUSmoothedValue(volumeParameter.value, rampFrames: max(1, Int(sampleRate * 0.01)))
    }

    /// Producer: queues interleaved frames (as many whole frames as fit); returns the frames queued.
    @discardableResult
    public func schedule(_ interleaved: UnsafeBufferPointer<Float>) -> Int {
        let frames = min(interleaved.count, ring.availableToWrite) / channels
        guard frames > 0, let base = interleaved.baseAddress else { return 0 }
        return ring.write(UnsafeBufferPointer(start: base, count: frames * channels)) / channels
    }

    /// Producer: queues the frames of a Float32 PCM buffer (interleaved or not; channels are
    /// mapped as the converter node does), waiting for room; never from the render thread.
    /// The buffer's rate must be the graph's. Throws for other sample formats.
    public func scheduleBuffer(_ buffer: AudioPCMBuffer) throws(AudioError) {
        let f = buffer.format
        guard f.isFloat, f.bitsPerChannel == 32, f.channelsPerFrame >= 1 else {
            throw AudioError(.unsupportedFormat, component: "AUPlayerNode", "scheduleBuffer takes Float32 PCM, not \(f)")
        }
        let inCh = Int(f.channelsPerFrame), ch = channels, frames = buffer.frameLength
        var interleaved = [Float](repeating: 0, count: frames * ch)
        for c in 0..<ch {
            let src = c < inCh ? c : c % inCh
            if f.isInterleaved {
                guard let p = buffer.floatChannel(0) else { continue }
                for i in 0..<frames { interleaved[i * ch + c] = p[i * inCh + src] }
            } else {
                guard let p = buffer.floatChannel(src) else { continue }
                for i in 0..<frames { interleaved[i * ch + c] = p[i] }
            }
        }
        scheduleAll(interleaved)
    }

    /// Producer: queues all of `interleaved`, waiting for room (never call from the render thread).
    public func scheduleAll(_ interleaved: [Float]) {
        interleaved.withUnsafeBufferPointer { p in
            var done = 0
            while done < p.count / channels && !cancelled.load(ordering: .relaxed) {
                let n = schedule(UnsafeBufferPointer(rebasing: p[(done * channels)...]))
                done += n
                if n == 0 { usleep(2000) }
            }
        }
    }

    /// Producer: no more frames will come; the player finishes when the ring drains.
    public func endOfInput() { ended.store(true, ordering: .releasing) }

    /// Starts a feeder thread that calls `pull` whenever the ring has room for `chunkFrames`,
    /// until it returns 0 (end of input), throws (``error``) or ``stop()`` is called. The
    /// feeder keeps the player alive while it runs: call ``stop()`` for an endless source.
    public func play(from pull: @escaping Pull, chunkFrames: Int = 4096) {
        stop()
        cancelled.store(false, ordering: .relaxed)
        ended.store(false, ordering: .relaxed)
        feederRunning.store(true, ordering: .releasing)
        let ch = channels
        let chunk = max(64, min(chunkFrames, ring.capacity / ch / 2))
        let box = UncheckedSendable(pull)
        let body: @Sendable () -> Void = { [self] in
            // The feeder keeps the ring filled: above ordinary work where allowed (ThreadPriority).
            ThreadPriority.raiseCurrentThread()
            var buffer = [Float](repeating: 0, count: chunk * ch)
            defer { feederRunning.store(false, ordering: .releasing) }
            while !cancelled.load(ordering: .relaxed) {
                if ring.availableToWrite < chunk * ch { usleep(2000); continue }
                do {
                    let n = try buffer.withUnsafeMutableBufferPointer { p in try box.value(p) }
                    if n <= 0 { break }
                    buffer.withUnsafeBufferPointer { p in _ = ring.write(UnsafeBufferPointer(rebasing: p[..<(min(n, chunk) * ch)])) }
                } catch let error as AudioError {
                    failure.withLock { $0 = error }
                    break
                } catch {
                    failure.withLock { $0 = AudioError(.io, component: "AUPlayerNode", "the feeder failed: \(error)") }
                    break
                }
            }
            ended.store(true, ordering: .releasing)
        }
        do {
            let thread = try JoinableThread(name: "oat-player-feeder", body)
            feederThread.withLock { $0 = thread }
        } catch {
            failure.withLock { $0 = error }
            ended.store(true, ordering: .releasing)
            feederRunning.store(false, ordering: .releasing)
        }
    }

    /// Stops the feeder thread (waits for it) and marks the input ended.
    public func stop() {
        cancelled.store(true, ordering: .relaxed)
        while feederRunning.load(ordering: .acquiring) { usleep(1000) }
        feederThread.withLock { t -> JoinableThread? in defer { t = nil }; return t }?.join()
    }

    /// Not ready while a feeder is running and the ring holds fewer than `frames` frames (or
    /// half the ring, for requests longer than that).
    public override func isReadyToRender(frames: Int) -> Bool {
        guard feederRunning.load(ordering: .acquiring), !ended.load(ordering: .acquiring) else { return true }
        // An idle producer has nothing coming: what the ring holds plays, then silence.
        if producerIdle.load(ordering: .acquiring) { return true }
        // A held player renders silence without waiting (its start is not due yet, or it waits
        // for its prime frames, which the gate checks itself).
        if held.load(ordering: .acquiring) {
            let start = startSample.load(ordering: .acquiring)
            if start == Int64.max || (start >= 0 && start - renderSampleTime >= Int64(frames)) { return true }
            guard gateOpens(frames: frames) != nil else { return false }
            // The gate opens in this render: it waits for the frames it will play (a device that
            // is not real time can wait), or one render wrote silence for them by whenever the
            // feeder's first frames came.
        }
        let ch = channels
        return ring.availableToRead >= min(frames, ring.capacity / ch / 2) * ch
    }

    /// Render thread: where in a render of `frames` frames a held player starts, or nil when it
    /// stays held through it.
    private func gateOpens(frames: Int) -> Int? {
        let start = startSample.load(ordering: .acquiring)
        guard start != Int64.max else { return nil }
        let offset = start < 0 ? 0 : start - renderSampleTime
        guard offset < Int64(frames) else { return nil }
        let ch = channels
        let need = min(holdFrames.load(ordering: .relaxed), ring.capacity / ch)
        guard ended.load(ordering: .acquiring) || ring.availableToRead / ch >= need else { return nil }
        return Int(max(0, offset))
    }

    /// Plays from the ring.
    public override func render(_ context: AURenderContext) {
        let out = context.output(0)
        let ch = out.channelCount
        let frames = context.frames
        var lead = 0
        if flushPending.load(ordering: .acquiring) {
            flushPending.store(false, ordering: .relaxed)
            let n = ring.availableToRead
            if n > 0 { _ = ring.skip(n - n % max(1, ch)) }
        }
        if held.load(ordering: .acquiring) {
            guard let at = gateOpens(frames: frames) else {
                for c in 0..<ch { out[c].update(repeating: 0, count: frames) }
                renderSampleTime &+= Int64(frames)
                sinceContent &+= Int64(frames)
                return
            }
            held.store(false, ordering: .releasing)
            lead = at
            sinceStart.store(0, ordering: .relaxed)
            owed.store(0, ordering: .releasing)
        }
        let isAnchored = anchored.load(ordering: .relaxed)
        if isAnchored {
            // Frames whose time passed while the ring was dry: skipped, so what follows is on time.
            var o = owed.load(ordering: .acquiring)
            while o > 0 {
                let k = min(o, Int64(ring.availableToRead / ch))
                if k == 0 { break }
                let (exchanged, current) = owed.compareExchange(expected: o, desired: o - k, ordering: .acquiringAndReleasing)
                if exchanged { _ = ring.skip(Int(k) * ch); break }
                o = current
            }
        }
        renderSampleTime &+= Int64(frames)
        let since = sinceStart.load(ordering: .relaxed)
        if since >= 0 { sinceStart.store(since + Int64(frames - lead), ordering: .releasing) }
        let avail = ring.availableToRead / ch
        let n = min(frames - lead, avail)
        if n > 0 { ring.read(into: UnsafeMutableBufferPointer(start: scratch, count: n * ch)) }
        if lead + n < frames && !ended.load(ordering: .acquiring) && played.load(ordering: .relaxed) > 0 {
            underruns.add(1, ordering: .relaxed)
        }
        volume.setTarget(volumeParameter.value)
        let v0 = volume
        var v = v0
        for c in 0..<ch {
            v = v0
            let o = out[c]
            if lead > 0 { o.update(repeating: 0, count: lead) }
            for f in 0..<n { o[lead + f] = scratch[f * ch + c] * v.next() }
            if lead + n < frames { (o + lead + n).update(repeating: 0, count: frames - lead - n) }
        }
        volume = v
        played.add(Int64(n), ordering: .relaxed)
        sinceContent = n > 0 ? Int64(frames - lead - n) : sinceContent &+ Int64(frames)
        if isAnchored && since >= 0 && lead + n < frames {
            owed.add(Int64(frames - lead - n), ordering: .releasing)
        }
        if lead + n < frames && producerIdle.load(ordering: .relaxed) {
            idleSilence.add(Int64(frames - lead - n), ordering: .relaxed)
        }
    }
}
