import AudioCore
import CCurl
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

/// Reads an HTTP(S) resource or live stream (Icecast, SHOUTcast's `ICY 200 OK`) through libcurl.
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

    private struct MultiHandle: @unchecked Sendable { let pointer: UnsafeMutableRawPointer }
    /// Set when libcurl could not be loaded: every open fails with it.
    private let unavailable: String?
    private let multiBox: MultiHandle
    private var multi: UnsafeMutableRawPointer { multiBox.pointer }
    private let cancelled = Atomic<Bool>(false)
    private let stats = Locked(ByteSourceStatistics())
    private let io = Locked(())
    private let core: Core

    /// Creates a source for `url` (http, https, or icy as http). Nothing is fetched until `open`.
    public init(url: String, options: HTTPOptions = HTTPOptions()) {
        unavailable = curlLoadError
        if unavailable == nil { _ = curlGlobal }
        var u = url
        if u.lowercased().hasPrefix("icy://") { u = "http://" + u.dropFirst(6) }
        self.url = u
        self.options = options
        // Without libcurl there is no multi handle; a placeholder that is never passed to curl.
        self.multiBox = MultiHandle(pointer: unavailable == nil ? curl_multi_init() : UnsafeMutableRawPointer(bitPattern: 1)!)
        self.core = Core(url: u, options: options)
    }

    deinit {
        guard unavailable == nil else { return }
        core.finishTransfer(multi: multi)
        curl_multi_cleanup(multi)
    }

    public func open(at offset: Int64) throws(AudioError) -> ByteSourceInfo {
        if let unavailable {
            throw AudioError(.network, component: "HTTPByteSource", "cannot open \(url): \(unavailable)")
        }
        return try io.withLock { _ throws(AudioError) -> ByteSourceInfo in
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
        if unavailable == nil { curl_multi_wakeup(multi) }
    }

    public func close() {
        guard unavailable == nil else { return }
        io.withLock { _ in core.finishTransfer(multi: multi) }
    }

    public var statistics: ByteSourceStatistics { stats.withLock { $0 } }

    /// The info of the current response (nil before `open`).
    public var info: ByteSourceInfo? { io.withLock { _ in core.info } }

    fileprivate var isCancelled: Bool { cancelled.load(ordering: .sequentiallyConsistent) }
    fileprivate var multiHandle: UnsafeMutableRawPointer { multi }
    fileprivate func count(_ body: (inout ByteSourceStatistics) -> Void) { stats.withLock { body(&$0) } }
}

// MARK: - One request

/// The state of one libcurl transfer; touched only by the thread that drives the multi handle
/// (the callbacks run inside curl_multi_perform on that thread).
final class CurlTransfer {
    let easy: UnsafeMutableRawPointer
    var requestHeaders: UnsafeMutablePointer<curl_slist>?
    var aliases: UnsafeMutablePointer<curl_slist>?
    let maximumHeaderBytes: Int
    let bufferLimit: Int
    var icyCharset: ICYCharset = .automatic

    // Response head.
    var head = HTTPResponseHead()
    var status: Int { head.status }
    var headers: [ByteSourceInfo.HeaderField] { head.headers }
    var headBytes = 0
    var headerOverflow = false
    /// Interim (1xx) heads received so far; more than ``maximumInterimResponses`` fail the request.
    var interimResponses = 0
    var interimOverflow = false
    var afterInterim = false
    /// A server may send `100 Continue` and `103 Early Hints`; more interim heads than this before
    /// the answer are an attack or a loop (they share the head byte limit with the final head).
    static let maximumInterimResponses = 8
    var headDone = false
    var followsRedirects = true

    // Body.
    var acceptBody = false
    var armed = false
    var demuxer: ICYDemuxer?
    var pending: [UInt8] = []
    var pendingStart = 0
    var discard: Int64 = 0
    var metadata: [StreamMetadata] = []
    /// Estimated memory of `metadata`: counted with the audio against `bufferLimit`, so a server
    /// sending a title every few bytes pauses the transfer like one sending audio.
    var metadataBytes = 0
    var paused = false
    var rawBytes: Int64 = 0
    var lastProgress = monotonicSeconds()

    // Completion.
    var done = false
    var result = CURLE_OK
    let errorBuffer: UnsafeMutablePointer<CChar> = {
        let p = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        p.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        return p
    }()

