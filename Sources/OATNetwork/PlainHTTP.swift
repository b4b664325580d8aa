// The plain-socket HTTP/1.1 client's pure parts: which URLs it carries, how a redirect's Location
// resolves, the request it sends, and the chunked transfer decoder. No sockets here (see
// SocketTransfer.swift), so the fuzzer and unit tests can drive them.
import OATCore
#if canImport(Glibc)
import Glibc
#endif

/// An `http://` URL the plain-socket transport can carry: no user info (credentials go through
/// libcurl), a host, an optional port, and a request target without blanks or control bytes.
struct PlainHTTPURL: Equatable {
    /// The host as written (an IPv6 literal without its brackets).
    var host: String
    /// The TCP port (80 when the URL has none).
    var port: UInt16
    /// The request target: path and query, fragment removed, at least `/`.
    var target: String
    /// The `Host` header's value (host, and port when it is not 80).
    var hostHeader: String

    /// Parses `url`; nil for another scheme, user info, or anything unusual (libcurl takes those,
    /// with its own errors for malformed URLs).
    init?(_ url: String) {
        let bytes = Array(url.utf8)
        let scheme = Array("http://".utf8)
        guard bytes.count > scheme.count,
              zip(bytes.prefix(scheme.count), scheme).allSatisfy({ ($0 | 0x20) == $1 || $0 == $1 }) else { return nil }
        // Blanks, controls, non-ASCII and `\` are left to libcurl (which escapes or rejects them).
        for b in bytes where b <= 0x20 || b >= 0x7F || b == UInt8(ascii: "\\") { return nil }
        var rest = bytes[scheme.count...]
        if let hash = rest.firstIndex(of: UInt8(ascii: "#")) { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        let authority = rest[rest.startIndex..<authorityEnd]
        guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { return nil }
        var hostPart: ArraySlice<UInt8>
        var portPart: ArraySlice<UInt8>? = nil
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostPart = authority[(authority.startIndex + 1)..<close]
            let after = authority[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return nil }
                portPart = after.dropFirst()
            }
            guard hostPart.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else { return nil }
        } else {
            if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
                hostPart = authority[authority.startIndex..<colon]
                portPart = authority[(colon + 1)...]
            } else {
                hostPart = authority
            }
            guard hostPart.allSatisfy({ isHostByte($0) }) else { return nil }
        }
        guard !hostPart.isEmpty else { return nil }
        var port = 80
        if let p = portPart, !p.isEmpty {
            guard p.count <= 5, p.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            port = p.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard (1...65535).contains(port) else { return nil }
        }
        self.host = String(decoding: hostPart, as: UTF8.self)
        self.port = UInt16(port)
        var target = String(decoding: rest[authorityEnd...], as: UTF8.self)
        if target.isEmpty { target = "/" } else if target.hasPrefix("?") { target = "/" + target }
        self.target = target
        let bracketed = host.contains(":") ? "[\(host)]" : host
        self.hostHeader = port == 80 ? bracketed : "\(bracketed):\(port)"
    }

    /// The URL again, normalised (`http://host[:port]/target`).
    var string: String { "http://\(hostHeader)\(target)" }

    /// The URL a `Location` value points to, relative to this one (nil when it is empty).
    func resolve(location: String) -> String? {
        let loc = location.trimmingBlanks()
        guard !loc.isEmpty else { return nil }
        if let colon = loc.firstIndex(of: ":"), loc[..<colon].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." }),
           loc[loc.index(after: colon)...].hasPrefix("//") {
            return loc   // absolute, any scheme
        }
        if loc.hasPrefix("//") { return "http:" + loc }
        if loc.hasPrefix("/") { return "http://\(hostHeader)\(loc)" }
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        if loc.hasPrefix("?") { return "http://\(hostHeader)\(path)\(loc)" }
        let directory = path.lastIndex(of: "/").map { String(path[...$0]) } ?? "/"
        return "http://\(hostHeader)\(directory)\(loc)"
    }

    /// The GET request for this URL: `Range` from `offset` when it is above 0, `Icy-MetaData: 1`
    /// when asked, then the extra headers (which replace the built-in field of the same name).
    func request(offset: Int64, options: HTTPOptions) -> [UInt8] {
        let extra = Set(options.headers.map { $0.name.lowercased() })
        var lines = ["GET \(target) HTTP/1.1", "Host: \(hostHeader)"]
        if !extra.contains("user-agent") { lines.append("User-Agent: \(options.userAgent)") }
        if !extra.contains("accept") { lines.append("Accept: */*") }
        if offset > 0 && !extra.contains("range") { lines.append("Range: bytes=\(offset)-") }
        if options.requestsICYMetadata && !extra.contains("icy-metadata") { lines.append("Icy-MetaData: 1") }
        for h in options.headers {
            // A field with CR or LF would split the request: dropped, as libcurl cuts at them.
            guard !h.name.isEmpty, !(h.name + h.value).utf8.contains(where: { $0 == 0x0D || $0 == 0x0A }) else { continue }
            lines.append("\(h.name): \(h.value)")
        }
        if !extra.contains("connection") { lines.append("Connection: close") }
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    /// True when `url` goes over the plain socket transport with `options`: an `http://` URL
    /// without credentials, no proxy option or proxy variable in the environment (libcurl honours
    /// `http_proxy` and `all_proxy`), and neither ``HTTPOptions/prefersLibcurl`` nor
    /// `OAT_HTTP_TRANSPORT=curl` set.
    static func carries(_ url: String, options: HTTPOptions) -> Bool {
        guard !options.prefersLibcurl, options.proxy == nil, options.username == nil, options.password == nil,
              PlainHTTPURL(url) != nil else { return false }
        if let forced = environment("OAT_HTTP_TRANSPORT"), forced.lowercased() == "curl" { return false }
        for name in ["http_proxy", "all_proxy", "ALL_PROXY"] {
            if let v = environment(name), !v.isEmpty { return false }
        }
        return true
    }
}

