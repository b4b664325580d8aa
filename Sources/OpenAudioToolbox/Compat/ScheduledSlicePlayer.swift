// The scheduled sound player unit's node (kAudioUnitSubType_ScheduledSoundPlayer): slices play
// at their own time stamps on the unit's timeline, from the caller's buffers, as Apple's.

import OATCore
import OATUnits
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A slice the render thread is done with whose completion proc the tracker calls. The proc and
/// its user data were copied when the slice was scheduled: once the render thread has set
/// `Complete` the caller may reuse the slice's memory, so the tracker reads nothing from it.
struct SliceEvent: BitwiseCopyable {
    /// The slice's address (passed to the proc, as Apple's).
    var address: UInt
    var proc: ScheduledAudioSliceCompletionProc
    var userData: UnsafeMutableRawPointer?
}

/// A semaphore the render thread posts and the tracker thread waits on. `sem_post` is an atomic
/// increment plus, only when a thread sleeps on it, a `FUTEX_WAKE` that never blocks: no lock,
/// no allocation (POSIX lists it as async-signal-safe; see also OATQueueEngine's
/// RealTimeSignal). Thread safety: ``post()`` from any thread; ``wait()`` from one thread.
final class SliceSignal: @unchecked Sendable {
    private let semaphore: UnsafeMutablePointer<sem_t>
    init() {
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
    }
    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }
    /// Wakes the waiter (render thread safe).
    @inline(__always) func post() { sem_post(semaphore) }
    /// Sleeps until posted.
    func wait() { while sem_wait(semaphore) != 0 && errno == EINTR {} }
}

/// Apple's scheduled sound player in the render graph. Slices are not copied: the render thread
/// reads each slice's own buffers (deinterleaved Float32, or one interleaved buffer when the
/// output format is interleaved) when its time comes, so a slice's memory must stay valid until
/// it is complete, as on Apple.
///
/// The timeline: nothing plays before the start time stamp (``start(atSampleTime:)``); sample 0
/// of the timeline is the render sample at which the player started. A slice plays at its
/// `mTimeStamp.mSampleTime` on that timeline, silence in the gaps; a slice without a valid
/// sample time follows the previous one (at once when nothing plays). Slices play in the order
/// they were scheduled: one whose time comes while an earlier slice still plays waits for it.
/// A slice whose time has passed when its turn comes plays late from the frame that is due now,
/// the frames before it not played (`BeganToRenderLate`, as Apple's header describes the flag);
/// one wholly past is complete without playing. `Loop` repeats a slice until a later slice with
/// `Interrupt` (cuts it when that slice's time comes) or `InterruptAtLoop` (at the end of a
/// pass) replaces it; an interrupting slice also completes, unplayed, the slices scheduled
/// between. `CurrentPlayTime` is the timeline position.
///
/// The slice's flags are set by the render thread itself, on the caller's slice (atomic ORs on
/// `mFlags`): `BeganToRender` (and `BeganToRenderLate`) in the render that first plays (or
/// skips) part of it, `Complete` in the render that is done with it, so a caller polling the
/// flag after `AudioUnitRender` returns sees it, as on Apple. After `Complete` the render thread
/// never touches the slice again.
///
/// ``requestReset()`` (Apple's AudioUnitReset, also while rendering): a reset generation the
/// render thread observes at its next render: every slice scheduled before it is complete (its
/// proc called; `BeganToRender` only if part of it played, as Apple's header defines the flags),
/// the timeline waits for a new start time stamp, and ``resetAcknowledged`` tells the caller the
/// render thread no longer reads the old slices.
///
/// Render thread: no allocation, no lock, no user code. Scheduled slices reach it through a
/// preallocated SPSC queue (pushed under a control-side lock, so any thread may schedule);
/// completions with a proc leave through another, and a semaphore post wakes the tracker
/// thread that calls the procs (``SliceTracker``).
final class ScheduledSlicePlayerNode: OATUnits.RenderNode, @unchecked Sendable {
    /// A scheduled slice as the render thread keeps it (plain values only).
    struct Entry: BitwiseCopyable {
        var address: UInt
        var list: UnsafeMutablePointer<AudioBufferList>
        var frames: Int
        /// Timeline sample time, or `Int64.min` (follow the previous slice).
        var start: Int64
        var flags: UInt32
        var interleaved: Bool
        /// The completion proc and its user data, copied when scheduled.
        var proc: ScheduledAudioSliceCompletionProc?
        var userData: UnsafeMutableRawPointer?
        /// The reset generation it was scheduled in (set by ``schedule(_:)``).
        var generation: UInt64 = 0
        /// Render side: frames of the current pass already played or skipped; begun.
        var position: Int = 0
        var begun: Bool = false
    }

