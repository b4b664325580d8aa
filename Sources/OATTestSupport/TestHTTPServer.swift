import OATCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A loopback HTTP/1.1 server for tests, with scripted faults.
///
/// It binds 127.0.0.1 on a free port, runs one thread per connection and answers every request
/// with `Connection: close`. Each path has a ``Route``: an in-memory body, a file, or an endless
/// live body; Range support; ICY (`ICY 200 OK`, metadata every `metaint` bytes with titles that can
/// change while streaming); chunked encoding; throttling; and per-request ``Fault``s (the n-th
/// request to a path gets `faults[n]`): disconnects, stalls, fixed statuses with `Retry-After`.
/// Every request is logged (``requests``). ``stop()`` closes every socket and joins every thread.
public final class TestHTTPServer: @unchecked Sendable {
    /// One logged request.
    public struct Request: Sendable, Equatable {
        /// The method (`GET`, `HEAD`).
        public var method: String
        /// The path without the query.
        public var path: String
        /// The request target as sent (path and query).
        public var target: String
        /// The `Range` header, if any.
        public var range: String?
        /// Every header, names lower-cased.
        public var headers: [String: String]
    }

    /// Where a route's body comes from.
    public enum Body: Sendable {
        /// These bytes.
        case bytes([UInt8])
        /// The file at this path (read when the route is set).
        case file(String)
        /// An endless live body of ``TestHTTPServer/patternByte(at:)`` bytes.
        case endlessPattern
        /// These bytes repeated forever (a looping live stream).
        case looping([UInt8])
        /// `prefix` once, then `repeating` forever (a header followed by endless filler).
        case endless(prefix: [UInt8], repeating: [UInt8])

        /// The file at `path` repeated forever (a looping live stream; read now).
        public static func loopingFile(_ path: String) -> Body { .looping(readWholeFile(path)) }
    }

    /// A scripted fault for one request.
    public enum Fault: Sendable, Equatable {
        /// Serve normally.
        case none
        /// Send the head and `afterBytes` body bytes, then close the connection.
        case disconnect(afterBytes: Int)
        /// Send the head and `afterBytes` body bytes, then send nothing for `seconds`, then go on.
        case stall(afterBytes: Int, seconds: Double)
        /// Answer with this status (and `Retry-After` when given) and a short body.
        case status(Int, retryAfter: String?)
        /// Close the connection without answering.
        case dropConnection
        /// A network outage: send the head and `afterBytes` body bytes, close the connection, and
        /// then drop every request to this path (closed without an answer) for `seconds`.
        case outage(afterBytes: Int, seconds: Double)
        /// Send `count` interim `HTTP/1.1 100 Continue` heads, one every `interval` seconds, before
        /// the answer (`Int.max`: for as long as the client listens).
        case interimResponses(count: Int, interval: Double)
    }

    /// How one path is answered.
    public struct Route: Sendable {
        /// The body.
        public var body: Body
        /// The status of a normal answer (200; 206 is used for honoured ranges).
        public var status: Int = 200
        /// The `Content-Type` (nil: none sent).
        public var contentType: String?
        /// Extra raw header lines (`Name: value`).
        public var extraHeaders: [String] = []
        /// Honour `Range` and send `Accept-Ranges: bytes` (finite bodies only).
        public var acceptsRanges = true
        /// Send `Content-Length` (finite bodies, not chunked).
        public var sendsContentLength = true
        /// Use chunked transfer encoding.
        public var chunked = false
        /// Answer with `ICY 200 OK` instead of `HTTP/1.1 200 OK`.
        public var icyStatusLine = false
        /// Insert ICY metadata every this many body bytes when the request has `Icy-MetaData: 1`.
        public var icyMetaInterval: Int?
        /// Raw metadata blocks (length byte included) sent in order at the first insertions instead
        /// of the title blocks; after them the normal title logic resumes.
        public var icyRawBlocks: [[UInt8]] = []
        /// Send a new title (`Title 1`, `Title 2`, ...) at every metadata insertion (a server
        /// spamming titles) instead of the title set with ``TestHTTPServer/setTitle(_:for:)``.
        public var icyNewTitleEveryBlock = false
        /// Send at most this many body bytes per second.
        public var throttleBytesPerSecond: Int?
        /// Faults by request number to this path (request 0 gets `faults[0]`; beyond: none).
        public var faults: [Fault] = []
        /// A `Location` to redirect to (with ``status`` 302 unless set to another 3xx).
        public var location: String?
        /// The `Authorization` header value required (401 otherwise).
        public var requiredAuthorization: String?

