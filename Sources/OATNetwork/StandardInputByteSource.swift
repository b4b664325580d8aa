import OATCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Reads standard input (or another pipe or descriptor). Not seekable: `open(at:)` accepts only
/// offset 0, once. `cancel()` wakes a blocked read within 100 ms. The descriptor is not closed.
public final class StandardInputByteSource: ByteSource {
    /// The descriptor read (0 for standard input).
    public let descriptor: Int32
    private struct State {
        var opened = false
        var ended = false
        var stats = ByteSourceStatistics()
    }
    private let state = Locked(State())
    private let cancelled = Atomic<Bool>(false)

    /// Creates a source for `descriptor` (standard input by default).
    public init(descriptor: Int32 = 0) {
        self.descriptor = descriptor
    }

    public func open(at offset: Int64) throws(AudioError) -> ByteSourceInfo {
        let first = state.withLock { s -> Bool in
            defer { s.opened = true; s.stats.requests += 1 }
            return !s.opened
        }
        guard offset == 0, first else {
            throw AudioError(.invalidArgument, component: "StandardInputByteSource",
                             "standard input cannot be reopened or read from byte \(offset): it is not seekable")
        }
        return ByteSourceInfo(url: "-", isSeekable: false, isLive: false)
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(AudioError) -> ByteSourceRead {
        guard let base = buffer.baseAddress, buffer.count > 0 else {
            throw AudioError(.invalidArgument, component: "StandardInputByteSource", "empty read buffer")
        }
        while true {
            if cancelled.load(ordering: .sequentiallyConsistent) {
                throw AudioError(.cancelled, component: "StandardInputByteSource", "cancelled reading standard input")
            }
            if state.withLock({ $0.ended }) { return .end }
            var p = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let r = poll(&p, 1, 100)
            if r < 0 {
                if errno == EINTR { continue }
                throw AudioError(.io, component: "StandardInputByteSource", "poll on standard input failed", underlying: String(cString: strerror(errno)))
            }
            if r == 0 { continue }
            let n = Glibc.read(descriptor, base, buffer.count)
            if n > 0 {
                state.withLock {
                    $0.stats.bytesDelivered += Int64(n)
                    $0.stats.bytesReceived += Int64(n)
                }
                return .bytes(n)
            }
            if n == 0 {
                state.withLock { $0.ended = true }
                return .end
            }
            if errno == EINTR || errno == EAGAIN { continue }
            throw AudioError(.io, component: "StandardInputByteSource", "read failed on standard input", underlying: String(cString: strerror(errno)))
        }
    }

    public func cancel() { cancelled.store(true, ordering: .sequentiallyConsistent) }

    public func close() {}

    public var statistics: ByteSourceStatistics { state.withLock { $0.stats } }
}

/// Options for ``ByteSources/make(url:options:)``.
public struct ByteSourceOptions: Sendable, Equatable {
    /// Options of HTTP(S) sources.
    public var http = HTTPOptions()
    /// Creates default options.
    public init() {}
}

/// Makes the right ``ByteSource`` for a location.
public enum ByteSources {
    /// A source for `url`: `-` for standard input; `http://`, `https://` and `icy://` (as http) for
    /// ``HTTPByteSource``; `file://` URLs and plain paths for ``FileByteSource``. Other schemes throw.
    public static func make(url: String, options: ByteSourceOptions = ByteSourceOptions()) throws(AudioError) -> any ByteSource {
        if url == "-" { return StandardInputByteSource() }
        let lower = url.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") || lower.hasPrefix("icy://") {
            return HTTPByteSource(url: url, options: options.http)
        }
        if lower.hasPrefix("file://") {
            var path = String(url.dropFirst(7))
            if path.hasPrefix("localhost/") { path = String(path.dropFirst(9)) }
            return FileByteSource(path: percentDecoded(path))
        }
        if let colon = lower.firstIndex(of: ":"), lower[lower.index(after: colon)...].hasPrefix("//") {
            throw AudioError(.unsupportedFormat, component: "ByteSources", "unsupported URL scheme in \(redactedURL(url)) (use http, https, icy, file, a path or -)")
        }
        return FileByteSource(path: url)
    }

    static func percentDecoded(_ s: String) -> String {
        var out: [UInt8] = []
        let b = Array(s.utf8)
        var i = 0
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x41...0x46: c - 0x37
            case 0x61...0x66: c - 0x57
            default: nil
            }
        }
        while i < b.count {
            if b[i] == 0x25, i + 2 < b.count, let h = hex(b[i + 1]), let l = hex(b[i + 2]) {
                out.append(h << 4 | l)
                i += 3
            } else {
                out.append(b[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