    /// Slices the render thread can hold at once (queued, playing, waiting).
    static let capacity = 1024

    private let incoming = SPSCQueue<Entry>(minimumCapacity: capacity)
    /// Completions with a proc, to the tracker.
    let events = SPSCQueue<SliceEvent>(minimumCapacity: 2 * capacity)
    /// Posted after a render that reported something (the tracker's).
    let signal: SliceSignal
    /// Render-side list of slices, in schedule order (a ring of `capacity`).
    private let ring: UnsafeMutablePointer<Entry>
    private var ringHead = 0
    private var ringCount = 0
    /// A newer slice popped while completing the older ones of a reset (placed first).
    private var carried: Entry?
    /// The render sample at which the timeline starts: `Int64.max` not yet, -1 the next render.
    private let startSample = Atomic<Int64>(Int64.max)
    /// Render thread: the timeline's sample 0 in render samples, once started.
    private var origin: Int64 = Int64.max
    private var renderSampleTime: Int64 = 0
    /// The timeline position where the last played slice ended.
    private var lastEnd: Int64 = 0
    /// Published timeline position (-1 before the start).
    private let timeline = Atomic<Int64>(-1)
    /// Control side: the reset generation, under the lock that also orders the pushes.
    private let control = Locked<UInt64>(0)
    /// The reset generation (written under `control`), and the last one the render thread acted on.
    private let generation = Atomic<UInt64>(0)
    private let acknowledged = Atomic<UInt64>(0)
    /// Render thread: the generation it plays.
    private var seenGeneration: UInt64 = 0
    /// Where `mFlags` is in a ScheduledAudioSlice.
    private let flagsOffset = MemoryLayout<ScheduledAudioSlice>.offset(of: \.mFlags)!

    /// Creates a player of `channels` channels that posts `signal` when it has events.
    init(channels: Int, signal: SliceSignal) {
        self.signal = signal
        ring = .allocate(capacity: Self.capacity)
        super.init(name: "scheduled sound player", inputChannels: [], outputChannels: [channels])
    }

    deinit { ring.deallocate() }

    /// Channels per frame.
    var channels: Int { outputChannels[0] }

    /// Where the timeline is (the sample time the next render plays), or -1 before the start.
    var timelineSampleTime: Int64 { timeline.load(ordering: .acquiring) }