    init?(maximumHeaderBytes: Int, bufferLimit: Int) {
        guard let e = curl_easy_init() else { return nil }
        easy = e
        self.maximumHeaderBytes = maximumHeaderBytes
        self.bufferLimit = bufferLimit
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(requestHeaders)
        curl_slist_free_all(aliases)
        errorBuffer.deallocate()
    }

    var available: Int { pending.count - pendingStart }

    func take(into buffer: UnsafeMutableRawBufferPointer, limit: Int) -> Int {
        let n = min(buffer.count, available, limit)
        guard n > 0 else { return 0 }
        pending.withUnsafeBytes { src in
            buffer.baseAddress!.copyMemory(from: src.baseAddress! + pendingStart, byteCount: n)
        }
        pendingStart += n
        if pendingStart == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingStart = 0
        } else if pendingStart > 64 * 1024 && pendingStart * 2 > pending.count {
            pending.removeFirst(pendingStart)
            pendingStart = 0
        }
        return n
    }

    func appendAudio(_ bytes: UnsafeRawBufferPointer) {
        var b = bytes
        if discard > 0 {
            let d = Int(min(Int64(b.count), discard))
            discard -= Int64(d)
            b = UnsafeRawBufferPointer(rebasing: b[d...])
        }
        if !b.isEmpty { pending.append(contentsOf: b) }
    }

    /// Called by libcurl with body bytes.
    func body(_ data: UnsafeRawBufferPointer) -> Int {
        lastProgress = monotonicSeconds()
        guard acceptBody else { return data.count }   // an error or redirect body: dropped
        if !armed {   // the head is not evaluated yet (demuxer, skip): keep the bytes in libcurl
            paused = true
            return oat_curl_writefunc_pause()
        }
        if available + metadataBytes >= bufferLimit {
            paused = true
            return oat_curl_writefunc_pause()
        }
        rawBytes += Int64(data.count)
        if demuxer != nil {
            demuxer!.feed(data, audio: { appendAudio($0) }, metadata: {
                metadata.append($0)
                metadataBytes += SourceReader.cost(of: $0)
            })
        } else {
            appendAudio(data)
        }
        return data.count
    }

    /// Called by libcurl with each header line (status line, fields, the blank line).
    func header(_ data: UnsafeRawBufferPointer) -> Int {
        lastProgress = monotonicSeconds()
        rawBytes += Int64(data.count)
        headBytes += data.count
        if headBytes > maximumHeaderBytes {
            headerOverflow = true
            return 0
        }
        switch head.consume(data) {
        case .end:
            if (100..<200).contains(status) {
                interimResponses += 1
                afterInterim = true
                if interimResponses > Self.maximumInterimResponses {
                    interimOverflow = true
                    return 0
                }
            }
            // End of one response head: final unless it is 1xx or a redirect libcurl will follow.
            let redirect = (300..<400).contains(status) && followsRedirects && head.header("location") != nil
            if !(100..<200).contains(status) && !redirect {
                headDone = true
                acceptBody = (200..<300).contains(status)
            }
        case .status:
            // A redirect's head starts a new count; interim heads count with the head after them.
            if !afterInterim { headBytes = data.count }
            afterInterim = false
        case .field, .ignored:
            break
        }
        return data.count
    }

    func header(_ name: String) -> String? { head.header(name) }

    /// Takes the first waiting metadata.
    func takeMetadata() -> StreamMetadata {
        let m = metadata.removeFirst()
        metadataBytes -= SourceReader.cost(of: m)
        return m
    }

    /// Resumes a transfer paused at the buffer limit once the reader has taken half of it.
    func resumeIfDrained() {
        if paused && armed && available + metadataBytes < bufferLimit / 2 {
            paused = false
            lastProgress = monotonicSeconds()
            _ = oat_curl_unpause(easy)
        }
    }
}

private func writeCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?) -> Int {
    guard let user, let data else { return 0 }
    let t = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    return t.body(UnsafeRawBufferPointer(start: data, count: size * count))
}

private func headerCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?) -> Int {
    guard let user, let data else { return 0 }
    let t = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    return t.header(UnsafeRawBufferPointer(start: data, count: size * count))
}

// MARK: - The source's state

