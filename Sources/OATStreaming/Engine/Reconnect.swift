import OATConversion
import OATCore
import OATNetwork
import OATDevices
import OATFiles
import OATQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Pacing after queue entries that failed without audio: a growing pause before the next entry
/// (``BufferingPolicy/failureBackoff`` doubled per failure in a row, at most 1 s) and, after
/// ``BufferingPolicy/maximumConsecutiveFailures`` in a row, giving up on the rest of the queue.
/// Audio from any entry starts the count again.
///
/// A value the decoder thread owns; the wait itself is the decoder thread's (on its clock).
struct FailurePacer {
    let maximumConsecutiveFailures: Int
    let backoff: Double
    /// Entries in a row that failed without audio.
    private(set) var consecutiveFailures = 0
    /// The count already paced for.
    private(set) var pacedFailures = 0
    /// The player gave up on the rest of the queue.
    private(set) var gaveUp = false

    init(policy: BufferingPolicy) {
        maximumConsecutiveFailures = max(1, policy.maximumConsecutiveFailures)
        backoff = max(0, policy.failureBackoff)
    }

    mutating func failed() { consecutiveFailures += 1 }

    mutating func audioArrived() {
        consecutiveFailures = 0
        pacedFailures = 0
    }

    /// What to do before opening the next entry.
    enum Decision: Equatable {
        /// Open it now.
        case proceed
        /// Wait this many seconds first.
        case wait(Double)
        /// Give up on the rest of the queue (just now: report it).
        case giveUp
    }

    /// Decides once per new failure; `moreEntries` when an entry is left to open.
    mutating func pace(moreEntries: Bool) -> Decision {
        guard consecutiveFailures > pacedFailures, !gaveUp else { return .proceed }
        pacedFailures = consecutiveFailures
        guard moreEntries else { return .proceed }
        if consecutiveFailures >= maximumConsecutiveFailures {
            gaveUp = true
            return .giveUp
        }
        return .wait(min(1, backoff * Double(1 << min(consecutiveFailures - 1, 16))))
    }
}

/// The output device was lost at `since` (engine clock) for `reason`: past `timeout` seconds
/// the session ends with an error naming the device (nil while there is time left).
func deviceGoneError(lost: (since: UInt64, reason: String), now: UInt64, timeout: Double, device: String) -> DeviceGone? {
    guard now > lost.since, HostTime.seconds(ticks: now - lost.since) > timeout else { return nil }
    return DeviceGone(error: AudioError(.deviceUnavailable, component: "StreamingPlayer",
        "the output device \(device) has been gone for \(Int(timeout)) s: \(lost.reason)"))
}

/// Reconnect and resume: pacing after failed entries, giving up, a lost device, rejoining a
/// live stream that ended.
extension DecoderThread {
    /// Before opening the next entry after failed ones: waits ``BufferingPolicy/failureBackoff``
    /// (doubled per failure in a row, at most 1 s), and after
    /// ``BufferingPolicy/maximumConsecutiveFailures`` gives up on the rest of the queue. False
    /// when a stop came meanwhile.
    func paceAfterFailures() -> Bool {
        let more = engine.control.withLock { next < $0.items.count }
        switch failures.pace(moreEntries: more) {
        case .proceed:
            return true
        case .giveUp:
            let e = AudioError(.limitExceeded, component: "StreamingPlayer",
                "\(failures.consecutiveFailures) queue entries in a row failed without playing (the last: \(lastError?.message ?? "unknown")); giving up on the rest of the queue")
            lastError = e
            engine.emit(.error(index: next, e))
            return true
        case .wait(let delay):
            let deadline = engine.clock.now() + HostTime.ticks(seconds: delay)
            while engine.clock.now() < deadline {
                if engine.control.withLock({ $0.stopRequested }) { return false }
                _ = engine.wake.wait(timeout: .now() + .milliseconds(20))
            }
            return true
        }
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
        let now = engine.clock.now()
        let window = HostTime.ticks(seconds: max(0, policy.liveRejoinWindow))
        item.recentRejoins = item.recentRejoins.filter { now &- $0 < window } + [now]
        if item.recentRejoins.count > max(1, policy.maximumLiveRejoinsInWindow) {
            throw AudioError(.timedOut, component: "StreamingPlayer",
                             "live stream \(item.url) closed the connection \(item.recentRejoins.count) times in \(Int(HostTime.seconds(ticks: now &- item.recentRejoins[0]))) s (at most \(policy.maximumLiveRejoinsInWindow) rejoins in \(Int(policy.liveRejoinWindow)) s); giving up")
        }
        item.liveRejoins += 1
        debug("live stream \(item.url) ended: rejoining (\(item.liveRejoins) in a row, \(item.recentRejoins.count) in \(Int(policy.liveRejoinWindow)) s)")
        try restartDecoder(item)
        retire(item)
        let source = try makeSource(for: item.url)
        item.reader = SourceReader(url: item.url, source: source, at: 0, maximumBytes: policy.maximumBufferedBytes, timeshiftBytes: policy.timeshiftBytes, data: engine.wake)
        item.restartInput(at: 0)
        engine.control.withLock { $0.reconnectsFromClosedReaders += 1 }
        engine.emit(.reconnected(index: item.index, continuous: false))
    }
}