    /// Control side: a new schedule (initialisation, AudioUnitReset of a unit that is not
    /// rendering): every slice is complete and the timeline waits for a new start time stamp.
    /// Not while rendering (see ``requestReset()``).
    override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        renderSampleTime = 0
        control.withLock { _ in
            startSample.store(Int64.max, ordering: .releasing)
            seenGeneration = generation.load(ordering: .acquiring)
            completeAll()
            acknowledged.store(seenGeneration, ordering: .releasing)
        }
    }

    /// Control side (any thread): queues a slice; false when the player holds ``capacity``
    /// slices already.
    func schedule(_ entry: Entry) -> Bool {
        control.withLock { g in
            var e = entry
            e.generation = g
            return incoming.push(e)
        }
    }

    /// Control side: starts the timeline at render sample `sampleTime` (nil or negative: the next render).
    func start(atSampleTime sampleTime: Int64?) {
        control.withLock { _ in startSample.store(max(-1, sampleTime ?? -1), ordering: .releasing) }
    }

    /// Control side (any thread, also while rendering): clears the schedule at the next render
    /// (see the type's notes); returns the generation to wait for with ``resetAcknowledged``.
    func requestReset() -> UInt64 {
        control.withLock { g in
            // The start goes first: a render that sees the new generation sees no old start.
            startSample.store(Int64.max, ordering: .releasing)
            g &+= 1
            generation.store(g, ordering: .releasing)
            return g
        }
    }

    /// The last reset generation the render thread has acted on.
    var resetAcknowledged: UInt64 { acknowledged.load(ordering: .acquiring) }

    // MARK: Render thread

    /// Sets `flags` on the caller's slice (an atomic OR on its `mFlags`) and, for `Complete`
    /// with a proc, tells the tracker. After `Complete` nothing here reads the slice again.
    @inline(__always) private func mark(_ e: Entry, _ flags: UInt32) {
        guard let slice = UnsafeMutableRawPointer(bitPattern: e.address) else { return }
        (slice + flagsOffset).assumingMemoryBound(to: Atomic<UInt32>.self).pointee.bitwiseOr(flags, ordering: .releasing)
        if flags & 0x01 != 0, let proc = e.proc {
            _ = events.push(SliceEvent(address: e.address, proc: proc, userData: e.userData))
        }
    }

    /// Completes every slice, playing nothing (control side while not rendering).
    private func completeAll() {
        if let e = carried { mark(e, 0x01); carried = nil }
        while ringCount > 0 { mark(ring[ringHead], 0x01); popHead() }
        while let e = incoming.pop() { mark(e, 0x01) }
        origin = Int64.max
        lastEnd = 0
        timeline.store(-1, ordering: .releasing)
        signal.post()
    }

    /// Acts on a reset of generation `g`: the slices scheduled before it are complete, the
    /// timeline waits for a new start.
    private func observeReset(_ g: UInt64) {
        seenGeneration = g
        if let e = carried, e.generation < g { mark(e, 0x01); carried = nil }
        while ringCount > 0 { mark(ring[ringHead], 0x01); popHead() }
        if carried == nil {
            while let e = incoming.pop() {
                if e.generation >= g { carried = e; break }
                mark(e, 0x01)
            }
        }
        origin = Int64.max
        lastEnd = 0
        timeline.store(-1, ordering: .releasing)
        acknowledged.store(g, ordering: .releasing)
    }

    private func popHead() {
        ringHead = (ringHead + 1) % Self.capacity
        ringCount -= 1
    }

    @inline(__always) private func at(_ i: Int) -> UnsafeMutablePointer<Entry> { ring + (ringHead + i) % Self.capacity }

    /// The last slice after the head that interrupts (Interrupt or InterruptAtLoop), if any.
    private func interrupter() -> Int? {
        var i = ringCount - 1
        while i >= 1 {
            if at(i).pointee.flags & 0x30 != 0 { return i }
            i -= 1
        }
        return nil
    }

    /// Completes the slices before `index` (unplayed ones get no BeganToRender).
    private func completeBefore(_ index: Int) {
        for _ in 0..<index { mark(ring[ringHead], 0x01); popHead() }
    }

    /// Moves newly scheduled slices into the ring (a slice of a newer generation first acts on its reset).
    private func takeIncoming() {
        while ringCount < Self.capacity {
            var next = carried
            carried = nil
            if next == nil { next = incoming.pop() }
            guard let e = next else { return }
            if e.generation < seenGeneration { mark(e, 0x01); continue }
            if e.generation != seenGeneration {
                carried = e
                observeReset(generation.load(ordering: .acquiring))
                continue
            }
            ring[(ringHead + ringCount) % Self.capacity] = e
            ringCount += 1
        }
    }

    override func render(_ context: AURenderContext) {
        let out = context.output(0)
        let ch = out.channelCount
        let frames = context.frames
        for c in 0..<ch { out[c].update(repeating: 0, count: frames) }
        let eventsBefore = events.count
        defer {
            renderSampleTime &+= Int64(frames)
            if origin != Int64.max { timeline.store(renderSampleTime - origin, ordering: .releasing) }
            if events.count != eventsBefore { signal.post() }
        }
        let g = generation.load(ordering: .acquiring)
        if g != seenGeneration { observeReset(g) }
        takeIncoming()
        // The start time stamp (read after the generation: a reset clears it first).
        var f = 0
        if origin == Int64.max {
            var s = startSample.load(ordering: .acquiring)
            let g2 = generation.load(ordering: .acquiring)
            if g2 != seenGeneration {
                observeReset(g2)
                takeIncoming()
                s = startSample.load(ordering: .acquiring)
            }
            guard s != Int64.max else { return }
            if s < 0 || s <= renderSampleTime {
                origin = renderSampleTime
            } else if s < renderSampleTime + Int64(frames) {
                origin = s
                f = Int(s - renderSampleTime)
            } else {
                return
            }
        }
        let base = renderSampleTime - origin   // timeline time of frame 0 of this render
        while f < frames && ringCount > 0 {
            let t = base + Int64(f)
            // An interrupting slice whose time has come replaces everything before it.
            var limit = frames
            if let j = interrupter() {
                let e = at(j)
                if e.pointee.flags & 0x10 != 0 {
                    if e.pointee.start == Int64.min { e.pointee.start = t }
                    if e.pointee.start <= t { completeBefore(j); continue }
                    limit = min(limit, f + Int(min(Int64(frames - f), e.pointee.start - t)))
                }
            }
            let e = at(0)
            if e.pointee.start == Int64.min { e.pointee.start = max(lastEnd, t) }
            if !e.pointee.begun {
                if e.pointee.start > t {
                    // Silence until its time (or until an interrupter's).
                    f = min(limit, f + Int(min(Int64(frames - f), e.pointee.start - t)))
                    continue
                }
                let late = t - e.pointee.start
                var flags: UInt32 = 0x02
                if late > 0 {
                    flags |= 0x04
                    if e.pointee.flags & 0x08 != 0 {
                        e.pointee.position = Int(late % Int64(max(1, e.pointee.frames)))
                    } else if late >= Int64(e.pointee.frames) {
                        mark(e.pointee, 0x04 | 0x01)
                        popHead()
                        continue
                    } else {
                        e.pointee.position = Int(late)
                    }
                }
                e.pointee.begun = true
                mark(e.pointee, flags)
            }
            let n = min(limit - f, e.pointee.frames - e.pointee.position)
            if n > 0 {
                copy(e.pointee, from: e.pointee.position, frames: n, into: out, at: f)
                e.pointee.position += n
                f += n
            }
            if e.pointee.position >= e.pointee.frames {
                let looping = e.pointee.flags & 0x08 != 0 && e.pointee.frames > 0
                if looping, interrupter().map({ at($0).pointee.flags & 0x20 != 0 }) != true {
                    e.pointee.position = 0
                } else {
                    lastEnd = base + Int64(f)
                    if let j = interrupter(), at(j).pointee.flags & 0x20 != 0 {
                        completeBefore(j)   // the looping slice and those between
                        at(0).pointee.start = at(0).pointee.start == Int64.min ? lastEnd : at(0).pointee.start
                    } else {
                        mark(e.pointee, 0x01)
                        popHead()
                    }
                }
            }
        }
    }

    /// Copies `n` frames of a slice from `offset` into the output at `at`.
    @inline(__always)
    private func copy(_ e: Entry, from offset: Int, frames n: Int, into out: AUBufferList, at: Int) {
        let list = UnsafeMutableAudioBufferListPointer(e.list)
        let ch = out.channelCount
        if e.interleaved {
            guard let p = list[0].mData?.assumingMemoryBound(to: Float.self) else { return }
            let src = Int(max(1, list[0].mNumberChannels))
            for c in 0..<ch {
                let o = out[c] + at, s = c < src ? c : src - 1
                for i in 0..<n { o[i] = p[(offset + i) * src + s] }
            }
        } else {
            let buffers = list.count
            for c in 0..<ch {
                guard let p = list[c < buffers ? c : buffers - 1].mData?.assumingMemoryBound(to: Float.self) else { continue }
                (out[c] + at).update(from: p + offset, count: n)
            }
        }
    }
}
