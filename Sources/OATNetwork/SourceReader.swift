import OATCore
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One thing the network thread hands the decoder, in stream order.
package enum ReaderItem {
    /// The source opened (or reopened at a Range offset).
    case opened(ByteSourceInfo)
    /// Audio bytes starting at audio byte offset `offset` (metadata stripped).
    case bytes([UInt8], offset: Int64)
    /// Timed metadata.
    case metadata(StreamMetadata)
    /// The source reconnected.
    case reconnected(ByteSourceInfo, continuous: Bool)
    /// Bytes were dropped before this audio byte offset (the timeshift buffer overflowed): the
    /// parser and decoder resynchronise.
    case discontinuity(offset: Int64)
    /// The resource ended.
    case end
    /// The source failed for good.
    case failed(AudioError)
}

/// The network thread of one item: opens a ``ByteSource`` at an offset and reads it into a
/// bounded FIFO that the decoder thread drains. The thread blocks when the FIFO holds
/// `maximumBytes` (bounded memory for endless streams) and ends at the end of the resource, on a
/// permanent error, or when cancelled.
package final class SourceReader: @unchecked Sendable {
    let url: String
    /// The byte offset the source was opened at.
    package let startOffset: Int64
    private let source: any ByteSource
    private let maximumBytes: Int
    /// Bytes a live stream may keep in the timeshift file beyond `maximumBytes` (0: none).
    private let timeshiftBytes: Int64
    /// An item in the FIFO: in memory, or audio bytes spilled to the timeshift file.
    private enum Stored {
        case item(ReaderItem)
        case spilled(at: Int64, count: Int, offset: Int64)
    }
    /// What a slot before `head` holds once its item was taken or dropped: the item's bytes
    /// are released at once, not when the array is next compacted (up to 256 taken chunks, a
    /// few hundred KB of a live stream, stayed referenced there; docs/PERFORMANCE.md, "The
    /// stream's footprint"). Nothing reads the slots before `head`.
    private static let taken = Stored.item(.end)
    private struct State {
        var items: [Stored] = []
        /// Bytes spilled to the timeshift file and not yet taken.
        var spooled: Int64 = 0
        var spoolWrite: Int64 = 0
        var spoolFD: Int32 = -1
        var live = false
        var head = 0
        var bytes = 0
        var finished = false
        var cancelled = false
        var lastDataTime = HostTime.now()
        /// Estimated memory of the metadata items waiting (counted in `bytes` too).
        var metadataBytes = 0
        /// The fields of the last metadata pushed (an unchanged repeat is dropped).
        var lastFields: [String: String]?
    }
    private let state = Locked(State())
    private let space = DispatchSemaphore(value: 0)
    private let data: DispatchSemaphore
    /// Set by the decoder while it has plenty decoded ahead: after a read that took all the
    /// source had, the thread then waits ``relaxedPauseMilliseconds`` before reading again, so a
    /// live stream arrives in fewer, larger chunks (fewer wake-ups of this thread and the
    /// decoder). A read that fills the buffer never waits (a fast download stays fast).
    let relaxed = Atomic<Bool>(false)
    static let relaxedPauseMilliseconds = 200
    /// Cuts a relaxed pause short (cancel, or the decoder running low).
    private let pauseWake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    /// Starts the thread. `data` is signalled whenever something is appended.
    package init(url: String, source: any ByteSource, at offset: Int64, maximumBytes: Int, timeshiftBytes: Int64 = 0, data: DispatchSemaphore) {
        self.url = url
        self.source = source
        self.startOffset = offset
        self.maximumBytes = max(64 << 10, maximumBytes)
        self.timeshiftBytes = max(0, timeshiftBytes)
        self.data = data
        DispatchQueue(label: "oat.stream.reader").async { [self] in run() }
    }

    deinit {
        let fd = state.withLock { $0.spoolFD }
        if fd >= 0 { Glibc.close(fd) }
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
            state.withLock { $0.live = info.isLive && timeshiftBytes > 0 }
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
                    if count < scratch.count && relaxed.load(ordering: .relaxed) {
                        _ = pauseWake.wait(timeout: .now() + .milliseconds(Self.relaxedPauseMilliseconds))
                    }
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

    /// The largest in-memory chunk made by merging, and the most handed over at once: the size
    /// of one read.
    static let chunkBytes = 32 << 10

    /// Audio bytes after a waiting title below which a newer title replaces it (coalesced: a
    /// server sending titles faster than this is shown only its newest one).
    static let metadataCoalesceBytes = 16 << 10
    /// The memory metadata items may take in the FIFO before every new title replaces the newest
    /// waiting one, whatever the audio between (a hard cap; each title also counts against
    /// `maximumBytes`).
    static let maximumMetadataBytes = 256 << 10

    /// What a metadata item costs in memory (its text plus the item's own overhead).
    static func cost(of m: StreamMetadata) -> Int {
        var n = 128 + (m.title?.utf8.count ?? 0) + (m.url?.utf8.count ?? 0)
        for (k, v) in m.fields { n += 32 + k.utf8.count + v.utf8.count }
        return n
    }

    private func push(_ item: ReaderItem, bytes: Int) {
        state.withLock { s in
            s.lastDataTime = HostTime.now()
            switch item {
            case .metadata(let m):
                pushMetadata(&s, m)
                return
            case .reconnected(_, continuous: false), .discontinuity:
                s.lastFields = nil
            default:
                break
            }
            if s.live, case .bytes(let b, let offset) = item, s.bytes >= maximumBytes {
                if spill(&s, b, offset) { return }
                s.live = false // no timeshift file: block at the memory limit instead
            }
            if case .bytes(let b, let offset) = item, appendToLast(&s, b, offset) {
                s.bytes += bytes
                return
            }
            s.items.append(.item(item))
            s.bytes += bytes
        }
        data.signal()
    }

    /// Appends audio to the last waiting in-memory chunk when it continues it (small chunks from
    /// a source that interleaves metadata every few bytes stay few items). False otherwise.
    private func appendToLast(_ s: inout State, _ bytes: [UInt8], _ offset: Int64) -> Bool {
        guard let last = s.items.indices.last, last >= s.head, case .item(.bytes(var b, let o)) = s.items[last],
              o + Int64(b.count) == offset, b.count + bytes.count <= Self.chunkBytes else { return false }
        s.items[last] = .item(.end)   // drop the array's second reference: appended in place
        b.append(contentsOf: bytes)
        s.items[last] = .item(.bytes(b, offset: o))
        return true
    }

    /// The largest spilled item made by merging adjacent chunks: a 16th of the timeshift file
    /// (so that dropping the oldest item when the ring is full drops little), 32 KiB to 1 MiB.
    private var spilledItemLimit: Int { max(32 << 10, min(1 << 20, Int(timeshiftBytes / 16))) }

    /// Merges the audio item at `index` into the one before it when they are contiguous (in the
    /// stream, and in the timeshift file for spilled audio).
    private func mergeAudio(_ s: inout State, at index: Int) {
        guard index > s.head, index < s.items.count else { return }
        switch (s.items[index - 1], s.items[index]) {
        case (.spilled(let a0, let c0, let o0), .spilled(let a1, let c1, let o1))
            where a0 + Int64(c0) == a1 && o0 + Int64(c0) == o1 && c0 + c1 <= spilledItemLimit:
            s.items[index - 1] = .spilled(at: a0, count: c0 + c1, offset: o0)
            s.items.remove(at: index)
        case (.item(.bytes(var b0, let o0)), .item(.bytes(let b1, let o1))) where o0 + Int64(b0.count) == o1 && b0.count + b1.count <= Self.chunkBytes:
            s.items[index - 1] = .item(.end)   // unique: appended in place
            b0.append(contentsOf: b1)
            s.items[index - 1] = .item(.bytes(b0, offset: o0))
            s.items.remove(at: index)
        default:
            break
        }
    }

    /// Queues a title, bounded: an unchanged repeat is dropped; a title that follows the newest
    /// waiting one after less than ``metadataCoalesceBytes`` of audio (or when the waiting titles
    /// already take ``maximumMetadataBytes``) replaces it. Titles count against the memory limit.
    private func pushMetadata(_ s: inout State, _ m: StreamMetadata) {
        guard m.fields != s.lastFields || m.fields.isEmpty && (m.title != nil || m.url != nil) else { return }
        s.lastFields = m.fields
        let cost = Self.cost(of: m)
        // The newest waiting title, with only audio after it (a few merged chunks at most).
        var audio = 0
        var found: Int?
        var i = s.items.count - 1
        scan: while i >= s.head && s.items.count - i <= 64 {
            switch s.items[i] {
            case .item(.metadata): found = i; break scan
            case .item(.bytes(let b, _)): audio += b.count
            case .spilled(_, let count, _): audio += count
            default: break scan   // no coalescing across an open, a rejoin or a gap
            }
            i -= 1
        }
        let overCap = s.metadataBytes + cost > Self.maximumMetadataBytes
        if overCap && (found == nil || audio >= Self.metadataCoalesceBytes) {
            // The hard cap: the oldest waiting title goes (the newest is the one that matters).
            found = s.items[s.head...].firstIndex { if case .item(.metadata) = $0 { true } else { false } }
        }
        if let at = found, audio < Self.metadataCoalesceBytes || overCap, case .item(.metadata(let old)) = s.items[at] {
            let oldCost = Self.cost(of: old)
            s.items.remove(at: at)
            s.metadataBytes -= oldCost
            s.bytes -= oldCost
            // The audio on both sides of the removed title is one run again: merge it, or a
            // title every few bytes would leave one tiny item per title.
            mergeAudio(&s, at: at)
        }
        s.items.append(.item(.metadata(m)))
        s.metadataBytes += cost
        s.bytes += cost
    }

    /// Appends `bytes` to the timeshift file (live streams, memory full); drops the oldest
    /// waiting audio when the file would pass its limit. False when the file cannot be used.
    private func spill(_ s: inout State, _ bytes: [UInt8], _ offset: Int64) -> Bool {
        if s.spoolFD < 0 {
            var template = Array((Self.temporaryDirectory() + "/oat-timeshift-XXXXXX").utf8CString)
            let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard fd >= 0 else { return false }
            // Close-on-exec: a child process (a tool, ffmpeg) must not inherit the backlog.
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
            s.spoolFD = fd
        }
        let capacity = timeshiftBytes
        guard Int64(bytes.count) <= capacity else { return false }
        // Make room: drop the oldest spilled audio until the new bytes fit (a discontinuity
        // marks the gap; other items stay in order).
        if s.spooled + Int64(bytes.count) > capacity {
            var need = s.spooled + Int64(bytes.count) - capacity
            var kept: [Stored] = []
            var marker: Int?
            var droppedUntil: Int64 = 0
            // Titles among the dropped audio: only the newest is kept (after the gap).
            var stale: StreamMetadata?
            for stored in s.items[s.head...] {
                if need > 0, case .spilled(_, let count, let o) = stored {
                    need -= Int64(count)
                    s.spooled -= Int64(count)
                    droppedUntil = o + Int64(count)
                    if marker == nil {
                        // The gap continues an earlier one (nothing between): one marker, and
                        // its title is the stale one so far.
                        if case .item(.metadata(let m))? = kept.last, kept.count >= 2, case .item(.discontinuity) = kept[kept.count - 2] {
                            stale = m
                            kept.removeLast()
                        }
                        if case .item(.discontinuity)? = kept.last {
                            marker = kept.count - 1
                        } else {
                            marker = kept.count
                            kept.append(.item(.discontinuity(offset: 0)))
                        }
                    }
                    continue
                }
                if need > 0, marker != nil, case .item(.metadata(let m)) = stored {
                    if let old = stale {
                        s.metadataBytes -= Self.cost(of: old)
                        s.bytes -= Self.cost(of: old)
                    }
                    stale = m
                    continue
                }
                kept.append(stored)
            }
            if let m = marker {
                kept[m] = .item(.discontinuity(offset: droppedUntil))
                if let title = stale { kept.insert(.item(.metadata(title)), at: m + 1) }
            }
            s.items = kept
            s.head = 0
        }
        // The file is a ring of `capacity` bytes: the live spilled bytes are the `spooled` bytes
        // before the write position.
        var done = 0
        while done < bytes.count {
            let at = s.spoolWrite % capacity
            let n = min(bytes.count - done, Int(capacity - at))
            let written = bytes.withUnsafeBytes { pwrite(s.spoolFD, $0.baseAddress! + done, n, off_t(at)) }
            guard written == n else { return false }
            let o = offset + Int64(done)
            if let last = s.items.indices.last, last >= s.head, case .spilled(let a0, let c0, let o0) = s.items[last],
               a0 + Int64(c0) == at, o0 + Int64(c0) == o, c0 + n <= spilledItemLimit {
                // Contiguous in the file and in the stream: one item (a source interleaving
                // metadata every few bytes would otherwise make millions of them).
                s.items[last] = .spilled(at: a0, count: c0 + n, offset: o0)
            } else {
                s.items.append(.spilled(at: at, count: n, offset: o))
            }
            s.spoolWrite += Int64(n)
            s.spooled += Int64(n)
            done += n
        }
        return true
    }

    /// Where the timeshift file goes: `$TMPDIR` when it is set to an absolute path, else `/tmp`.
    static func temporaryDirectory() -> String {
        if let t = getenv("TMPDIR").map({ String(cString: $0) }), t.hasPrefix("/") {
            var d = t
            while d.count > 1 && d.hasSuffix("/") { d.removeLast() }
            return d
        }
        return "/tmp"
    }

    /// Blocks while the FIFO is full; false when cancelled.
    private func waitForSpace() -> Bool {
        while true {
            let (full, cancelled) = state.withLock { ($0.bytes >= maximumBytes && !$0.live, $0.cancelled) }
            if cancelled { return false }
            if !full { return true }
            _ = space.wait(timeout: .now() + .milliseconds(50))
        }
    }

    /// The next item, or nil when none is waiting (decoder thread).
    package func next() -> ReaderItem? {
        let item = state.withLock { s -> ReaderItem? in
            guard s.head < s.items.count else { return nil }
            let stored = s.items[s.head]
            s.items[s.head] = Self.taken
            s.head += 1
            let item: ReaderItem
            switch stored {
            case .item(let i):
                item = i
                if case .bytes(let b, _) = i { s.bytes -= b.count }
                if case .metadata(let m) = i {
                    let cost = Self.cost(of: m)
                    s.bytes -= cost
                    s.metadataBytes -= cost
                }
            case .spilled(let at, let total, let offset):
                // A merged run is handed over 32 KiB at a time (the rest stays first in line).
                let count = min(total, Self.chunkBytes)
                if count < total {
                    s.head -= 1
                    s.items[s.head] = .spilled(at: at + Int64(count), count: total - count, offset: offset + Int64(count))
                }
                var b = [UInt8](repeating: 0, count: count)
                let n = b.withUnsafeMutableBytes { pread(s.spoolFD, $0.baseAddress, count, off_t(at)) }
                s.spooled -= Int64(count)
                item = n == count ? .bytes(b, offset: offset)
                    : .failed(AudioError(.io, component: "StreamingPlayer", "cannot read the timeshift buffer of \(url)"))
                if s.spooled == 0 { s.spoolWrite = 0 }
            }
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
    package func pushBack(_ item: ReaderItem) {
        state.withLock { s in
            if case .bytes(let b, _) = item { s.bytes += b.count }
            if s.head > 0 {
                s.head -= 1
                s.items[s.head] = .item(item)
            } else {
                s.items.insert(.item(item), at: 0)
            }
        }
    }

    /// Undecoded bytes waiting (in memory and in the timeshift file).
    package var bufferedBytes: Int { state.withLock { $0.bytes + Int($0.spooled) } }

    /// True once the thread has ended and everything it produced was taken.
    package var isDrained: Bool { state.withLock { $0.finished && $0.head >= $0.items.count } }

    /// True once the thread has ended (end of resource, error or cancel).
    package var isFinished: Bool { state.withLock { $0.finished } }

    /// Seconds since the thread last produced something.
    var secondsSinceData: Double {
        let last = state.withLock { $0.lastDataTime }
        let now = HostTime.now()
        return now > last ? HostTime.seconds(ticks: now - last) : 0
    }

    /// Seconds since the thread last produced something or the source last sent a request: a
    /// source working through an outage with its reconnect policy is not stalled (its policy
    /// bounds it), one that neither delivers nor retries is.
    package var secondsSinceActivity: Double {
        let stats = source.statistics
        let requests = stats.requests
        let now = HostTime.now()
        let last = activity.withLock { a -> UInt64 in
            // A new request, or a deliberate wait before the next one (Retry-After, back-off).
            if a.requests != requests || stats.isWaitingToRetry { a = (requests, now) }
            return a.time
        }
        let sinceRequest = now > last ? HostTime.seconds(ticks: now - last) : 0
        return min(secondsSinceData, sinceRequest)
    }
    private let activity = Locked<(requests: Int, time: UInt64)>((0, HostTime.now()))

    /// The byte range of audio bytes waiting (first offset, end offset), if any.
    package var pendingByteRange: (start: Int64, end: Int64)? {
        state.withLock { s in
            var start: Int64?
            var end: Int64 = 0
            for i in s.head..<s.items.count {
                switch s.items[i] {
                case .item(.bytes(let b, let o)):
                    if start == nil { start = o }
                    end = o + Int64(b.count)
                case .spilled(_, let count, let o):
                    if start == nil { start = o }
                    end = o + Int64(count)
                default:
                    break
                }
            }
            return start.map { ($0, end) }
        }
    }

    /// Drops waiting audio bytes before `offset` (a forward seek inside the buffer); items other
    /// than bytes before it are dropped too.
    package func drop(before offset: Int64) {
        state.withLock { s in
            while s.head < s.items.count {
                switch s.items[s.head] {
                case .item(.bytes(let b, let o)):
                    if o + Int64(b.count) <= offset {
                        s.bytes -= b.count
                        s.items[s.head] = Self.taken
                        s.head += 1
                    } else {
                        if o < offset {
                            let cut = Int(offset - o)
                            s.items[s.head] = .item(.bytes(Array(b[cut...]), offset: offset))
                            s.bytes -= cut
                        }
                        return
                    }
                case .spilled(let at, let count, let o):
                    if o + Int64(count) <= offset {
                        s.spooled -= Int64(count)
                        s.head += 1
                    } else {
                        if o < offset {
                            let cut = Int(offset - o)
                            s.items[s.head] = .spilled(at: at + Int64(cut), count: count - cut, offset: offset)
                            s.spooled -= Int64(cut)
                        }
                        return
                    }
                case .item(.metadata(let m)):
                    let cost = Self.cost(of: m)
                    s.bytes -= cost
                    s.metadataBytes -= cost
                    s.items[s.head] = Self.taken
                    s.head += 1
                case .item(.reconnected), .item(.opened), .item(.discontinuity):
                    s.head += 1
                case .item(.end), .item(.failed):
                    return
                }
            }
        }
        space.signal()
    }

    /// The source's counters.
    package var statistics: ByteSourceStatistics { source.statistics }

    /// Sets ``relaxed``; turning it off ends a pause at once.
    package func setRelaxed(_ on: Bool) {
        guard relaxed.exchange(on, ordering: .relaxed) != on else { return }
        if !on { pauseWake.signal() }
    }

    /// Stops the thread (cancels a blocked read) without waiting.
    package func cancel() {
        state.withLock { $0.cancelled = true }
        source.cancel()
        space.signal()
        pauseWake.signal()
    }

    /// Cancels and waits for the thread to end.
    func cancelAndJoin() {
        cancel()
        done.wait()
        done.signal()
    }
}