        /// Creates a route.
        public init(body: Body, contentType: String? = nil) {
            self.body = body
            self.contentType = contentType
        }
    }

    /// The byte at `index` of ``Body/endlessPattern`` (not periodic at 256, so offsets matter).
    public static func patternByte(at index: Int64) -> UInt8 {
        UInt8(truncatingIfNeeded: (index &* 31) ^ (index >> 9) ^ (index >> 17))
    }

    /// The port bound on 127.0.0.1.
    public let port: Int
    private let listenFD: Int32
    private struct State {
        var routes: [String: Route] = [:]
        var loaded: [String: [UInt8]] = [:]
        var titles: [String: String] = [:]
        var requests: [Request] = []
        var counts: [String: Int] = [:]
        var outageUntil: [String: Double] = [:]
        var connections: [Int32: JoinableThread] = [:]
        var finished: [JoinableThread] = []
        var stopping = false
    }
    private let state = Locked(State())
    private var acceptThread: JoinableThread?

    /// Binds 127.0.0.1 port 0 and starts accepting.
    public init() throws(AudioError) {
        let (fd, bound) = try listenOnLoopback(component: "TestHTTPServer", backlog: 64)
        port = bound
        listenFD = fd
        acceptThread = try serveOnThread(listening: fd, name: "test-http-accept") { [self] in acceptLoop() }
    }

    deinit { stop() }

    /// `http://127.0.0.1:PORT` + `path`.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Sets how `path` is answered (replacing any earlier route and resetting its request count).
    public func route(_ path: String, _ route: Route) {
        var loaded: [UInt8]? = nil
        if case .file(let p) = route.body { loaded = readWholeFile(p) }
        state.withLock {
            $0.routes[path] = route
            $0.counts[path] = 0
            if let loaded { $0.loaded[path] = loaded }
        }
    }

    /// Serves `bytes` at `path` with Range support.
    public func serve(_ path: String, bytes: [UInt8], contentType: String? = "application/octet-stream") {
        route(path, Route(body: .bytes(bytes), contentType: contentType))
    }

    /// Answers `path` with a redirect to `location`.
    public func redirect(_ path: String, to location: String, status: Int = 302) {
        var r = Route(body: .bytes([]))
        r.status = status
        r.location = location
        route(path, r)
    }

    /// Sets the ICY title sent for `path` from the next metadata insertion on (also while streaming).
    public func setTitle(_ title: String, for path: String) {
        state.withLock { $0.titles[path] = title }
    }

    /// Every request so far, in arrival order.
    public var requests: [Request] { state.withLock { $0.requests } }

    /// The requests to `path`, in arrival order.
    public func requests(to path: String) -> [Request] { requests.filter { $0.path == path } }

    /// Stops accepting, closes every connection and joins every thread. Idempotent.
    public func stop() {
        let first = state.withLock { s -> Bool in
            defer { s.stopping = true }
            return !s.stopping
        }
        if first {
            shutdown(listenFD, Int32(SHUT_RDWR))
            acceptThread?.join()
            Glibc.close(listenFD)
        }
        // A connection's descriptor is shut down only under the lock, and its thread closes it
        // under the same lock as it leaves `connections`: a number in `connections` is always
        // that connection's open socket, never one the process has reused since.
        while true {
            let threads = state.withLock { s -> [JoinableThread] in
                for fd in s.connections.keys { shutdown(fd, Int32(SHUT_RDWR)) }
                let t = Array(s.connections.values) + s.finished
                s.finished.removeAll()
                return t
            }
            if threads.isEmpty { break }
            for t in threads { t.join() }
        }
    }

    private var isStopping: Bool { state.withLock { $0.stopping } }

