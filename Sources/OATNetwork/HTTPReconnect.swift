// HTTPByteSource, the reconnect and resume policy (ReconnectPolicy): backoff with jitter and
// Retry-After, give-up time, the trickle check, and resuming at the next undelivered byte.
import OATCore
import COATCurlHeaders
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Reconnect and resume policy

extension HTTPByteSource.Core {
    /// A fault while reading: reconnects per policy (backoff, give-up time, healthy-run reset)
    /// and resumes at `position`, or throws when the fault is permanent or retries ran out.
    func recover(from fault: TransferFault, of t: HTTPTransferState, source: HTTPByteSource) throws(AudioError) {
        guard fault.retryable, options.reconnect.reconnects else { finishTransfer(); throw fault.error }
        let now = monotonicSeconds()
        // Healthy: the connection delivered bytes for `healthyAfter` (not a trickle; a
        // connection that sent a little and then stalled keeps counting toward give-up).
        let healthy = !fault.slow && t.lastProgress - lastReconnect > options.reconnect.healthyAfter
        starvedSince = nil
        if faultRunStart == nil || healthy {
            faultRunStart = now
            attempts = 0
        }
        let runStart = faultRunStart ?? now
        attempts += 1
        // However healthy each connection was: a server that closes every one is given up on.
        let p = options.reconnect
        recentReconnects = recentReconnects.filter { now - $0 < p.reconnectWindow } + [now]
        if recentReconnects.count > max(1, p.maximumReconnectsInWindow) {
            finishTransfer()
            var e = fault.error
            e.message += "; gave up after \(recentReconnects.count - 1) reconnects in \(Int(now - recentReconnects[0])) s (at most \(p.maximumReconnectsInWindow) in \(Int(p.reconnectWindow)) s)"
            throw e
        }
        finishTransfer()
        try wait(before: attempts, fault: fault, since: runStart, source: source)
        try reconnect(source: source, faultStart: runStart, attempt: &attempts)
        lastReconnect = monotonicSeconds()
    }

    /// Sleeps the backoff (or Retry-After) for `attempt` (1-based); throws the fault's error when
    /// that would pass the give-up time, and `cancelled` when cancelled meanwhile.
    func wait(before attempt: Int, fault: TransferFault, since start: Double, source: HTTPByteSource) throws(AudioError) {
        let p = options.reconnect
        var delay = min(p.maximumBackoff, p.initialBackoff * Double(1 << min(attempt - 1, 20)))
        delay *= 1 + Double.random(in: -p.jitter...p.jitter)
        if let ra = fault.retryAfter { delay = min(max(ra, 0), p.maximumRetryAfter) }
        if monotonicSeconds() + delay - start > p.giveUpAfter {
            var e = fault.error
            e.message += "; gave up after \(attempt) attempt\(attempt == 1 ? "" : "s")"
            throw e
        }
        let deadline = monotonicSeconds() + delay
        source.count { $0.isWaitingToRetry = true }
        defer { source.count { $0.isWaitingToRetry = false } }
        while true {
            if source.isCancelled { throw cancelledError() }
            let left = deadline - monotonicSeconds()
            if left <= 0 { return }
            source.wake.sleep(min(left, 1))
        }
    }

    /// The trickle check: a reader that has waited `stallTimeout` seconds and got fewer than
    /// `minimumBytesPerSecond` per second meanwhile is a fault (never an endless "buffering").
    /// A window that passes starts the next one.
    func trickleFault(now: Double) -> TransferFault? {
        let p = options.reconnect
        guard p.minimumBytesPerSecond > 0, let since = starvedSince else { return nil }
        let span = now - since
        guard span >= p.stallTimeout else { return nil }
        if Double(starvedBytes) < p.minimumBytesPerSecond * span {
            return TransferFault(error: AudioError(.timedOut, component: component,
                "only \(starvedBytes) bytes from \(displayURL) in \(String(format1: span)) s at byte \(position) (under \(Int(p.minimumBytesPerSecond)) bytes/s)"),
                retryable: true, slow: true)
        }
        starvedSince = now
        starvedBytes = 0
        return nil
    }

    /// Reopens after a fault: at `position` with a Range for a seekable resource, from the live
    /// edge otherwise. Queues the `.reconnected` event.
    func reconnect(source: HTTPByteSource, faultStart: Double, attempt: inout Int) throws(AudioError) {
        let seekable = info?.isSeekable ?? false
        while true {
            if source.isCancelled { throw cancelledError() }
            let at: Int64 = seekable ? position : 0
            switch openOnce(at: at, audioBase: position, source: source) {
            case .success(var i):
                if !seekable { i.startOffset = position }
                if seekable, let old = info?.totalLength, i.totalLength != old {
                    finishTransfer()
                    throw AudioError(.invalidData, component: component,
                        "\(displayURL) changed size from \(old) to \(i.totalLength.map(String.init) ?? "unknown") while resuming")
                }
                info = i
                source.count { $0.reconnects += 1 }
                pendingEvent = .reconnected(i, continuous: seekable)
                return
            case .failure(let fault):
                guard fault.retryable else { throw fault.error }
                attempt += 1
                try wait(before: attempt, fault: fault, since: faultStart, source: source)
            }
        }
    }
}
