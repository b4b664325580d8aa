// HTTPByteSource's plain-socket transport for http:// (and icy://): one GET over a nonblocking
// TCP socket (getaddrinfo, connect with a deadline, poll with the source's wake-up descriptor so
// cancel() is prompt), the response head read line by line under the head byte limit, redirects
// followed while they stay plain http, and the body framed by Content-Length, chunked encoding or
// the end of the connection. libcurl is not loaded for these: it and its TLS libraries cost about
// 8 MB of resident memory (docs/PERFORMANCE.md, issue 18).
import OATCore
#if canImport(Glibc)
import Glibc
#endif

/// A descriptor that `cancel()` makes readable, polled with every socket wait (a pipe).
final class WakeUp: Sendable {
    /// The read end, polled.
    let fd: Int32
    private let writeFD: Int32

    init() {
        var p: [Int32] = [-1, -1]
        if pipe(&p) == 0 {
            for f in p {
                _ = fcntl(f, F_SETFL, fcntl(f, F_GETFL) | O_NONBLOCK)
                _ = fcntl(f, F_SETFD, FD_CLOEXEC)
            }
        }
        fd = p[0]
        writeFD = p[1]
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
        if writeFD >= 0 { Glibc.close(writeFD) }
    }

    /// Wakes every poll on `fd` (sticky: the byte is never read; cancellation is final).
    func wake() {
        guard writeFD >= 0 else { return }
        var one: UInt8 = 1
        _ = Glibc.write(writeFD, &one, 1)
    }

    /// Sleeps up to `seconds`, or until woken.
    func sleep(_ seconds: Double) {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        _ = poll(&p, 1, Int32(max(0, min(seconds, 3600)) * 1000) + 1)
    }
}

/// One plain HTTP/1.1 request over a TCP socket (no TLS, no proxy, no authentication).
final class SocketTransfer: HTTPTransferState {
    private enum Phase { case resolve, connect, send, head, body, closed }
    private enum Framing { case none, length(Int64), chunked(ChunkedDecoder), untilClose }

    private let options: HTTPOptions
    private let offset: Int64
    private let wake: WakeUp
    private let component: String
    /// The URL being fetched (changes with each redirect followed).
    private(set) var url: PlainHTTPURL
    private var phase = Phase.resolve
    private var fd: Int32 = -1
    private var addresses: [(family: Int32, address: sockaddr_storage, length: socklen_t)] = []
    private var nextAddress = 0
    private var connectDeadline = 0.0
    private var connectError = ""
    private var request: [UInt8] = []
    private var sent = 0
    /// Bytes received and not parsed yet (head lines; body bytes that came with the head).
    private var raw: [UInt8] = []
    private var rawStart = 0
    private var firstLineOfHead = true
    private var framing = Framing.none
    private var redirects = 0
    private var scratch = [UInt8](repeating: 0, count: 16 * 1024)

    /// The fault that ended the transfer (nil while running or after a clean end).
    var fault: TransferFault?
    /// Set when a redirect leads off plain http (https, credentials): libcurl must take over.
    private(set) var needsLibcurl = false

    init(url: PlainHTTPURL, offset: Int64, options: HTTPOptions, wake: WakeUp, component: String) {
        self.url = url
        self.offset = offset
        self.options = options
        self.wake = wake
        self.component = component
        super.init(maximumHeaderBytes: options.maximumHeaderBytes, bufferLimit: max(4096, options.bufferLimit))
        followsRedirects = options.maximumRedirects > 0
        request = url.request(offset: offset, options: options)
        connectDeadline = monotonicSeconds() + options.reconnect.connectTimeout
    }

    deinit { closeSocket() }

    override var succeeded: Bool { fault == nil && !needsLibcurl }
    override var effectiveURL: String? { url.string }

    override func finish() {
        closeSocket()
        phase = .closed
    }

    override func arm() { armed = true }

    private var display: String { redactedURL(url.string) }

    private func closeSocket() {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
    }