    private func acceptLoop() {
        while true {
            let c = accept(listenFD, nil, nil)
            if c < 0 {
                if errno == EINTR { continue }
                return
            }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var one: Int32 = 1
            setsockopt(c, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let accepted = state.withLock { s -> Bool? in
                if s.stopping { return false }
                // nil: the system refused a thread (the connection is closed unanswered).
                guard let thread = try? JoinableThread(name: "test-http-connection", { [self] in
                    serveConnection(c)
                    // Closed while leaving the table, under its lock: closing first let accept()
                    // hand the same number to a new connection whose entry this one then took
                    // away, and this thread was never joined (ThreadSanitizer: thread leak).
                    state.withLock { s in
                        if let t = s.connections.removeValue(forKey: c) { s.finished.append(t) }
                        Glibc.close(c)
                    }
                }) else { return nil }
                s.connections[c] = thread
                return true
            }
            if accepted == nil { Glibc.close(c); continue }
            if accepted == false { Glibc.close(c); return }
            reapFinished()
        }
    }

    private func reapFinished() {
        let done = state.withLock { s -> [JoinableThread] in defer { s.finished.removeAll() }; return s.finished }
        for t in done { t.join() }
    }

    // MARK: - One connection

    private func readHead(_ fd: Int32) -> [UInt8]? {
        var head: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while head.count < 64 * 1024 {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return nil }
            head += buf[0..<n]
            if let end = findHeadEnd(head) { return Array(head[0..<end]) }
        }
        return nil
    }