/// Why a transfer failed, and whether it is worth retrying.
struct TransferFault: Error {
    var error: AudioError
    var retryable: Bool
    var retryAfter: Double?
    /// A trickle (bytes arriving, but too few): the connection never counts as healthy.
    var slow = false
}

extension HTTPByteSource {
    /// The reader-side state; only touched with `io` held.
    final class Core: @unchecked Sendable {
        let url: String
        let options: HTTPOptions
        var transfer: CurlTransfer?
        var info: ByteSourceInfo?
        /// Stream offset of the next audio byte `read` returns.
        var position: Int64 = 0
        var pendingEvent: ByteSourceRead?
        var ended = false
        /// When the current run of faults began, and when the last reconnect succeeded.
        var faultRunStart: Double?
        var lastReconnect = 0.0
        var attempts = 0
        /// Since when the reader has been waiting on the network (nil: the network is ahead), and
        /// the bytes delivered since: the throughput window of the trickle check.
        var starvedSince: Double?
        var starvedBytes: Int64 = 0

        init(url: String, options: HTTPOptions) {
            self.url = url
            self.options = options
        }

        var component: String { "HTTPByteSource" }
        var displayURL: String { redactedURL(url) }

        func finishTransfer(multi: UnsafeMutableRawPointer) {
            if let t = transfer {
                curl_multi_remove_handle(multi, t.easy)
                transfer = nil
            }
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
                var numfds: Int32 = 0
                _ = curl_multi_poll(source.multiHandle, nil, 0, Int32(min(left, 1) * 1000) + 1, &numfds)
            }
        }

        /// Starts one request and waits for its final response head.
        func openOnce(at offset: Int64, audioBase: Int64, source: HTTPByteSource) -> Result<ByteSourceInfo, TransferFault> {
            finishTransfer(multi: source.multiHandle)
            guard let t = CurlTransfer(maximumHeaderBytes: options.maximumHeaderBytes, bufferLimit: max(4096, options.bufferLimit)) else {
                return .failure(TransferFault(error: AudioError(.network, component: component, "cannot create a libcurl handle for \(displayURL)"), retryable: false))
            }
            t.icyCharset = options.icyCharset
            configure(t, offset: offset)
            source.count { $0.requests += 1 }
            transfer = t
            curl_multi_add_handle(source.multiHandle, t.easy)
            let start = monotonicSeconds()
            while !t.headDone && !t.done {
                if source.isCancelled { finishTransfer(multi: source.multiHandle); return .failure(TransferFault(error: cancelledError(), retryable: false)) }
                drive(source: source, t)
                let quiet = monotonicSeconds() - max(t.lastProgress, start)
                if !t.headDone && !t.done && quiet > options.reconnect.stallTimeout + options.reconnect.connectTimeout {
                    finishTransfer(multi: source.multiHandle)
                    return .failure(TransferFault(error: AudioError(.timedOut, component: component,
                        "no response from \(displayURL) within \(Int(quiet)) s"), retryable: true))
                }
            }
            source.count { $0.bytesReceived += t.rawBytes; }
            t.rawBytes = 0
            if !t.headDone {
                let f = fault(of: t)
                finishTransfer(multi: source.multiHandle)
                return .failure(f)
            }
            return evaluateHead(t, offset: offset, audioBase: audioBase, source: source)
        }

