import OATCore
import COATCurlHeaders
import COATCurl
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// libcurl's process-wide initialisation, done once before the first handle.
private let curlGlobal: Bool = curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK

/// Why libcurl cannot be used (it is loaded on first use), or nil once it is loaded.
let curlLoadError: String? = oat_curl_load().map { String(cString: $0) }

/// Monotonic seconds.
func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Reads an HTTP(S) resource or live stream (Icecast, SHOUTcast's `ICY 200 OK`).
///
/// Plain `http://` and `icy://` URLs go over a TCP socket of the source's own (HTTP/1.1 GET,
/// chunked or length-framed bodies, redirects while they stay plain http); `https://`, proxies,
/// credentials and redirects to https go through libcurl, loaded on first use
/// (``HTTPOptions/prefersLibcurl`` sends everything there).
///
/// TLS certificates are verified unless ``HTTPOptions/allowsInsecureTLS``; redirects are followed
/// up to ``HTTPOptions/maximumRedirects``; `open(at:)` with an offset sends `Range: bytes=N-` and
/// checks the 206 `Content-Range`; `Icy-MetaData: 1` is requested and metadata blocks are removed
/// from the audio and returned as ``ByteSourceRead/metadata(_:)``. Faults (disconnects, stalls,
/// 429/5xx) are retried per ``ReconnectPolicy``: an on-demand resource resumes at the next
/// undelivered byte (`continuous: true`), a live stream rejoins (`continuous: false`).
///
/// Memory is bounded: the transfer pauses when ``HTTPOptions/bufferLimit`` bytes wait for the reader.
///
/// Thread safety: `open`, `read` and `close` are serialised (call them from one thread; a
/// `close()` from another thread waits for a blocked `read`, so call ``cancel()`` first);
/// ``cancel()`` and ``statistics`` may be called from any thread, and `cancel()` wakes a blocked
/// call promptly.
public final class HTTPByteSource: ByteSource {
    /// The URL as given (`icy://` is read as `http://`).
    public let url: String
    /// The options.
    public let options: HTTPOptions

    /// libcurl's multi handle, made on the first transfer that needs libcurl (https, proxies,
    /// credentials, ``HTTPOptions/prefersLibcurl``); plain `http://` never loads libcurl.
    final class CurlMulti: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        init?() {
            guard let p = curl_multi_init() else { return nil }
            pointer = p
        }
        deinit { curl_multi_cleanup(pointer) }
    }
    private let curl = Locked<CurlMulti?>(nil)
    let wake = WakeUp()
    private let cancelled = Atomic<Bool>(false)
    private let stats = Locked(ByteSourceStatistics())
    private let io = Locked(())
    private let core: Core

    /// Creates a source for `url` (http, https, or icy as http). Nothing is fetched until `open`.
    public init(url: String, options: HTTPOptions = HTTPOptions()) {
        var u = url
        if u.lowercased().hasPrefix("icy://") { u = "http://" + u.dropFirst(6) }
        self.url = u
        self.options = options
        self.core = Core(url: u, options: options)
    }

    deinit {
        core.finishTransfer()
    }

    public func open(at offset: Int64) throws(AudioError) -> ByteSourceInfo {
        try io.withLock { _ throws(AudioError) -> ByteSourceInfo in
            try core.openFirst(at: offset, source: self)
        }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(AudioError) -> ByteSourceRead {
        try io.withLock { _ throws(AudioError) -> ByteSourceRead in
            try core.read(into: buffer, source: self)
        }
    }

    public func cancel() {
        cancelled.store(true, ordering: .sequentiallyConsistent)
        wake.wake()
        curl.withLock { if let m = $0 { _ = curl_multi_wakeup(m.pointer) } }
    }

    public func close() {
        io.withLock { _ in core.finishTransfer() }
    }

    public var statistics: ByteSourceStatistics { stats.withLock { $0 } }

    /// The info of the current response (nil before `open`).
    public var info: ByteSourceInfo? { io.withLock { _ in core.info } }

    /// True when the current (or last) request went over the plain socket transport instead of
    /// libcurl (see ``HTTPOptions/prefersLibcurl``).
    public var usesPlainSocket: Bool { io.withLock { _ in core.transfer.map { $0 is SocketTransfer } ?? core.plain } }

    var isCancelled: Bool { cancelled.load(ordering: .sequentiallyConsistent) }
    func count(_ body: (inout ByteSourceStatistics) -> Void) { stats.withLock { body(&$0) } }

    /// The multi handle, made (and libcurl loaded) on first use; the error when libcurl is missing.
    func curlMulti() -> Result<UnsafeMutableRawPointer, AudioError> {
        if let unavailable = curlLoadError {
            return .failure(AudioError(.network, component: "HTTPByteSource", "cannot open \(url): \(unavailable)"))
        }
        _ = curlGlobal
        return curl.withLock { m -> Result<UnsafeMutableRawPointer, AudioError> in
            if m == nil { m = CurlMulti() }
            guard let p = m?.pointer else {
                return .failure(AudioError(.network, component: "HTTPByteSource", "cannot create a libcurl multi handle for \(url)"))
            }
            return .success(p)
        }
    }
}

// MARK: - The source's state

extension HTTPByteSource {
    /// The reader-side state; only touched with `io` held.
    final class Core: @unchecked Sendable {
        let url: String
        let options: HTTPOptions
        var transfer: HTTPTransferState?
        /// True while requests go over the plain socket transport (false after a redirect off
        /// plain http, which libcurl then follows from the start).
        var plain: Bool
        var info: ByteSourceInfo?
        /// Stream offset of the next audio byte `read` returns.
        var position: Int64 = 0
        var pendingEvent: ByteSourceRead?
        var ended = false
        /// When the current run of faults began, and when the last reconnect succeeded.
        var faultRunStart: Double?
        var lastReconnect = 0.0
        var attempts = 0
        /// When the recent reconnects began (``ReconnectPolicy/maximumReconnectsInWindow``).
        var recentReconnects: [Double] = []
        /// Since when the reader has been waiting on the network (nil: the network is ahead), and
        /// the bytes delivered since: the throughput window of the trickle check.
        var starvedSince: Double?
        var starvedBytes: Int64 = 0

        init(url: String, options: HTTPOptions) {
            self.url = url
            self.options = options
            self.plain = PlainHTTPURL.carries(url, options: options)
        }

        var component: String { "HTTPByteSource" }
        var displayURL: String { redactedURL(url) }

        func finishTransfer() {
            transfer?.finish()
            transfer = nil
        }

        func cancelledError() -> AudioError {
            AudioError(.cancelled, component: component, "cancelled reading \(displayURL)")
        }

        // MARK: open

        func openFirst(at offset: Int64, source: HTTPByteSource) throws(AudioError) -> ByteSourceInfo {
            pendingEvent = nil
            ended = false
            faultRunStart = nil
            attempts = 0
            let policy = options.reconnect
            var attempt = 0
            var firstFault = 0.0
            while true {
                if source.isCancelled { throw cancelledError() }
                switch openOnce(at: offset, audioBase: offset, source: source) {
                case .success(let i):
                    info = i
                    position = offset
                    lastReconnect = monotonicSeconds()
                    starvedSince = nil
                    return i
                case .failure(let fault):
                    attempt += 1
                    if attempt == 1 { firstFault = monotonicSeconds() }
                    guard fault.retryable, attempt < max(1, policy.openAttempts) else { throw fault.error }
                    try wait(before: attempt, fault: fault, since: firstFault, source: source)
                }
            }
        }

        /// Starts one request and waits for its final response head.
        func openOnce(at offset: Int64, audioBase: Int64, source: HTTPByteSource) -> Result<ByteSourceInfo, TransferFault> {
            finishTransfer()
            let t: HTTPTransferState
            if plain, let target = PlainHTTPURL(url) {
                t = SocketTransfer(url: target, offset: offset, options: options, wake: source.wake, component: component)
            } else {
                let multi: UnsafeMutableRawPointer
                switch source.curlMulti() {
                case .success(let m): multi = m
                case .failure(let e): return .failure(TransferFault(error: e, retryable: false))
                }
                guard let c = CurlTransfer(multi: multi, maximumHeaderBytes: options.maximumHeaderBytes, bufferLimit: max(4096, options.bufferLimit)) else {
                    return .failure(TransferFault(error: AudioError(.network, component: component, "cannot create a libcurl handle for \(displayURL)"), retryable: false))
                }
                configure(c, url: url, offset: offset)
                c.start()
                t = c
            }
            t.icyCharset = options.icyCharset
            source.count { $0.requests += 1 }
            transfer = t
            let start = monotonicSeconds()
            while !t.headDone && !t.done {
                if source.isCancelled { finishTransfer(); return .failure(TransferFault(error: cancelledError(), retryable: false)) }
                t.drive(wait: true)
                let quiet = monotonicSeconds() - max(t.lastProgress, start)
                if !t.headDone && !t.done && quiet > options.reconnect.stallTimeout + options.reconnect.connectTimeout {
                    finishTransfer()
                    return .failure(TransferFault(error: AudioError(.timedOut, component: component,
                        "no response from \(displayURL) within \(Int(quiet)) s"), retryable: true))
                }
            }
            source.count { $0.bytesReceived += t.rawBytes; }
            t.rawBytes = 0
            if let s = t as? SocketTransfer, s.needsLibcurl {
                // A redirect off plain http: libcurl follows the chain from the start.
                finishTransfer()
                plain = false
                return openOnce(at: offset, audioBase: audioBase, source: source)
            }
            if !t.headDone {
                let f = fault(of: t)
                finishTransfer()
                return .failure(f)
            }
            return evaluateHead(t, offset: offset, audioBase: audioBase, source: source)
        }

        // MARK: read

        func read(into buffer: UnsafeMutableRawBufferPointer, source: HTTPByteSource) throws(AudioError) -> ByteSourceRead {
            guard buffer.count > 0, buffer.baseAddress != nil else {
                throw AudioError(.invalidArgument, component: component, "empty read buffer")
            }
            let waitStart = monotonicSeconds()
            var waited = false
            while true {
                if source.isCancelled { throw cancelledError() }
                if let e = pendingEvent { pendingEvent = nil; return e }
                if ended { return .end }
                guard let t = transfer else {
                    throw AudioError(.invalidState, component: component, "read before open of \(displayURL)")
                }
                if let m = t.metadata.first, m.audioByteOffset <= position {
                    _ = t.takeMetadata()
                    t.resumeIfDrained()
                    return .metadata(m)
                }
                let limit = t.metadata.first.map { Int(min(Int64(Int.max), $0.audioByteOffset - position)) } ?? Int.max
                let n = t.take(into: buffer, limit: limit)
                if n > 0 {
                    if waited { starvedBytes += Int64(n) } else { starvedSince = nil }
                    position += Int64(n)
                    source.count { $0.bytesDelivered += Int64(n) }
                    t.resumeIfDrained()
                    return .bytes(n)
                }
                var fault: TransferFault? = nil
                if t.done {
                    source.count { $0.bytesReceived += t.rawBytes }
                    t.rawBytes = 0
                    if t.succeeded {
                        if let total = info?.totalLength, position < total {
                            fault = TransferFault(error: AudioError(.network, component: component,
                                "\(displayURL) ended at byte \(position) of \(total)"), retryable: true)
                        } else if t.metadata.isEmpty, options.reconnect.rejoinsEndedLiveStreams, info?.totalLength == nil,
                                  info?.headers.contains(where: { $0.name.hasPrefix("icy-") }) == true {
                            fault = TransferFault(error: AudioError(.network, component: component,
                                "live stream \(displayURL) ended at byte \(position)"), retryable: true)
                        } else if !t.metadata.isEmpty {
                            return .metadata(t.takeMetadata())
                        } else {
                            ended = true
                            return .end
                        }
                    } else {
                        fault = self.fault(of: t)
                    }
                } else {
                    if !waited {
                        waited = true
                        if starvedSince == nil { starvedSince = waitStart; starvedBytes = 0 }
                    }
                    t.drive(wait: true)
                    source.count { $0.bytesReceived += t.rawBytes }
                    t.rawBytes = 0
                    let now = monotonicSeconds()
                    let quiet = now - max(t.lastProgress, waitStart)
                    if t.available == 0 && t.metadata.isEmpty && !t.done {
                        // A trickle (some bytes in the window, too few) is reported as one even
                        // when the gap before the next byte also reaches the stall timeout: at
                        // 1 byte/s over a 1 s stall window the two checks race.
                        if starvedBytes > 0, let slow = trickleFault(now: now) {
                            fault = slow
                        } else if quiet > options.reconnect.stallTimeout {
                            fault = TransferFault(error: AudioError(.timedOut, component: component,
                                "no data from \(displayURL) for \(String(format1: quiet)) s at byte \(position)"), retryable: true)
                        } else {
                            fault = trickleFault(now: now)
                        }
                    }
                }
                guard let fault else { continue }
                try recover(from: fault, of: t, source: source)
            }
        }
    }
}

/// The URL with any `user:password@` removed, for messages.
func redactedURL(_ url: String) -> String {
    let chars = Array(url)
    var schemeEnd: Int? = nil
    var i = 0
    while i + 2 < chars.count {
        if chars[i] == ":" && chars[i + 1] == "/" && chars[i + 2] == "/" { schemeEnd = i + 3; break }
        i += 1
    }
    guard let start = schemeEnd else { return url }
    var end = start
    while end < chars.count, chars[end] != "/", chars[end] != "?", chars[end] != "#" { end += 1 }
    guard let at = chars[start..<end].lastIndex(of: "@") else { return url }
    return String(chars[0..<start]) + String(chars[(at + 1)...])
}
