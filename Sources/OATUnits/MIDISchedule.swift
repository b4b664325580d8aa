import OATCore
import Synchronization

/// The clock a sequence player's schedules share: the device sample time its frame 0 fell on
/// (latched by the first slice any of its devices renders) and how far the devices have
/// rendered since. Lock-free; read from any thread.
public final class MIDIScheduleClock: Sendable {
    private let base = Atomic<Int64>(Int64.min)
    private let rendered = Atomic<Int64>(0)

    /// Creates a clock that has not started.
    public init() {}

    /// Frames rendered since frame 0 (the end of the last slice any device rendered).
    public var renderedFrames: Int64 { rendered.load(ordering: .acquiring) }

    /// Render thread: the device sample time of frame 0, latched on the first call.
    @inline(__always)
    func origin(latching sampleTime: Int64) -> Int64 {
        let b = base.load(ordering: .acquiring)
        if b != Int64.min { return b }
        let (exchanged, original) = base.compareExchange(expected: Int64.min, desired: sampleTime, ordering: .acquiringAndReleasing)
        return exchanged ? sampleTime : original
    }

    @inline(__always)
    func advance(to frame: Int64) {
        var current = rendered.load(ordering: .relaxed)
        while frame > current {
            let (done, now) = rendered.compareExchange(expected: current, desired: frame, ordering: .releasing)
            if done { return }
            current = now
        }
    }
}

/// A fixed list of channel messages on frames counted from a ``MIDIScheduleClock``'s frame 0:
/// what a sequence player gives one music device (``MusicDeviceNode/setEventSource(_:)``).
/// Each event is delivered in the slice its frame falls in, at its offset there; an event whose
/// frame a slice skipped past (the device rendered a slice late) comes at offset 0 of the next,
/// so no note is left hanging. Nothing is allocated on the render thread.
public final class MIDISchedule: MIDIEventSource, @unchecked Sendable {
    /// One scheduled message.
    public struct Entry: BitwiseCopyable, Sendable, Equatable {
        /// Frame from the clock's frame 0.
        public var frame: Int64
        /// Status byte.
        public var status: UInt8
        /// First data byte.
        public var data1: UInt8
        /// Second data byte.
        public var data2: UInt8
        /// Creates an entry.
        public init(frame: Int64, status: UInt8, data1: UInt8, data2: UInt8) {
            self.frame = frame
            self.status = status
            self.data1 = data1
            self.data2 = data2
        }
    }

    /// The clock the schedule's frames count from.
    public let clock: MIDIScheduleClock
    private let entries: UnsafeMutableBufferPointer<Entry>
    private var cursor = 0
    private var lastEnd: Int64 = 0
    private let delivered = Atomic<Int>(0)

    /// Creates a schedule of `entries` (sorted here by frame, stable: equal frames keep their
    /// order) on `clock`.
    public init(entries: [Entry], clock: MIDIScheduleClock) {
        self.clock = clock
        let sorted = entries.enumerated().sorted { a, b in a.element.frame != b.element.frame ? a.element.frame < b.element.frame : a.offset < b.offset }
        self.entries = .allocate(capacity: max(1, sorted.count))
        for (i, e) in sorted.enumerated() { self.entries[i] = e.element }
        count = sorted.count
    }

    deinit { entries.deallocate() }

    /// The number of entries.
    public let count: Int
    /// The frame of the last entry (0 when empty).
    public var lastFrame: Int64 { count > 0 ? entries[count - 1].frame : 0 }
    /// Entries handed to the device so far.
    public var deliveredCount: Int { delivered.load(ordering: .relaxed) }

    /// Render thread: the entries in the slice (see ``MIDIEventSource``).
    public func forEachEvent(inSliceAt sampleTime: Int64, frames: Int, _ body: (MIDIChannelEvent) -> Void) {
        let origin = clock.origin(latching: sampleTime)
        let start = sampleTime &- origin
        let end = start &+ Int64(frames)
        if start < lastEnd {
            // The device's time went back (a reset, a new render run): find the slice again.
            var lo = 0
            var hi = count
            while lo < hi {
                let mid = (lo + hi) / 2
                if entries[mid].frame < start { lo = mid + 1 } else { hi = mid }
            }
            cursor = lo
        }
        lastEnd = end
        var n = 0
        while cursor < count, entries[cursor].frame < end {
            let e = entries[cursor]
            let offset = e.frame > start ? UInt32(e.frame - start) : 0
            body(MIDIChannelEvent(offset: offset, status: e.status, data1: e.data1, data2: e.data2))
            cursor += 1
            n += 1
        }
        if n > 0 { delivered.add(n, ordering: .relaxed) }
        clock.advance(to: end)
    }
}