        func configure(_ t: CurlTransfer, offset: Int64) {
            let e = t.easy
            _ = oat_curl_setopt_string(e, CURLOPT_URL, url)
            _ = oat_curl_setopt_pointer(e, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(t.errorBuffer))
            _ = oat_curl_setopt_long(e, CURLOPT_NOSIGNAL, 1)
            _ = oat_curl_setopt_string(e, CURLOPT_PROTOCOLS_STR, "http,https")
            _ = oat_curl_setopt_string(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
            _ = oat_curl_setopt_long(e, CURLOPT_FOLLOWLOCATION, options.maximumRedirects > 0 ? 1 : 0)
            t.followsRedirects = options.maximumRedirects > 0
            _ = oat_curl_setopt_long(e, CURLOPT_MAXREDIRS, max(0, options.maximumRedirects))
            _ = oat_curl_setopt_long(e, CURLOPT_CONNECTTIMEOUT_MS, Int(options.reconnect.connectTimeout * 1000))
            _ = oat_curl_setopt_long(e, CURLOPT_TCP_KEEPALIVE, 1)
            _ = oat_curl_setopt_string(e, CURLOPT_USERAGENT, options.userAgent)
            if options.allowsInsecureTLS {
                _ = oat_curl_setopt_long(e, CURLOPT_SSL_VERIFYPEER, 0)
                _ = oat_curl_setopt_long(e, CURLOPT_SSL_VERIFYHOST, 0)
            } else {
                _ = oat_curl_setopt_long(e, CURLOPT_SSL_VERIFYPEER, 1)
                _ = oat_curl_setopt_long(e, CURLOPT_SSL_VERIFYHOST, 2)
            }
            if let ca = options.caBundlePath { _ = oat_curl_setopt_string(e, CURLOPT_CAINFO, ca) }
            if let proxy = options.proxy { _ = oat_curl_setopt_string(e, CURLOPT_PROXY, proxy) }
            if let user = options.username {
                _ = oat_curl_setopt_long(e, CURLOPT_HTTPAUTH, 1 /* CURLAUTH_BASIC */)
                _ = oat_curl_setopt_string(e, CURLOPT_USERNAME, user)
                _ = oat_curl_setopt_string(e, CURLOPT_PASSWORD, options.password ?? "")
            }
            if offset > 0 { _ = oat_curl_setopt_string(e, CURLOPT_RANGE, "\(offset)-") }
            var list: UnsafeMutablePointer<curl_slist>? = nil
            if options.requestsICYMetadata { list = curl_slist_append(list, "Icy-MetaData: 1") }
            for h in options.headers { list = curl_slist_append(list, "\(h.name): \(h.value)") }
            t.requestHeaders = list
            if list != nil { _ = oat_curl_setopt_pointer(e, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list)) }
            t.aliases = curl_slist_append(nil, "ICY")
            _ = oat_curl_setopt_pointer(e, CURLOPT_HTTP200ALIASES, UnsafeMutableRawPointer(t.aliases))
            let user = Unmanaged.passUnretained(t).toOpaque()
            _ = oat_curl_setopt_write_function(e, writeCallback)
            _ = oat_curl_setopt_pointer(e, CURLOPT_WRITEDATA, user)
            _ = oat_curl_setopt_header_function(e, headerCallback)
            _ = oat_curl_setopt_pointer(e, CURLOPT_HEADERDATA, user)
        }

        /// One round of libcurl work: perform, collect completion, and wait up to 250 ms for sockets.
        func drive(source: HTTPByteSource, _ t: CurlTransfer, wait: Bool = true) {
            var running: Int32 = 0
            _ = curl_multi_perform(source.multiHandle, &running)
            collect(source: source, t)
            if t.done || t.available > 0 || (t.headDone && !t.acceptBody) || !t.metadata.isEmpty { return }
            if !t.headDone || wait {
                var numfds: Int32 = 0
                _ = curl_multi_poll(source.multiHandle, nil, 0, 250, &numfds)
                _ = curl_multi_perform(source.multiHandle, &running)
                collect(source: source, t)
            }
        }

        func collect(source: HTTPByteSource, _ t: CurlTransfer) {
            var left: Int32 = 0
            while let msg = curl_multi_info_read(source.multiHandle, &left) {
                if msg.pointee.msg == CURLMSG_DONE, msg.pointee.easy_handle == t.easy {
                    t.done = true
                    t.result = msg.pointee.data.result
                }
            }
        }

        func curlMessage(_ t: CurlTransfer) -> String {
            let detail = String(cString: t.errorBuffer)
            return detail.isEmpty ? String(cString: curl_easy_strerror(t.result)) : detail
        }