    private func findHeadEnd(_ b: [UInt8]) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 0...(b.count - 4) where b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 { return i }
        return nil
    }

    private func serveConnection(_ fd: Int32) {
        guard let head = readHead(fd) else { return }
        let lines = String(decoding: head, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        guard let first = lines.first else { return }
        let parts = first.split(separator: " ")
        guard parts.count >= 2 else { return }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].drop { $0 == " " }
            headers[name] = String(value)
        }
        let target = String(parts[1])
        let path = String(target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        let request = Request(method: String(parts[0]), path: path, target: target, range: headers["range"], headers: headers)
        let now = monotonicNow()
        let (route, fault, loaded) = state.withLock { s -> (Route?, Fault, [UInt8]?) in
            s.requests.append(request)
            if let until = s.outageUntil[path], now < until { return (s.routes[path], .dropConnection, nil) }
            let n = s.counts[path, default: 0]
            s.counts[path] = n + 1
            guard let r = s.routes[path] else { return (nil, .none, nil) }
            return (r, n < r.faults.count ? r.faults[n] : .none, s.loaded[path])
        }
        guard let route else {
            sendAll(fd, Array("HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found".utf8))
            return
        }
        respond(fd, request: request, route: route, fault: fault, loaded: loaded)
    }

    private func statusText(_ code: Int) -> String {
        switch code {
        case 200: return "OK"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 307: return "Temporary Redirect"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 410: return "Gone"
        case 416: return "Range Not Satisfiable"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        default: return "Status"
        }
    }

    private func simple(_ fd: Int32, _ code: Int, _ extra: [String]) {
        let body = "status \(code)\n"
        var h = "HTTP/1.1 \(code) \(statusText(code))\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n"
        for e in extra { h += e + "\r\n" }
        sendAll(fd, Array((h + "\r\n" + body).utf8))
    }

    private func respond(_ fd: Int32, request: Request, route: Route, fault: Fault, loaded: [UInt8]?) {
        switch fault {
        case .status(let code, let retryAfter):
            simple(fd, code, retryAfter.map { ["Retry-After: \($0)"] } ?? [])
            return
        case .dropConnection:
            return
        case .interimResponses(let count, let interval):
            var sent = 0
            while sent < count {
                if isStopping || !sendAll(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) { return }
                sent += 1
                if interval > 0 { usleep(UInt32(min(interval, 10) * 1_000_000)) }
            }
        default: break
        }
        if let auth = route.requiredAuthorization, request.headers["authorization"] != auth {
            simple(fd, 401, ["WWW-Authenticate: Basic realm=\"test\""])
            return
        }
        if let location = route.location {
            simple(fd, (300..<400).contains(route.status) ? route.status : 302, ["Location: \(location)"])
            return
        }
        // The body, as a finite array or an endless generator.
        var finite: [UInt8]? = nil
        var loop: [UInt8]? = nil
        var prefixBytes: [UInt8] = []
        switch route.body {
        case .bytes(let b): finite = b
        case .file: finite = loaded ?? []
        case .endlessPattern: break
        case .looping(let b): loop = b.isEmpty ? [0] : b
        case .endless(let prefix, let filler):
            loop = filler.isEmpty ? [0] : filler
            prefixBytes = prefix
        }
        var status = route.status
        var start = 0
        var headerLines: [String] = []
        if let body = finite {
            if route.acceptsRanges { headerLines.append("Accept-Ranges: bytes") }
            if route.acceptsRanges, let range = request.range, let first = parseRangeStart(range) {
                if first >= body.count {
                    simple(fd, 416, ["Content-Range: bytes */\(body.count)"])
                    return
                }
                start = first
                status = 206
                headerLines.append("Content-Range: bytes \(first)-\(body.count - 1)/\(body.count)")
            }
            if route.sendsContentLength && !route.chunked && !(route.icyMetaInterval != nil && request.headers["icy-metadata"] == "1") {
                headerLines.append("Content-Length: \(body.count - start)")
            }
        }
        let metaint = request.headers["icy-metadata"] == "1" ? route.icyMetaInterval : nil
        if let metaint { headerLines.append("icy-metaint: \(metaint)") }
        if route.chunked { headerLines.append("Transfer-Encoding: chunked") }
        if let ct = route.contentType { headerLines.append("Content-Type: \(ct)") }
        headerLines += route.extraHeaders
        headerLines.append("Connection: close")
        let statusLine = route.icyStatusLine && status == 200 ? "ICY 200 OK" : "HTTP/1.1 \(status) \(statusText(status))"
        var head = statusLine + "\r\n"
        for l in headerLines { head += l + "\r\n" }
        head += "\r\n"
        guard sendAll(fd, Array(head.utf8)) else { return }
        if request.method == "HEAD" { return }

        // Stream the body.
        var writer = BodyWriter(server: self, fd: fd, path: request.path, chunked: route.chunked, metaint: metaint,
                                rawBlocks: route.icyRawBlocks, throttle: route.throttleBytesPerSecond, fault: fault)
        writer.newTitleEveryBlock = route.icyNewTitleEveryBlock
        if !prefixBytes.isEmpty { guard writer.write(prefixBytes[...]) else { return } }
        var offset = start
        var generated: Int64 = 0
        var piece = [UInt8](repeating: 0, count: 4096)
        while true {
            if isStopping { return }
            var n = 0
            if let body = finite {
                n = min(piece.count, body.count - offset)
                if n <= 0 { break }
                piece.replaceSubrange(0..<n, with: body[offset..<(offset + n)])
                offset += n
            } else if let loop {
                for i in 0..<piece.count { piece[i] = loop[Int(generated % Int64(loop.count))]; generated += 1 }
                n = piece.count
            } else {
                for i in 0..<piece.count { piece[i] = TestHTTPServer.patternByte(at: generated); generated += 1 }
                n = piece.count
            }
            guard writer.write(piece[0..<n]) else { return }
        }
        _ = writer.finish()
    }

    private func parseRangeStart(_ value: String) -> Int? {
        let v = value.lowercased().trimmingCharacters(" ")
        guard v.hasPrefix("bytes=") else { return nil }
        let spec = v.dropFirst(6)
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        return Int(spec[..<dash])
    }

    fileprivate func title(for path: String) -> String? { state.withLock { $0.titles[path] } }
    fileprivate func startOutage(for path: String, seconds: Double) {
        let until = monotonicNow() + seconds
        state.withLock { $0.outageUntil[path] = until }
    }

    /// Starts a network outage of `path` now: requests to it are dropped for `seconds` (already
    /// streaming connections go on; see ``Fault/outage(afterBytes:seconds:)`` to cut one).
    public func outage(_ path: String, seconds: Double) { startOutage(for: path, seconds: seconds) }
    fileprivate var stopping: Bool { isStopping }

    @discardableResult
    fileprivate func sendAll(_ fd: Int32, _ bytes: some Collection<UInt8>) -> Bool {
        let a = Array(bytes)
        var sent = 0
        while sent < a.count {
            let n = a.withUnsafeBytes { send(fd, $0.baseAddress! + sent, a.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }
}

/// Writes body bytes with ICY insertion, chunking, throttling and the scripted fault.
private struct BodyWriter {
    let server: TestHTTPServer
    let fd: Int32
    let path: String
    let chunked: Bool
    let metaint: Int?
    var rawBlocks: [[UInt8]]
    let throttle: Int?
    let fault: TestHTTPServer.Fault
    var sinceMeta = 0
    var lastTitle: String? = nil
    var bodyBytes = 0
    var faultDone = false
    var newTitleEveryBlock = false
    var titlesSent = 0
    let startTime = monotonicNow()

    init(server: TestHTTPServer, fd: Int32, path: String, chunked: Bool, metaint: Int?, rawBlocks: [[UInt8]], throttle: Int?, fault: TestHTTPServer.Fault) {
        self.server = server
        self.fd = fd
        self.path = path
        self.chunked = chunked
        self.metaint = metaint
        self.rawBlocks = rawBlocks
        self.throttle = throttle
        self.fault = fault
    }

    mutating func write(_ bytes: ArraySlice<UInt8>) -> Bool {
        var rest = bytes
        while !rest.isEmpty {
            var take = rest.count
            if let metaint { take = min(take, metaint - sinceMeta) }
            switch fault {
            case .disconnect(let after), .stall(let after, _), .outage(let after, _):
                if !faultDone { take = min(take, max(0, after - bodyBytes)) }
            default: break
            }
            if let throttle { take = min(take, max(1, throttle / 20)) }
            if take == 0 {
                if !faultDone, bodyBytes >= faultLimit {
                    switch fault {
                    case .disconnect: return false
                    case .outage(_, let seconds):
                        server.startOutage(for: path, seconds: seconds)
                        return false
                    case .stall(_, let seconds):
                        let until = monotonicNow() + seconds
                        while monotonicNow() < until {
                            if server.stopping { return false }
                            usleep(10_000)
                        }
                        faultDone = true
                        continue
                    default: break
                    }
                }
                // A metadata insertion point.
                guard emit(metadataBlock()) else { return false }
                sinceMeta = 0
                continue
            }
            guard emit(rest.prefix(take)) else { return false }
            rest = rest.dropFirst(take)
            bodyBytes += take
            sinceMeta += take
            if let throttle {
                let due = startTime + Double(bodyBytes) / Double(throttle)
                while monotonicNow() < due {
                    if server.stopping { return false }
                    usleep(5_000)
                }
            }
        }
        return true
    }

    var faultLimit: Int {
        switch fault {
        case .disconnect(let a), .stall(let a, _), .outage(let a, _): return a
        default: return Int.max
        }
    }

    mutating func metadataBlock() -> [UInt8] {
        if !rawBlocks.isEmpty { return rawBlocks.removeFirst() }
        var title = server.title(for: path)
        if newTitleEveryBlock {
            titlesSent += 1
            title = "Title \(titlesSent)"
        }
        guard let title, title != lastTitle else { return [0] }
        lastTitle = title
        var text = Array("StreamTitle='\(title)';".utf8)
        if text.count > 255 * 16 { text = Array(text[0..<(255 * 16)]) }
        let blocks = (text.count + 15) / 16
        text += [UInt8](repeating: 0, count: blocks * 16 - text.count)
        return [UInt8(blocks)] + text
    }

    func emit<C: Collection<UInt8>>(_ bytes: C) -> Bool {
        if bytes.isEmpty { return true }
        if chunked {
            return server.sendAll(fd, Array(String(bytes.count, radix: 16).utf8) + [13, 10] + Array(bytes) + [13, 10])
        }
        return server.sendAll(fd, bytes)
    }

    func finish() -> Bool {
        chunked ? server.sendAll(fd, Array("0\r\n\r\n".utf8)) : true
    }
}

private func monotonicNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

private func readWholeFile(_ path: String) -> [UInt8] {
    let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return [] }
    defer { Glibc.close(fd) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        out += buf[0..<n]
    }
    return out
}

extension String {
    func trimmingCharacters(_ c: Character) -> String {
        var s = Substring(self)
        while s.first == c { s = s.dropFirst() }
        while s.last == c { s = s.dropLast() }
        return String(s)
    }
}

/// A TCP socket listening on 127.0.0.1 at a free port (SO_REUSEADDR, close-on-exec), and the port.
func listenOnLoopback(component: String, backlog: Int32) throws(AudioError) -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw AudioError(.io, component: component, "socket failed", underlying: String(cString: strerror(errno))) }
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = 0
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let ok = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    guard ok, listen(fd, backlog) == 0 else {
        let why = String(cString: strerror(errno))
        Glibc.close(fd)
        throw AudioError(.io, component: component, "cannot listen on 127.0.0.1", underlying: why)
    }
    var bound = sockaddr_in()
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    return (fd, Int(UInt16(bigEndian: bound.sin_port)))
}

/// Starts `body` (a server's accept loop) on a thread named `name`; closes the listening socket
/// `fd` when the thread cannot start.
func serveOnThread(listening fd: Int32, name: String, _ body: @escaping @Sendable () -> Void) throws(AudioError) -> JoinableThread {
    do {
        return try JoinableThread(name: name, body)
    } catch {
        Glibc.close(fd)
        throw error
    }
}