    private func fail(_ error: AudioError, retryable: Bool) {
        fault = TransferFault(error: error, retryable: retryable)
        // Before the body is armed a failure fails the open (a bad status line or framing).
        if !armed { headDone = false }
        end()
    }

    private func end() {
        closeSocket()
        phase = .closed
        done = true
    }

    // MARK: driving

    override func drive(wait: Bool) {
        progress()
        if done || available > 0 || (headDone && !acceptBody) || !metadata.isEmpty { return }
        if headDone && (!wait || !armed) { return }
        var fds = [pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0)]
        var timeout: Int32 = 250
        switch phase {
        case .connect:
            fds.append(pollfd(fd: fd, events: Int16(POLLOUT), revents: 0))
            timeout = Int32(max(0, min(0.25, connectDeadline - monotonicSeconds())) * 1000) + 1
        case .send:
            fds.append(pollfd(fd: fd, events: Int16(POLLOUT), revents: 0))
        case .head, .body:
            if phase == .head || hasRoom { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        case .resolve, .closed:
            return
        }
        _ = poll(&fds, nfds_t(fds.count), timeout)
        progress()
    }

    /// Does all the work possible without blocking.
    private func progress() {
        while true {
            switch phase {
            case .resolve:
                resolve()
            case .connect:
                guard connectStep() else { return }
            case .send:
                guard sendStep() else { return }
            case .head:
                guard headStep() else { return }
            case .body:
                bodyStep()
                return
            case .closed:
                return
            }
        }
    }

    private func resolve() {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>? = nil
        let rc = getaddrinfo(url.host, String(url.port), &hints, &list)
        guard rc == 0, list != nil else {
            let why = String(cString: gai_strerror(rc))
            fail(AudioError(.network, component: component, "cannot read \(display)",
                            underlying: "cannot resolve host \(url.host): \(why)"), retryable: true)
            return
        }
        defer { freeaddrinfo(list) }
        addresses = []
        var p = list
        while let a = p {
            if let sa = a.pointee.ai_addr, Int(a.pointee.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { $0.baseAddress!.copyMemory(from: sa, byteCount: Int(a.pointee.ai_addrlen)) }
                addresses.append((a.pointee.ai_family, storage, a.pointee.ai_addrlen))
            }
            p = a.pointee.ai_next
        }
        nextAddress = 0
        connectError = "no address"
        phase = .connect
        startNextAddress()
    }