        /// The fault of a transfer that ended with a libcurl error (or before its head).
        func fault(of t: CurlTransfer) -> TransferFault {
            if t.interimOverflow {
                return TransferFault(error: AudioError(.limitExceeded, component: component,
                    "\(displayURL) sent more than \(CurlTransfer.maximumInterimResponses) interim (1xx) responses before its answer"), retryable: false)
            }
            if t.headerOverflow {
                return TransferFault(error: AudioError(.limitExceeded, component: component,
                    "response head from \(displayURL) exceeds \(options.maximumHeaderBytes) bytes"), retryable: false)
            }
            let code = t.result
            let message = curlMessage(t)
            let underlying = "curl \(code.rawValue): \(message)"
            switch code {
            case CURLE_TOO_MANY_REDIRECTS:
                var n = 0
                _ = oat_curl_getinfo_long(t.easy, CURLINFO_REDIRECT_COUNT, &n)
                return TransferFault(error: AudioError(.network, component: component,
                    "too many redirects from \(displayURL): the chain is longer than \(options.maximumRedirects) (followed \(n))", underlying: underlying), retryable: false)
            case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM:
                return TransferFault(error: AudioError(.network, component: component,
                    "TLS certificate of \(displayURL) was not accepted (set allowsInsecureTLS to skip verification)", underlying: underlying), retryable: false)
            case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
                return TransferFault(error: AudioError(.invalidArgument, component: component, "cannot fetch \(displayURL)", underlying: underlying), retryable: false)
            case CURLE_WRITE_ERROR:
                return TransferFault(error: AudioError(.network, component: component, "transfer of \(displayURL) aborted", underlying: underlying), retryable: false)
            case CURLE_OPERATION_TIMEDOUT:
                return TransferFault(error: AudioError(.timedOut, component: component, "connecting to \(displayURL) timed out", underlying: underlying), retryable: true)
            case CURLE_OK:
                return TransferFault(error: AudioError(.network, component: component, "\(displayURL) closed the connection before the response head"), retryable: true)
            default:
                return TransferFault(error: AudioError(.network, component: component, "cannot read \(displayURL)", underlying: underlying), retryable: true)
            }
        }

