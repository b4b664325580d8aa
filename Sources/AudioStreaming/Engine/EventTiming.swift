import AudioConversion
import AudioCore
import AudioDevices
import AudioFiles
import AudioQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Title and event timing: marks at output frames, reported when the device has played them.
extension DecoderThread {
    /// The metadata applies from the audio decoded next: a mark at the current output position.
    func markMetadata(_ item: ItemDecoder, _ m: StreamMetadata) {
        let pending = Int64(item.converter?.bufferedFrameCount ?? 0) + Int64(fadeHold.count / max(1, channels))
        let frame = enqueuedFrames + pending
        let seconds = item.baseSeconds + Double(item.outputFrames + pending) / deviceRate
        // Titles less than 0.25 s of audio apart (a server spamming titles): the newer replaces
        // the one not yet played, so the app gets at most a few a second.
        if let last = marks.last, case .metadata(_, let index, _) = last.kind, index == item.index,
           frame - last.frame < Int64(0.25 * deviceRate) {
            marks[marks.count - 1] = (frame, .metadata(m, item.index, seconds))
            return
        }
        marks.append((frame, .metadata(m, item.index, seconds)))
    }

    func processMarks(played: Int64) {
        var i = 0
        while i < marks.count, marks[i].frame <= played {
            let mark = marks[i]
            i += 1
            switch mark.kind {
            case .itemStarted(let index, let url, let format):
                engine.control.withLock { $0.playingIndex = index }
                engine.emit(.itemStarted(index: index, url: url, format: format))
            case .itemFinished(let index, let url):
                engine.emit(.itemFinished(index: index, url: url))
            case .metadata(let m, let index, let seconds):
                engine.emit(.metadata(m, index: index, playbackTime: seconds))
            case .segment(let index, let seconds):
                segment = (mark.frame, index, seconds)
                engine.control.withLock { c in
                    c.playingIndex = index
                    if let item = current, item.index == index {
                        c.currentInfo = item.info
                    }
                }
            }
        }
        if i > 0 { marks.removeFirst(i) }
        if played != Int64.max {
            engine.control.withLock { $0.position = positionSeconds(played: played) }
        }
    }

    func positionSeconds(played: Int64? = nil) -> Double {
        let p = played ?? queue?.playedStreamFrames ?? 0
        return segment.seconds + Double(max(0, p - segment.frame)) / deviceRate
    }

    func updateStatistics(played: Int64) {
        let live = [current, prefetched].compactMap { $0?.reader.statistics }
        let buffered = bufferedSeconds()
        let bytes = current?.reader.bufferedBytes ?? 0
        let elapsed = engine.elapsed
        let underruns = self.underruns
        let outputUnderruns = queueStarted ? (queue?.underrunCount ?? 0) : 0
        let playedSeconds = Double(playedBeforeReset + played) / deviceRate
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
