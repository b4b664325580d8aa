import OATCore
import OATNetwork
import OATFiles

/// Title and event timing: what the decoder learns (an item starts or ends, a title, a seek's new
/// position) is marked at the output frame it belongs to and reported when the device has played
/// that frame, so titles change when their audio is heard, not when their bytes arrive.
///
/// A value the decoder thread owns; it reads no clock and touches no device, so it is tested by
/// feeding it frame counts.
struct EventTimeline {
    /// What happens at a marked frame.
    enum Mark {
        case itemStarted(Int, String, AudioStreamBasicDescription)
        case itemFinished(Int, String)
        /// A title, its item and its position in the item (seconds).
        case metadata(StreamMetadata, Int, Double)
        /// From here on the item `index` plays from `seconds` (an item's start, a seek).
        case segment(Int, Double)
    }

    /// Marks not yet played, in frame order.
    private(set) var marks: [(frame: Int64, kind: Mark)] = []
    /// The segment playing: the output frame it began at, its item and the item position there.
    private(set) var segment: (frame: Int64, index: Int, seconds: Double) = (0, 0, 0)
    /// The most frames the queue has reported played since it was last reset (its count goes
    /// back to 0 once a drained queue stops: the position stays where the last frame left it).
    private(set) var playedHighWater: Int64 = 0

    /// Marks `kind` at output frame `frame`.
    mutating func add(_ kind: Mark, at frame: Int64) {
        marks.append((frame, kind))
    }

    /// Marks a title at `frame`. A title less than `spacing` frames after the previous unplayed
    /// title of the same item replaces it (a server spamming titles gets at most a few a second
    /// to the app).
    mutating func addMetadata(_ m: StreamMetadata, index: Int, seconds: Double, at frame: Int64, spacing: Int64) {
        if let last = marks.last, case .metadata(_, let lastIndex, _) = last.kind, lastIndex == index, frame - last.frame < spacing {
            marks[marks.count - 1] = (frame, .metadata(m, index, seconds))
            return
        }
        marks.append((frame, .metadata(m, index, seconds)))
    }

    /// Takes the queue's played-frame count; returns the high-water mark.
    @discardableResult
    mutating func observe(played: Int64) -> Int64 {
        playedHighWater = max(playedHighWater, played)
        return playedHighWater
    }

    /// Removes and returns the marks at or before `played`, in order; a segment mark among them
    /// becomes the segment playing.
    mutating func takeDue(played: Int64) -> [(frame: Int64, kind: Mark)] {
        var i = 0
        while i < marks.count, marks[i].frame <= played {
            if case .segment(let index, let seconds) = marks[i].kind { segment = (marks[i].frame, index, seconds) }
            i += 1
        }
        guard i > 0 else { return [] }
        let due = Array(marks[0..<i])
        marks.removeFirst(i)
        return due
    }

    /// The item position (seconds) when `played` frames have played at `rate`.
    func position(played: Int64, rate: Double) -> Double {
        segment.seconds + Double(max(0, played - segment.frame)) / rate
    }

    /// How long (milliseconds, 2...`cap`) a decoder with nothing else to do may sleep before the
    /// next mark is due, `played` frames having played at `rate`.
    func idleMilliseconds(played: Int64, rate: Double, cap: Int) -> Int {
        guard let mark = marks.first else { return cap }
        let due = Double(mark.frame - played) / rate
        return min(cap, max(2, Int(due * 1000) + 1))
    }

    /// The queue was reset (seek, skip, jump to live): nothing queued is played any more and its
    /// count starts at 0 again.
    mutating func reset() {
        marks.removeAll()
        playedHighWater = 0
    }

    /// Output frame 0 now plays item `index` from `seconds` (after a reset).
    mutating func restart(index: Int, seconds: Double) {
        segment = (0, index, seconds)
        marks.append((0, .segment(index, seconds)))
    }
}

extension DecoderThread {
    /// The metadata applies from the audio decoded next: a mark at the current output position
    /// (after the frames still in the decoder and held for a crossfade).
    func markMetadata(_ item: ItemDecoder, _ m: StreamMetadata) {
        let pending = Int64(item.converter?.bufferedFrameCount ?? 0) + Int64(feeder.crossfade.heldFrames)
        let frame = enqueuedFrames + pending
        let seconds = item.baseSeconds + Double(item.outputFrames + pending) / deviceRate
        timeline.addMetadata(m, index: item.index, seconds: seconds, at: frame, spacing: Int64(0.25 * deviceRate))
    }

    /// Reports the marks the device has played (`played` frames) and the position.
    func processMarks(played: Int64) {
        for mark in timeline.takeDue(played: played) {
            switch mark.kind {
            case .itemStarted(let index, let url, let format):
                engine.control.withLock { $0.playingIndex = index }
                engine.emit(.itemStarted(index: index, url: url, format: format))
            case .itemFinished(let index, let url):
                engine.emit(.itemFinished(index: index, url: url))
            case .metadata(let m, let index, let seconds):
                engine.emit(.metadata(m, index: index, playbackTime: seconds))
            case .segment(let index, _):
                engine.control.withLock { c in
                    c.playingIndex = index
                    if let item = pump.current, item.index == index {
                        c.currentInfo = item.info
                    }
                }
            }
        }
        if played != Int64.max {
            engine.control.withLock { $0.position = positionSeconds(played: played) }
        }
    }

    func positionSeconds(played: Int64? = nil) -> Double {
        timeline.position(played: played ?? queue?.playedStreamFrames ?? 0, rate: deviceRate)
    }

    func updateStatistics(played: Int64) {
        let live = [pump.current, pump.prefetched].compactMap { $0?.reader.statistics }
        let buffered = bufferedSeconds()
        let bytes = pump.current?.reader.bufferedBytes ?? 0
        let elapsed = engine.elapsed
        let underruns = buffering.underruns
        let outputUnderruns = queueStarted ? (queue?.underrunCount ?? 0) : 0
        let playedSeconds = Double(feeder.playedBeforeReset + played) / deviceRate
        engine.control.withLock { c in
            c.stats.bytesReceived = c.bytesFromClosedReaders + live.reduce(0) { $0 + $1.bytesReceived }
            c.stats.reconnects = c.reconnectsFromClosedReaders + live.reduce(0) { $0 + $1.reconnects }
            c.stats.requests = c.requestsFromClosedReaders + live.reduce(0) { $0 + $1.requests }
            c.stats.throughput = elapsed > 0 ? Double(c.stats.bytesReceived) / elapsed : 0
            c.stats.bufferedSeconds = buffered
            c.stats.bufferedBytes = bytes
            c.stats.underruns = underruns
            c.stats.outputUnderruns = outputUnderruns
            c.stats.playedSeconds = playedSeconds
        }
    }
}
