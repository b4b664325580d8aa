// HTTPByteSource, the libcurl glue: one transfer (CurlTransfer) with its write/header callbacks,
// its options (TLS, redirects, proxy, auth, Range, Icy-MetaData) and the multi-handle driving.
import OATCore
import COATCurlHeaders
import COATCurl
#if canImport(Glibc)
import Glibc
#endif

// MARK: - One request

/// The state of one HTTP request, whatever carries it (libcurl or a plain socket): the response
/// head, the body waiting for the reader (ICY metadata removed), and completion. Touched only by
/// the thread that drives it.
class HTTPTransferState {
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

    init(maximumHeaderBytes: Int, bufferLimit: Int) {
        self.maximumHeaderBytes = maximumHeaderBytes
        self.bufferLimit = bufferLimit
    }

    // MARK: what each carrier provides

    /// True when the transfer ended without a transport error (read once `done`).
    var succeeded: Bool { true }
    /// The URL the final response came from (after redirects).
    var effectiveURL: String? { nil }
    /// One round of work: progress without blocking, then (unless something is ready for the
    /// reader, or `wait` is false once the head is in) wait up to 250 ms for the network.
    func drive(wait: Bool) {}
    /// Lets the body flow once the head has been evaluated (`armed`).
    func arm() { armed = true }
    /// Ends the transfer and releases its connection.
    func finish() {}
    /// Resumes a transfer paused at the buffer limit.
    func unpause() {}

    // MARK: shared

    var available: Int { pending.count - pendingStart }
    /// True when the buffer has room for more body bytes.
    var hasRoom: Bool { available + metadataBytes < bufferLimit }

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

    /// Takes body bytes of an armed transfer (the carrier checked `hasRoom` before reading them).
    func deliver(_ data: UnsafeRawBufferPointer) {
        rawBytes += Int64(data.count)
        if demuxer != nil {
            demuxer!.feed(data, audio: { appendAudio($0) }, metadata: {
                metadata.append($0)
                metadataBytes += SourceReader.cost(of: $0)
            })
        } else {
            appendAudio(data)
        }
    }

    /// Takes one header line (status line, field, or the blank line). False when the head is too
    /// large or has too many interim responses (the transfer must stop).
    func header(_ data: UnsafeRawBufferPointer) -> Bool {
        lastProgress = monotonicSeconds()
        rawBytes += Int64(data.count)
        headBytes += data.count
        if headBytes > maximumHeaderBytes {
            headerOverflow = true
            return false
        }
        switch head.consume(data) {
        case .end:
            if (100..<200).contains(status) {
                interimResponses += 1
                afterInterim = true
                if interimResponses > Self.maximumInterimResponses {
                    interimOverflow = true
                    return false
                }
            }
            // End of one response head: final unless it is 1xx or a redirect that will be followed.
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
        return true
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
            unpause()
        }
    }
}

/// One libcurl transfer: its easy handle on the source's multi handle, and the write/header
/// callbacks (they run inside curl_multi_perform on the driving thread).
final class CurlTransfer: HTTPTransferState {
    let easy: UnsafeMutableRawPointer
    let multi: UnsafeMutableRawPointer
    var requestHeaders: UnsafeMutablePointer<curl_slist>?
    var aliases: UnsafeMutablePointer<curl_slist>?
    var added = false
    var result = CURLE_OK
    let errorBuffer: UnsafeMutablePointer<CChar> = {
        let p = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        p.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        return p
    }()

    init?(multi: UnsafeMutableRawPointer, maximumHeaderBytes: Int, bufferLimit: Int) {
        guard let e = curl_easy_init() else { return nil }
        easy = e
        self.multi = multi
        super.init(maximumHeaderBytes: maximumHeaderBytes, bufferLimit: bufferLimit)
    }

    deinit {
        if added { curl_multi_remove_handle(multi, easy) }
        curl_easy_cleanup(easy)
        curl_slist_free_all(requestHeaders)
        curl_slist_free_all(aliases)
        errorBuffer.deallocate()
    }

    override var succeeded: Bool { result == CURLE_OK }

    override var effectiveURL: String? {
        var effective: UnsafePointer<CChar>? = nil
        _ = oat_curl_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &effective)
        return effective.map { String(cString: $0) }
    }

    func start() {
        curl_multi_add_handle(multi, easy)
        added = true
    }

    override func finish() {
        if added { curl_multi_remove_handle(multi, easy); added = false }
    }

    override func arm() {
        armed = true
        if paused {
            paused = false
            _ = oat_curl_unpause(easy)
        }
    }

    override func unpause() { _ = oat_curl_unpause(easy) }

    override func drive(wait: Bool) {
        var running: Int32 = 0
        _ = curl_multi_perform(multi, &running)
        collect()
        if done || available > 0 || (headDone && !acceptBody) || !metadata.isEmpty { return }
        if !headDone || wait {
            var numfds: Int32 = 0
            _ = curl_multi_poll(multi, nil, 0, 250, &numfds)
            _ = curl_multi_perform(multi, &running)
            collect()
        }
    }

    func collect() {
        var left: Int32 = 0
        while let msg = curl_multi_info_read(multi, &left) {
            if msg.pointee.msg == CURLMSG_DONE, msg.pointee.easy_handle == easy {
                done = true
                result = msg.pointee.data.result
            }
        }
    }

    /// Called by libcurl with body bytes.
    func body(_ data: UnsafeRawBufferPointer) -> Int {
        lastProgress = monotonicSeconds()
        guard acceptBody else { return data.count }   // an error or redirect body: dropped
        if !armed || !hasRoom {   // the head is not evaluated yet, or the buffer is full: keep the bytes in libcurl
            paused = true
            return oat_curl_writefunc_pause()
        }
        deliver(data)
        return data.count
    }

    /// Called by libcurl with each header line.
    func curlHeader(_ data: UnsafeRawBufferPointer) -> Int {
        header(data) ? data.count : 0
    }

    var message: String {
        let detail = String(cString: errorBuffer)
        return detail.isEmpty ? String(cString: curl_easy_strerror(result)) : detail
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
    return t.curlHeader(UnsafeRawBufferPointer(start: data, count: size * count))
}

// MARK: - Driving a transfer

extension HTTPByteSource.Core {
    func configure(_ t: CurlTransfer, url: String, offset: Int64) {
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
}
