import AudioCore
import Dispatch
import Synchronization

/// One thing the network thread hands the decoder, in stream order.
enum ReaderItem {
    /// The source opened (or reopened at a Range offset).
    case opened(ByteSourceInfo)
    /// Audio bytes starting at audio byte offset `offset` (metadata stripped).
    case bytes([UInt8], offset: Int64)
    /// Timed metadata.
    case metadata(StreamMetadata)
    /// The source reconnected.
    case reconnected(ByteSourceInfo, continuous: Bool)
    /// The resource ended.
    case end
    /// The source failed for good.
    case failed(AudioError)
}

/// The network thread of one item: opens a ``ByteSource`` at an offset and reads it into a
/// bounded FIFO that the decoder thread drains. The thread blocks when the FIFO holds
/// `maximumBytes` (bounded memory for endless streams) and ends at the end of the resource, on a
/// permanent error, or when cancelled.
final class SourceReader: @unchecked Sendable {
    let url: String
    let startOffset: Int64
    private let source: any ByteSource
    private let maximumBytes: Int
    private struct State {
        var items: [ReaderItem] = []
        var head = 0
        var bytes = 0
        var finished = false
        var cancelled = false
        var lastDataTime = HostTime.now()
    }
    private let state = Mutex(State())
    private let space = DispatchSemaphore(value: 0)
    private let data: DispatchSemaphore
    private let done = DispatchSemaphore(value: 0)

    /// Starts the thread. `data` is signalled whenever something is appended.
    init(url: String, source: any ByteSource, at offset: Int64, maximumBytes: Int, data: DispatchSemaphore) {
        self.url = url
        self.source = source
        self.startOffset = offset
        self.maximumBytes = max(64 << 10, maximumBytes)
        self.data = data
        DispatchQueue(label: "oat.stream.reader").async { [self] in run() }
    }

    private func run() {
        defer {
            source.close()
            state.withLock { $0.finished = true }
            data.signal()
            done.signal()
        }
        do throws(AudioError) {
            let info = try source.open(at: startOffset)
            push(.opened(info), bytes: 0)
            var offset = info.startOffset
            let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 32 << 10, alignment: 16)
            defer { scratch.deallocate() }
            while !(state.withLock { $0.cancelled }) {
                let r = try source.read(into: scratch)
                switch r {
                case .bytes(let n):
                    let count = max(0, min(n, scratch.count))
                    push(.bytes(Array(UnsafeRawBufferPointer(rebasing: scratch[0..<count])), offset: offset), bytes: count)
                    offset += Int64(count)
                    if !waitForSpace() { return }
                case .metadata(let m):
                    push(.metadata(m), bytes: 0)
                case .reconnected(let info, let continuous):
                    if !continuous { offset = info.startOffset }
                    push(.reconnected(info, continuous: continuous), bytes: 0)
                case .end:
                    push(.end, bytes: 0)
                    return
                }
            }
        } catch {
            if error.code != .cancelled || !(state.withLock { $0.cancelled }) { push(.failed(error), bytes: 0) }
        }
    }

    private func push(_ item: ReaderItem, bytes: Int) {
        state.withLock { s in
            s.items.append(item)
            s.bytes += bytes
            s.lastDataTime = HostTime.now()
        }
        data.signal()
    }

    /// Blocks while the FIFO is full; false when cancelled.
    private func waitForSpace() -> Bool {
        while true {
            let (full, cancelled) = state.withLock { ($0.bytes >= maximumBytes, $0.cancelled) }
            if cancelled { return false }
            if !full { return true }
            _ = space.wait(timeout: .now() + .milliseconds(50))
        }
    }

    /// The next item, or nil when none is waiting (decoder thread).
    func next() -> ReaderItem? {
        let item = state.withLock { s -> ReaderItem? in
            guard s.head < s.items.count else { return nil }
            let item = s.items[s.head]
            s.head += 1
            if case .bytes(let b, _) = item { s.bytes -= b.count }
            if s.head > 256 && s.head * 2 > s.items.count {
                s.items.removeFirst(s.head)
                s.head = 0
            }
            return item
        }
        if item != nil { space.signal() }
        return item
    }

    /// Puts an item back at the front (the decoder split a chunk).
    func pushBack(_ item: ReaderItem) {
        state.withLock { s in
            if case .bytes(let b, _) = item { s.bytes += b.count }
            if s.head > 0 {
                s.head -= 1
                s.items[s.head] = item
            } else {
                s.items.insert(item, at: 0)
            }
        }
    }

    /// Undecoded bytes waiting.
    var bufferedBytes: Int { state.withLock { $0.bytes } }

    /// True once the thread has ended and everything it produced was taken.
    var isDrained: Bool { state.withLock { $0.finished && $0.head >= $0.items.count } }

    /// True once the thread has ended (end of resource, error or cancel).
    var isFinished: Bool { state.withLock { $0.finished } }

    /// Seconds since the thread last produced something.
    var secondsSinceData: Double { HostTime.seconds(ticks: HostTime.now() - state.withLock { $0.lastDataTime }) }

    /// The byte range of audio bytes waiting (first offset, end offset), if any.
    var pendingByteRange: (start: Int64, end: Int64)? {
        state.withLock { s in
            var start: Int64?
            var end: Int64 = 0
            for i in s.head..<s.items.count {
                if case .bytes(let b, let o) = s.items[i] {
                    if start == nil { start = o }
                    end = o + Int64(b.count)
                }
            }
            return start.map { ($0, end) }
        }
    }

    /// Drops waiting audio bytes before `offset` (a forward seek inside the buffer); items other
    /// than bytes before it are dropped too.
    func drop(before offset: Int64) {
        state.withLock { s in
            while s.head < s.items.count {
                switch s.items[s.head] {
                case .bytes(let b, let o):
                    if o + Int64(b.count) <= offset {
                        s.bytes -= b.count
                        s.head += 1
                    } else {
                        if o < offset {
                            let cut = Int(offset - o)
                            s.items[s.head] = .bytes(Array(b[cut...]), offset: offset)
                            s.bytes -= cut
                        }
                        return
                    }
                case .metadata, .reconnected, .opened:
                    s.head += 1
                case .end, .failed:
                    return
                }
            }
        }
        space.signal()
    }

    /// The source's counters.
    var statistics: ByteSourceStatistics { source.statistics }

    /// Stops the thread (cancels a blocked read) without waiting.
    func cancel() {
        state.withLock { $0.cancelled = true }
        source.cancel()
        space.signal()
    }

    /// Cancels and waits for the thread to end.
    func cancelAndJoin() {
        cancel()
        done.wait()
        done.signal()
    }
}