        /// Checks the final response head; on success, arms the body and returns its info.
        func evaluateHead(_ t: CurlTransfer, offset: Int64, audioBase: Int64, source: HTTPByteSource) -> Result<ByteSourceInfo, TransferFault> {
            let status = t.status
            guard (200..<300).contains(status) else {
                let fail: TransferFault
                let retryAfter = t.header("retry-after").flatMap(parseRetryAfter)
                switch status {
                case 429, 500...599:
                    fail = TransferFault(error: AudioError(.network, component: component, "\(displayURL) answered HTTP \(status)", underlying: "HTTP \(status)"),
                                         retryable: true, retryAfter: retryAfter)
                case 416:
                    fail = TransferFault(error: AudioError(.invalidArgument, component: component, "\(displayURL) has no byte \(offset) (HTTP 416)", underlying: "HTTP 416"), retryable: false)
                case 300..<400:
                    fail = TransferFault(error: AudioError(.network, component: component, "\(displayURL) answered HTTP \(status) without a usable Location", underlying: "HTTP \(status)"), retryable: false)
                default:
                    fail = TransferFault(error: AudioError(.network, component: component, "\(displayURL) answered HTTP \(status)\(statusName(status))", underlying: "HTTP \(status)"), retryable: false)
                }
                finishTransfer(multi: source.multiHandle)
                return .failure(fail)
            }
            var effective: UnsafePointer<CChar>? = nil
            _ = oat_curl_getinfo_string(t.easy, CURLINFO_EFFECTIVE_URL, &effective)
            let finalURL = effective.map { String(cString: $0) } ?? url
            var contentType: String? = nil
            if let ct = t.header("content-type") {
                let main = ct.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
                let trimmed = main.trimmingBlanks().lowercased()
                if !trimmed.isEmpty { contentType = trimmed }
            }
            let contentLength = t.header("content-length").flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil }
            var total: Int64? = nil
            var start: Int64 = 0
            if status == 206 {
                guard let cr = t.header("content-range"), let range = parseContentRange(cr) else {
                    finishTransfer(multi: source.multiHandle)
                    return .failure(TransferFault(error: AudioError(.invalidData, component: component,
                        "\(displayURL) answered 206 without a valid Content-Range"), retryable: false))
                }
                guard range.first == offset else {
                    finishTransfer(multi: source.multiHandle)
                    return .failure(TransferFault(error: AudioError(.invalidData, component: component,
                        "\(displayURL) answered the range request for byte \(offset) with bytes from \(range.first)"), retryable: false))
                }
                start = offset
                total = range.total
            } else {
                total = contentLength
                if offset > 0 {
                    guard offset <= options.maximumRangeSkip else {
                        finishTransfer(multi: source.multiHandle)
                        return .failure(TransferFault(error: AudioError(.unsupportedFormat, component: component,
                            "\(displayURL) ignored the range request for byte \(offset) (answered 200); skipping more than \(options.maximumRangeSkip) bytes is refused"), retryable: false))
                    }
                    t.discard = offset
                    start = offset
                }
            }
            let acceptRanges = t.header("accept-ranges")?.lowercased().contains("bytes") ?? false
            var icy: ICYStationInfo? = nil
            let hasICY = t.headers.contains { $0.name.hasPrefix("icy-") || $0.name.hasPrefix("ice-") }
            if hasICY {
                icy = ICYStationInfo(name: t.header("icy-name"), genre: t.header("icy-genre"), url: t.header("icy-url"),
                                     description: t.header("icy-description"),
                                     bitRate: t.header("icy-br").flatMap { Int($0.split(separator: ",").first ?? "") },
                                     metaInterval: t.header("icy-metaint").flatMap { Int($0) })
            }
            // With ICY metadata interleaved, lengths and ranges count metadata bytes too: the audio
            // stream has no usable length and cannot be resumed by byte.
            let demuxes = options.requestsICYMetadata && icy?.metaInterval != nil
            if demuxes { total = nil }
            let seekable = !demuxes && total != nil && (acceptRanges || status == 206)
            let live = total == nil || t.headers.contains { $0.name.hasPrefix("icy-") }
            let i = ByteSourceInfo(url: finalURL, contentType: contentType, totalLength: total, startOffset: start,
                                   isSeekable: seekable, isLive: live, headers: t.headers, icy: icy)
            if options.requestsICYMetadata, let metaint = icy?.metaInterval {
                // For a 200 to a range request the body starts at 0 and `discard` drops the skip.
                let base = t.discard > 0 ? audioBase - t.discard : audioBase
                do {
                    t.demuxer = try ICYDemuxer(metaInterval: metaint, audioOffset: base, charset: options.icyCharset)
                } catch {
                    finishTransfer(multi: source.multiHandle)
                    return .failure(TransferFault(error: AudioError(error.code, component: component, "\(displayURL): \(error.message)"), retryable: false))
                }
            }
            t.armed = true
            if t.paused {
                t.paused = false
                _ = oat_curl_unpause(t.easy)
            }
            return .success(i)
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
                    if t.result == CURLE_OK {
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
                    drive(source: source, t)
                    source.count { $0.bytesReceived += t.rawBytes }
                    t.rawBytes = 0
                    let now = monotonicSeconds()
                    let quiet = now - max(t.lastProgress, waitStart)
                    if t.available == 0 && t.metadata.isEmpty && !t.done && quiet > options.reconnect.stallTimeout {
                        fault = TransferFault(error: AudioError(.timedOut, component: component,
                            "no data from \(displayURL) for \(String(format1: quiet)) s at byte \(position)"), retryable: true)
                    } else if t.available == 0 && t.metadata.isEmpty && !t.done {
                        fault = trickleFault(now: now)
                    }
                }
                guard let fault else { continue }
                // A fault: reconnect per policy.
                guard fault.retryable, options.reconnect.reconnects else { finishTransfer(multi: source.multiHandle); throw fault.error }
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
                finishTransfer(multi: source.multiHandle)
                try wait(before: attempts, fault: fault, since: runStart, source: source)
                try reconnect(source: source, faultStart: runStart, attempt: &attempts)
                lastReconnect = monotonicSeconds()
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
                        finishTransfer(multi: source.multiHandle)
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
}

extension String {
    init(format1 value: Double) {
        let tenths = Int((value * 10).rounded())
        self = "\(tenths / 10).\(tenths % 10)"
    }
}

private func statusName(_ status: Int) -> String {
    switch status {
    case 401: return " (unauthorized)"
    case 403: return " (forbidden)"
    case 404: return " (not found)"
    case 410: return " (gone)"
    default: return ""
    }
}

/// Parses `Retry-After`: delta seconds or an HTTP date; returns seconds from now.
func parseRetryAfter(_ value: String) -> Double? {
    let v = value.trimmingBlanks()
    if let s = Int(v) { return s >= 0 ? Double(s) : nil }
    let t = curl_getdate(v, nil)
    guard t >= 0 else { return nil }
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return max(0, Double(t) - Double(now.tv_sec))
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