    /// Starts a nonblocking connect to the next address; fails when none is left.
    private func startNextAddress() {
        closeSocket()
        while nextAddress < addresses.count {
            var a = addresses[nextAddress]
            nextAddress += 1
            let s = socket(a.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard s >= 0 else { connectError = String(cString: strerror(errno)); continue }
            var on: Int32 = 1
            _ = setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &on, socklen_t(MemoryLayout<Int32>.size))
            let rc = withUnsafePointer(to: &a.address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(s, $0, a.length) }
            }
            if rc == 0 || errno == EINPROGRESS {
                fd = s
                return
            }
            connectError = String(cString: strerror(errno))
            Glibc.close(s)
        }
        fail(AudioError(.network, component: component, "cannot read \(display)",
                        underlying: "cannot connect to \(url.host) port \(url.port): \(connectError)"), retryable: true)
    }

    /// True when the connection is up (phase moved on) or failed; false while it is pending.
    private func connectStep() -> Bool {
        if fd < 0 { return true }   // failed: phase is closed
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        if poll(&p, 1, 0) > 0 {
            var err: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
            if err == 0 {
                lastProgress = monotonicSeconds()
                phase = .send
                return true
            }
            connectError = String(cString: strerror(err))
            startNextAddress()
            return true
        }
        if monotonicSeconds() >= connectDeadline {
            fail(AudioError(.timedOut, component: component, "connecting to \(display) timed out",
                            underlying: "no connection to \(url.host) port \(url.port) within \(String(format1: options.reconnect.connectTimeout)) s"), retryable: true)
            return true
        }
        return false
    }

    private func sendStep() -> Bool {
        while sent < request.count {
            let n = request.withUnsafeBytes { send(fd, $0.baseAddress! + sent, request.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return false }
            fail(AudioError(.network, component: component, "cannot read \(display)",
                            underlying: "sending the request failed: \(String(cString: strerror(errno)))"), retryable: true)
            return true
        }
        phase = .head
        return true
    }

    /// Receives into `raw`; returns the count, 0 at the end of the stream, -1 when nothing is
    /// there yet (a reset connection fails the transfer and returns -2).
    private func receive() -> Int {
        let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 {
            lastProgress = monotonicSeconds()
            if rawStart == raw.count { raw.removeAll(keepingCapacity: true); rawStart = 0 }
            raw.append(contentsOf: scratch[0..<n])
            return n
        }
        if n == 0 { return 0 }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return -1 }
        fail(AudioError(.network, component: component, "cannot read \(display)",
                        underlying: "receiving failed: \(String(cString: strerror(errno)))"), retryable: true)
        return -2
    }

    /// Parses head lines already received, then receives more; true when the phase changed.
    private func headStep() -> Bool {
        while true {
            if let line = takeLine() {
                if handleHeadLine(line) { return true }
                continue
            }
            // No whole line: the unfinished one counts against the limit too.
            if headBytes + (raw.count - rawStart) > maximumHeaderBytes {
                headerOverflow = true
                fail(AudioError(.limitExceeded, component: component, "response head from \(display) exceeds \(maximumHeaderBytes) bytes"), retryable: false)
                return true
            }
            switch receive() {
            case -2: return true
            case -1: return false
            case 0:
                fail(AudioError(.network, component: component, "\(display) closed the connection before the response head"), retryable: true)
                return true
            default: continue
            }
        }
    }

    private func takeLine() -> [UInt8]? {
        guard let nl = raw[rawStart...].firstIndex(of: 0x0A) else { return nil }
        let line = Array(raw[rawStart...nl])
        rawStart = nl + 1
        return line
    }

    /// Handles one head line; true when the phase changed (body, redirect, failure).
    private func handleHeadLine(_ line: [UInt8]) -> Bool {
        if firstLineOfHead {
            firstLineOfHead = false
            guard line.starts(with: Array("HTTP/1.".utf8)) || line.starts(with: Array("ICY ".utf8)) else {
                let shown = String(decoding: line.prefix(40).map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
                fail(AudioError(.invalidData, component: component, "\(display) did not answer with an HTTP status line (got \"\(shown)\")"), retryable: false)
                return true
            }
        }
        let wasHeadDone = headDone
        let ok = line.withUnsafeBytes { header($0) }
        if !ok {
            if interimOverflow {
                fail(AudioError(.limitExceeded, component: component,
                    "\(display) sent more than \(Self.maximumInterimResponses) interim (1xx) responses before its answer"), retryable: false)
            } else {
                fail(AudioError(.limitExceeded, component: component, "response head from \(display) exceeds \(maximumHeaderBytes) bytes"), retryable: false)
            }
            return true
        }
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        guard end == 0 else { return false }
        // The blank line: one head is complete.
        firstLineOfHead = true
        if status == 0 {
            fail(AudioError(.invalidData, component: component, "\(display) sent an invalid status line"), retryable: false)
            return true
        }
        if (100..<200).contains(status) { return false }
        if !wasHeadDone && headDone { return startBody() }
        // A redirect to follow.
        return redirect()
    }

    private func redirect() -> Bool {
        redirects += 1
        guard redirects <= options.maximumRedirects else {
            fail(AudioError(.network, component: component,
                "too many redirects from \(redactedURL(url.string)): the chain is longer than \(options.maximumRedirects) (followed \(options.maximumRedirects))",
                underlying: "maximum (\(options.maximumRedirects)) redirects followed"), retryable: false)
            return true
        }
        guard let next = header("location").flatMap({ url.resolve(location: $0) }) else {
            fail(AudioError(.network, component: component, "\(display) answered HTTP \(status) without a usable Location", underlying: "HTTP \(status)"), retryable: false)
            return true
        }
        guard let plain = PlainHTTPURL(next), PlainHTTPURL.carries(next, options: options) else {
            needsLibcurl = true
            end()
            return true
        }
        closeSocket()
        url = plain
        request = plain.request(offset: offset, options: options)
        sent = 0
        raw.removeAll(keepingCapacity: true)
        rawStart = 0
        connectDeadline = monotonicSeconds() + options.reconnect.connectTimeout
        phase = .resolve
        return true
    }

    /// Chooses the body's framing after the final head.
    private func startBody() -> Bool {
        phase = .body
        guard acceptBody else { return true }   // an error answer: its body is not read
        if status == 204 || status == 304 {
            framing = .length(0)
            return true
        }
        let encodings = headers.filter { $0.name == "transfer-encoding" }
            .flatMap { h -> [Substring] in h.value.lowercased().split(separator: ",") }
            .map { String($0).trimmingBlanks() }.filter { !$0.isEmpty && $0 != "identity" }
        if !encodings.isEmpty {
            guard encodings == ["chunked"] else {
                fail(AudioError(.unsupportedFormat, component: component,
                    "\(display) sent Transfer-Encoding \"\(encodings.joined(separator: ", "))\" (only chunked is supported)"), retryable: false)
                return true
            }
            framing = .chunked(ChunkedDecoder())
            return true
        }
        let lengths = Set(headers.filter { $0.name == "content-length" }.map { $0.value })
        if let v = lengths.first {
            guard lengths.count == 1, let n = Int64(v), n >= 0, v.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                fail(AudioError(.invalidData, component: component, "\(display) sent an invalid Content-Length \"\(lengths.sorted().joined(separator: ", "))\""), retryable: false)
                return true
            }
            framing = .length(n)
            return true
        }
        framing = .untilClose
        return true
    }

    private func bodyStep() {
        guard acceptBody, armed else { return }
        while hasRoom && !done {
            if rawStart < raw.count {
                let n = raw.count - rawStart
                let ok = raw.withUnsafeBytes { decode(UnsafeRawBufferPointer(rebasing: $0[rawStart..<(rawStart + n)])) }
                rawStart = raw.count
                if !ok { return }
                continue
            }
            if case .length(0) = framing { end(); return }
            switch receive() {
            case -2: return
            case -1: paused = false; return
            case 0: endOfStream(); return
            default: continue
            }
        }
        if !hasRoom { paused = true }
    }

    /// Decodes received body bytes per the framing; false when the transfer ended.
    private func decode(_ data: UnsafeRawBufferPointer) -> Bool {
        switch framing {
        case .none, .untilClose:
            deliver(data)
        case .length(let left):
            let n = Int(min(Int64(data.count), left))
            deliver(UnsafeRawBufferPointer(rebasing: data[0..<n]))
            framing = .length(left - Int64(n))
            if left - Int64(n) == 0 { end(); return false }
        case .chunked(var decoder):
            do throws(ChunkError) {
                try decoder.feed(data) { deliver($0) }
            } catch {
                // A framing error is the server's (it would send the same again): not retried.
                fail(AudioError(.invalidData, component: component, "\(display): bad chunked encoding: \(error.message)"), retryable: false)
                return false
            }
            framing = .chunked(decoder)
            if decoder.state == .done { end(); return false }
        }
        return true
    }

    private func endOfStream() {
        switch framing {
        case .length(let left) where left > 0:
            fail(AudioError(.network, component: component, "cannot read \(display)",
                            underlying: "the connection closed with \(left) bytes of the body outstanding"), retryable: true)
        case .chunked:
            fail(AudioError(.network, component: component, "cannot read \(display)",
                            underlying: "the connection closed inside the chunked body"), retryable: true)
        default:
            end()
        }
    }
}