private func isHexDigit(_ b: UInt8) -> Bool {
    (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x66)
}

private func isHostByte(_ b: UInt8) -> Bool {
    (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A) || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") || b == UInt8(ascii: "_")
}

/// A variable of the process environment.
func environment(_ name: String) -> String? {
    guard let v = getenv(name) else { return nil }
    return String(cString: v)
}

/// Decodes `Transfer-Encoding: chunked`: size lines (hex, extensions ignored), data, CR LF,
/// the last chunk and its trailer. Lines are bounded; bad framing is an error, never a trap.
/// The limits are libcurl's or tighter: a size of at most 16 hex digits that fits in 63 bits,
/// size and trailer lines (extensions included) of at most 4 KB, a trailer of at most 16 KB;
/// the response head is bounded by ``HTTPOptions/maximumHeaderBytes``. Framing errors end the
/// transfer for good (the server would send the same again): they are not retried.
struct ChunkedDecoder {
    enum State: Equatable { case size, data(Int64), dataEnd, trailer, done }
    private(set) var state = State.size
    private var line: [UInt8] = []
    /// The longest size or trailer line accepted (a chunk extension counts: a 1 MB one is an
    /// error after 4 KB, not a wait for the rest).
    static let maximumLine = 4096
    /// The most hex digits in a chunk size, leading zeros included (libcurl's `CHUNK_MAXNUM_LEN`).
    static let maximumSizeDigits = 16
    /// The most trailer bytes accepted after the last chunk.
    static let maximumTrailer = 16 * 1024
    private var trailerBytes = 0

    /// Feeds raw body bytes; `body` gets the decoded data. Throws a message on bad framing.
    mutating func feed(_ data: UnsafeRawBufferPointer, body: (UnsafeRawBufferPointer) -> Void) throws(ChunkError) {
        var i = 0
        while i < data.count {
            switch state {
            case .done:
                return   // bytes after the message are ignored (the connection is closed)
            case .data(let left):
                let n = Int(min(Int64(data.count - i), left))
                body(UnsafeRawBufferPointer(rebasing: data[i..<(i + n)]))
                i += n
                state = left - Int64(n) == 0 ? .dataEnd : .data(left - Int64(n))
            case .size, .dataEnd, .trailer:
                let b = data[i]
                i += 1
                if b != 0x0A {
                    line.append(b)
                    if line.count > Self.maximumLine { throw ChunkError("a chunk line is longer than \(Self.maximumLine) bytes") }
                    if state == .trailer {
                        trailerBytes += 1
                        if trailerBytes > Self.maximumTrailer { throw ChunkError("the chunked trailer exceeds \(Self.maximumTrailer) bytes") }
                    }
                    continue
                }
                if line.last == 0x0D { line.removeLast() }
                defer { line.removeAll(keepingCapacity: true) }
                switch state {
                case .dataEnd:
                    guard line.isEmpty else { throw ChunkError("chunk data is not followed by CR LF") }
                    state = .size
                case .trailer:
                    if line.isEmpty { state = .done }
                default:
                    state = try Self.size(of: line)
                }
            }
        }
    }

    private static func size(of line: [UInt8]) throws(ChunkError) -> State {
        var value: Int64 = 0
        var digits = 0
        for b in line {
            let d: Int64
            switch b {
            case 0x30...0x39: d = Int64(b - 0x30)
            case 0x41...0x46: d = Int64(b - 0x41 + 10)
            case 0x61...0x66: d = Int64(b - 0x61 + 10)
            case UInt8(ascii: ";"), UInt8(ascii: " "), UInt8(ascii: "\t"):
                guard digits > 0 else { throw ChunkError("a chunk size line has no size") }
                return value == 0 ? .trailer : .data(value)
            default:
                throw ChunkError("invalid chunk size line \"\(printable(line))\"")
            }
            digits += 1
            // libcurl's limits: at most 16 hex digits (leading zeros count), and the size must
            // fit a signed 64-bit integer.
            guard digits <= Self.maximumSizeDigits else {
                throw ChunkError("chunk size \"\(printable(line))...\" is too large: more than \(Self.maximumSizeDigits) hex digits")
            }
            guard value <= (Int64.max - d) / 16 else { throw ChunkError("chunk size \"\(printable(line))\" is too large (over 2^63-1)") }
            value = value * 16 + d
        }
        guard digits > 0 else { throw ChunkError("a chunk size line is empty") }
        return value == 0 ? .trailer : .data(value)
    }

    private static func printable(_ line: [UInt8]) -> String {
        String(decoding: line.prefix(40).map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }
}

/// Why chunked framing was rejected.
struct ChunkError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}
