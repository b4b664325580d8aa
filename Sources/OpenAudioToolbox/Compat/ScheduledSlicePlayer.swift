// The scheduled sound player unit's node (kAudioUnitSubType_ScheduledSoundPlayer): slices play
// at their own time stamps on the unit's timeline, from the caller's buffers, as Apple's.

import AudioCore
import AudioUnits
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What the render thread tells the tracker about a slice: the flags to add (BeganToRender,
/// BeganToRenderLate, Complete); Complete also calls the slice's completion proc.
struct SliceEvent: BitwiseCopyable {
    /// The slice's address (the caller's memory, valid until it is complete, as on Apple).
    var address: UInt
    var flags: UInt32
}

/// A semaphore the render thread posts and the tracker thread waits on. `sem_post` is an atomic
/// increment plus, only when a thread sleeps on it, a `FUTEX_WAKE` that never blocks: no lock,
/// no allocation (POSIX lists it as async-signal-safe; see also AudioQueueEngine's
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
/// Render thread: no allocation, no lock, no user code. Scheduled slices reach it through a
/// preallocated SPSC queue; flags to set and completions leave through another, and a
/// semaphore post wakes the tracker thread that sets the flags and calls the procs
/// (``SliceTracker``).
final class ScheduledSlicePlayerNode: AudioUnits.AUNode, @unchecked Sendable {
    /// A scheduled slice as the render thread keeps it (plain values only).
    struct Entry: BitwiseCopyable {
        var address: UInt
        var list: UnsafeMutablePointer<AudioBufferList>
        var frames: Int
        /// Timeline sample time, or `Int64.min` (follow the previous slice).
        var start: Int64
        var flags: UInt32
        var interleaved: Bool
        /// Render side: frames of the current pass already played or skipped; begun.
        var position: Int = 0
        var begun: Bool = false
    }

    /// Slices the render thread can hold at once (queued, playing, waiting).
    static let capacity = 1024

    private let incoming = SPSCQueue<Entry>(minimumCapacity: capacity)
    /// Events to the tracker (two per slice at most: began, complete).
    let events = SPSCQueue<SliceEvent>(minimumCapacity: 4 * capacity)
    /// Posted after a render that reported something (the tracker's).
    let signal: SliceSignal
    /// Render-side list of slices, in schedule order (a ring of `capacity`).
    private let ring: UnsafeMutablePointer<Entry>
    private var ringHead = 0
    private var ringCount = 0
    /// The render sample at which the timeline starts: `Int64.max` not yet, -1 the next render.
    private let startSample = Atomic<Int64>(Int64.max)
    /// Render thread: the timeline's sample 0 in render samples, once started.
    private var origin: Int64 = Int64.max
    private var renderSampleTime: Int64 = 0
    /// The timeline position where the last played slice ended.
    private var lastEnd: Int64 = 0
    /// Published timeline position (-1 before the start).
    private let timeline = Atomic<Int64>(-1)
    /// Set by ``reset()``: the next render completes every slice without playing it.
    private let dropAll = Atomic<Bool>(false)

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

    /// Control side: a new schedule (initialisation, AudioUnitReset): the timeline waits for a
    /// new start time stamp. Not while rendering.
    override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        renderSampleTime = 0
        origin = Int64.max
        lastEnd = 0
        startSample.store(Int64.max, ordering: .releasing)
        timeline.store(-1, ordering: .releasing)
        completeAll()
    }

    /// Control side (scheduling thread): queues a slice; false when the player holds
    /// ``capacity`` slices already.
    func schedule(_ entry: Entry) -> Bool { incoming.push(entry) }

    /// Control side: starts the timeline at render sample `sampleTime` (nil or negative: the next render).
    func start(atSampleTime sampleTime: Int64?) {
        startSample.store(max(-1, sampleTime ?? -1), ordering: .releasing)
    }

    /// Completes every queued slice unplayed at the next render (Apple's reset of the schedule).
    func reset() { dropAll.store(true, ordering: .releasing) }

    // MARK: Render thread

    @inline(__always) private func emit(_ e: Entry, _ flags: UInt32) {
        _ = events.push(SliceEvent(address: e.address, flags: flags))
    }

    /// Completes every slice, playing nothing (render thread, or control side while not rendering).
    private func completeAll() {
        while let e = incoming.pop() { emit(e, 0x01) }
        while ringCount > 0 { emit(ring[ringHead], 0x01); popHead() }
        signal.post()
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
        for _ in 0..<index { emit(ring[ringHead], 0x01); popHead() }
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
        if dropAll.load(ordering: .acquiring) {
            dropAll.store(false, ordering: .relaxed)
            completeAll()
        }
        while ringCount < Self.capacity, let e = incoming.pop() {
            ring[(ringHead + ringCount) % Self.capacity] = e
            ringCount += 1
        }
        // The start time stamp.
        var f = 0
        if origin == Int64.max {
            let s = startSample.load(ordering: .acquiring)
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
                        emit(e.pointee, 0x04 | 0x01)
                        popHead()
                        continue
                    } else {
                        e.pointee.position = Int(late)
                    }
                }
                e.pointee.begun = true
                emit(e.pointee, flags)
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
                        emit(e.pointee, 0x01)
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
