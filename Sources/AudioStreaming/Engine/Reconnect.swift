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

/// Reconnect and resume: pacing after failed entries, giving up, a lost device, rejoining a
/// live stream that ended.
extension DecoderThread {
    /// Before opening the next entry after failed ones: waits ``BufferingPolicy/failureBackoff``
    /// (doubled per failure in a row, at most 1 s), and after
    /// ``BufferingPolicy/maximumConsecutiveFailures`` gives up on the rest of the queue. False
    /// when a stop came meanwhile.
    func paceAfterFailures() -> Bool {
        guard consecutiveFailures > pacedFailures, !gaveUp else { return true }
        pacedFailures = consecutiveFailures
        let more = engine.control.withLock { next < $0.items.count }
        guard more else { return true }
        if consecutiveFailures >= max(1, policy.maximumConsecutiveFailures) {
            gaveUp = true
            let e = AudioError(.limitExceeded, component: "StreamingPlayer",
                "\(consecutiveFailures) queue entries in a row failed without playing (the last: \(lastError?.message ?? "unknown")); giving up on the rest of the queue")
            lastError = e
            engine.emit(.error(index: next, e))
            return true
        }
        let delay = min(1, max(0, policy.failureBackoff) * Double(1 << min(consecutiveFailures - 1, 16)))
        let deadline = HostTime.now() + HostTime.ticks(seconds: delay)
        while HostTime.now() < deadline {
            if engine.control.withLock({ $0.stopRequested }) { return false }
            _ = engine.wake.wait(timeout: .now() + .milliseconds(20))
        }
        return true
    }

    /// The device stayed lost: the session stops with the error. True (end the loop).
    func deviceGone(_ gone: DeviceGone) -> Bool {
        fail(nil, gone.error, index: engine.control.withLock { $0.playingIndex })
        engine.setState(.stopped(reason: .error(gone.error)))
        return true
    }

    /// A live stream that ended (the server closed the connection) is joined again: a new
    /// request, and the parser and decoder resynchronise (a discontinuity).
    func rejoin(_ item: ItemDecoder) throws {
        item.liveRejoins += 1
        debug("live stream \(item.url) ended: rejoining (\(item.liveRejoins))")
        if let converter = item.converter {
            try drainConverter(item, converter)
            converter.reset()
            converter.limitRemainingFrames(nil)
        }
        retire(item)
        let source = try makeSource(for: item.url)
        item.reader = SourceReader(url: item.url, source: source, at: 0, maximumBytes: policy.maximumBufferedBytes, timeshiftBytes: policy.timeshiftBytes, data: engine.wake)
        item.discontinuityNext = true
        item.fedOffset = 0
        item.retained.removeAll()
        item.retainedStart = 0
        item.pendingMetadata.removeAll()
        engine.control.withLock { $0.reconnectsFromClosedReaders += 1 }
        engine.emit(.reconnected(index: item.index, continuous: false))
    }
}
