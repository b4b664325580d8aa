import Synchronization

/// A lock-free single-producer single-consumer ring of `Element`s on `Synchronization.Atomic`.
///
/// Capacity is fixed at creation (rounded up to a power of two); nothing allocates afterwards.
/// Thread safety: exactly one thread may write and one (other) thread may read at a time; both
/// sides are wait-free and safe on the render thread.
public final class SPSCRingBuffer<Element: BitwiseCopyable>: @unchecked Sendable {
    private let buffer: UnsafeMutablePointer<Element>
    private let mask: Int
    /// The number of elements the ring can hold.
    public let capacity: Int
    private let head = Atomic<Int>(0) // next index to write (producer owns)
    private let tail = Atomic<Int>(0) // next index to read (consumer owns)

    /// Creates a ring holding at least `minimumCapacity` elements.
    public init(minimumCapacity: Int, zero: Element) {
        var cap = 1
        while cap < max(1, minimumCapacity) { cap <<= 1 }
        capacity = cap
        mask = cap - 1
        buffer = .allocate(capacity: cap)
        buffer.initialize(repeating: zero, count: cap)
    }

    deinit { buffer.deallocate() }

    /// Elements available to read.
    public var availableToRead: Int { head.load(ordering: .acquiring) &- tail.load(ordering: .acquiring) }
    /// Free space available to write.
    public var availableToWrite: Int { capacity - availableToRead }

    /// Producer: writes as many elements of `source` as fit; returns how many were written.
    @discardableResult
    public func write(_ source: UnsafeBufferPointer<Element>) -> Int {
        let h = head.load(ordering: .relaxed)
        let t = tail.load(ordering: .acquiring)
        let n = min(source.count, capacity - (h &- t))
        guard n > 0, let base = source.baseAddress else { return 0 }
        let start = h & mask
        let first = min(n, capacity - start)
        (buffer + start).update(from: base, count: first)
        if n > first { buffer.update(from: base + first, count: n - first) }
        head.store(h &+ n, ordering: .releasing)
        return n
    }

    /// Consumer: reads up to `destination.count` elements; returns how many were read.
    @discardableResult
    public func read(into destination: UnsafeMutableBufferPointer<Element>) -> Int {
        let t = tail.load(ordering: .relaxed)
        let h = head.load(ordering: .acquiring)
        let n = min(destination.count, h &- t)
        guard n > 0, let base = destination.baseAddress else { return 0 }
        let start = t & mask
        let first = min(n, capacity - start)
        base.update(from: buffer + start, count: first)
        if n > first { (base + first).update(from: buffer, count: n - first) }
        tail.store(t &+ n, ordering: .releasing)
        return n
    }

    /// Consumer: discards up to `count` elements; returns how many were discarded.
    @discardableResult
    public func skip(_ count: Int) -> Int {
        let t = tail.load(ordering: .relaxed)
        let n = min(count, head.load(ordering: .acquiring) &- t)
        tail.store(t &+ max(0, n), ordering: .releasing)
        return max(0, n)
    }
}

/// A bounded lock-free single-producer single-consumer queue of values, for handing buffers
/// and events between threads. When full, `push` fails and counts the drop.
///
/// Thread safety: one producer thread and one consumer thread; wait-free on both sides.
public final class SPSCQueue<Element>: @unchecked Sendable {
    private let slots: UnsafeMutablePointer<Element?>
    private let mask: Int
    /// The number of elements the queue can hold.
    public let capacity: Int
    private let head = Atomic<Int>(0)
    private let tail = Atomic<Int>(0)
    private let drops = Atomic<Int>(0)

    /// Creates a queue holding at least `minimumCapacity` elements.
    public init(minimumCapacity: Int) {
        var cap = 1
        while cap < max(1, minimumCapacity) { cap <<= 1 }
        capacity = cap
        mask = cap - 1
        slots = .allocate(capacity: cap)
        slots.initialize(repeating: nil, count: cap)
    }

    deinit {
        slots.deinitialize(count: capacity)
        slots.deallocate()
    }

    /// Elements waiting to be popped.
    public var count: Int { head.load(ordering: .acquiring) &- tail.load(ordering: .acquiring) }
    /// Pushes that failed because the queue was full.
    public var droppedCount: Int { drops.load(ordering: .relaxed) }

    /// Producer: appends `value`; returns false (and counts a drop) when full.
    @discardableResult
    public func push(_ value: consuming Element) -> Bool {
        let h = head.load(ordering: .relaxed)
        if h &- tail.load(ordering: .acquiring) >= capacity {
            drops.add(1, ordering: .relaxed)
            return false
        }
        slots[h & mask] = value
        head.store(h &+ 1, ordering: .releasing)
        return true
    }

    /// Consumer: removes and returns the oldest element, or nil when empty.
    public func pop() -> Element? {
        let t = tail.load(ordering: .relaxed)
        if head.load(ordering: .acquiring) == t { return nil }
        let value = slots[t & mask].take()
        tail.store(t &+ 1, ordering: .releasing)
        return value
    }
}
