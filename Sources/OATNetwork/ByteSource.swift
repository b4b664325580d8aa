import OATCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What a byte source learned when it opened its resource (an HTTP response head, a file's size).
public struct ByteSourceInfo: Sendable, Equatable {
    /// The URL or path actually read, after redirects.
    public var url: String
    /// The MIME type the server declared (lower-cased, parameters removed), if any.
    public var contentType: String?
    /// The total size of the resource in bytes, when known (not for live streams).
    public var totalLength: Int64?
    /// The byte offset of the first byte this open delivers (the Range start that was honoured).
    public var startOffset: Int64
    /// True when the source can reopen at any byte offset (files, HTTP with `Accept-Ranges: bytes`).
    public var isSeekable: Bool
    /// True for a live stream (no length, or an ICY/Icecast server without a length).
    public var isLive: Bool
    /// Response headers with lower-cased names, in arrival order (empty for files).
    public var headers: [HeaderField]
    /// The ICY (SHOUTcast/Icecast) station fields, when the server sent any.
    public var icy: ICYStationInfo?
    /// For a time-addressed source (an HLS presentation opened at a start time): the presentation
    /// time in seconds where the first delivered byte's audio begins. Nil for byte-addressed sources.
    public var mediaStartTime: Double?

    /// One header field.
    public struct HeaderField: Sendable, Equatable {
        /// The field name, lower-cased.
        public var name: String
        /// The field value, trimmed.
        public var value: String
        /// Creates a header field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Creates a description of an opened resource.
    public init(url: String, contentType: String? = nil, totalLength: Int64? = nil, startOffset: Int64 = 0,
                isSeekable: Bool = false, isLive: Bool = false, headers: [HeaderField] = [], icy: ICYStationInfo? = nil) {
        self.url = url
        self.contentType = contentType
        self.totalLength = totalLength
        self.startOffset = startOffset
        self.isSeekable = isSeekable
        self.isLive = isLive
        self.headers = headers
        self.icy = icy
    }

    /// The first header value named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let key = name.lowercased()
        return headers.first { $0.name == key }?.value
    }
}

/// The station fields an ICY server sends in its response head (`icy-name`, `icy-metaint`, ...).
public struct ICYStationInfo: Sendable, Equatable {
    /// `icy-name`.
    public var name: String?
    /// `icy-genre`.
    public var genre: String?
    /// `icy-url`.
    public var url: String?
    /// `icy-description`.
    public var description: String?
    /// `icy-br`, in kbit/s.
    public var bitRate: Int?
    /// `icy-metaint`: audio bytes between metadata blocks; nil when the server sends no metadata.
    public var metaInterval: Int?

    /// Creates station info.
    public init(name: String? = nil, genre: String? = nil, url: String? = nil, description: String? = nil,
                bitRate: Int? = nil, metaInterval: Int? = nil) {
        self.name = name
        self.genre = genre
        self.url = url
        self.description = description
        self.bitRate = bitRate
        self.metaInterval = metaInterval
    }
}

/// Timed metadata carried in a stream: an ICY title, an HLS ID3 frame.
public struct StreamMetadata: Sendable, Equatable {
    /// `StreamTitle` (ICY) or the title frame (ID3), decoded to a String.
    public var title: String?
    /// `StreamUrl` (ICY), if any.
    public var url: String?
    /// Every key/value pair as received (decoded text).
    public var fields: [String: String]
    /// Byte offset in the audio byte stream (metadata stripped) at which this metadata takes effect:
    /// the audio starting at this byte belongs to it. The player maps it to a playback time.
    public var audioByteOffset: Int64

    /// Creates metadata.
    public init(title: String? = nil, url: String? = nil, fields: [String: String] = [:], audioByteOffset: Int64) {
        self.title = title
        self.url = url
        self.fields = fields
        self.audioByteOffset = audioByteOffset
    }
}

/// One result of ``ByteSource/read(into:)``.
public enum ByteSourceRead: Sendable, Equatable {
    /// `count` audio bytes were written to the start of the buffer (count > 0).
    case bytes(Int)
    /// Metadata arrived; it applies from its ``StreamMetadata/audioByteOffset``.
    case metadata(StreamMetadata)
    /// The source reconnected after a fault. `continuous` is true when the bytes that follow are
    /// exactly the bytes that would have followed (an on-demand resume with `Range: bytes=N-`), false
    /// when the stream restarts (a live rejoin: parsers must resynchronise, a discontinuity).
    case reconnected(ByteSourceInfo, continuous: Bool)
    /// The resource ended normally.
    case end
}

/// Counters a source keeps; safe to read from any thread.
public struct ByteSourceStatistics: Sendable, Equatable {
    /// Audio bytes delivered (metadata excluded).
    public var bytesDelivered: Int64 = 0
    /// Bytes received from the network or file (including metadata and headers).
    public var bytesReceived: Int64 = 0
    /// Reconnections after faults.
    public var reconnects: Int = 0
    /// Requests made (opens, range requests, reconnects).
    public var requests: Int = 0
    /// Audio bytes served from a disk cache instead of the network (``CachingByteSource``).
    public var bytesFromCache: Int64 = 0
    /// True while the source is deliberately waiting before its next request (a reconnect
    /// back-off, a server's `Retry-After`, an HLS reload interval): it is not stalled, and its own
    /// policy bounds the wait. The player's stall timeout does not run meanwhile.
    public var isWaitingToRetry = false
    /// Creates zeroed statistics.
    public init() {}
}

/// A blocking source of bytes: a local file, an HTTP(S) resource or live stream, standard input,
/// an HLS presentation. The streaming player reads it on its own network thread; ``cancel()``
/// may be called from any thread and makes a blocked ``open(at:)`` or ``read(into:)`` throw
/// `AudioError.Code.cancelled` promptly.
///
/// Metadata (ICY blocks, HLS ID3) is removed from the audio bytes and returned in order as
/// ``ByteSourceRead/metadata(_:)``. Transient faults are retried inside the source as its policy
/// allows and reported as ``ByteSourceRead/reconnected(_:continuous:)``; permanent ones throw.
public protocol ByteSource: AnyObject, Sendable {
    /// Opens (or reopens) the resource so that the next read returns the byte at `offset`
    /// (0 for the start). Blocks until the response head is in. Throws on failure, naming the URL
    /// and the status or system error.
    func open(at offset: Int64) throws(AudioError) -> ByteSourceInfo
    /// Reads the next audio bytes into `buffer`, or the next event. Blocks until there is
    /// something to return.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(AudioError) -> ByteSourceRead
    /// Makes a blocked or later open/read throw `AudioError.Code.cancelled`. Idempotent, any thread.
    func cancel()
    /// Releases the connection or file. Idempotent.
    func close()
    /// Counters so far.
    var statistics: ByteSourceStatistics { get }
}

/// Reads a local file. Seekable; reports its size; `open(at:)` positions exactly.
public final class FileByteSource: ByteSource {
    /// The file's path.
    public let path: String
    private struct State {
        var fd: Int32 = -1
        var cancelled = false
        var stats = ByteSourceStatistics()
    }
    private let state = Locked(State())

    /// Creates a source for the file at `path` (a `file://` URL is accepted too). Nothing is opened yet.
    public init(path: String) {
        self.path = path.hasPrefix("file://") ? String(path.dropFirst(7)) : path
    }

    deinit { close() }

    public func open(at offset: Int64) throws(AudioError) -> ByteSourceInfo {
        close()
        let d = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard d >= 0 else {
            throw AudioError(.io, component: "FileByteSource", "cannot open \(path)", underlying: String(cString: strerror(errno)))
        }
        var st = stat()
        let size: Int64? = fstat(d, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG ? Int64(st.st_size) : nil
        if offset > 0 {
            guard lseek(d, off_t(offset), SEEK_SET) == off_t(offset) else {
                Glibc.close(d)
                throw AudioError(.io, component: "FileByteSource", "cannot seek \(path) to byte \(offset)", underlying: String(cString: strerror(errno)))
            }
        }
        state.withLock {
            $0.fd = d
            $0.stats.requests += 1
        }
        return ByteSourceInfo(url: path, totalLength: size, startOffset: offset, isSeekable: size != nil, isLive: false)
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(AudioError) -> ByteSourceRead {
        let (d, isCancelled) = state.withLock { ($0.fd, $0.cancelled) }
        if isCancelled { throw AudioError(.cancelled, component: "FileByteSource", "cancelled reading \(path)") }
        guard d >= 0 else { throw AudioError(.invalidState, component: "FileByteSource", "read before open of \(path)") }
        guard let base = buffer.baseAddress, buffer.count > 0 else {
            throw AudioError(.invalidArgument, component: "FileByteSource", "empty read buffer")
        }
        while true {
            let n = Glibc.read(d, base, buffer.count)
            if n > 0 {
                state.withLock {
                    $0.stats.bytesDelivered += Int64(n)
                    $0.stats.bytesReceived += Int64(n)
                }
                return .bytes(n)
            }
            if n == 0 { return .end }
            if errno == EINTR { continue }
            throw AudioError(.io, component: "FileByteSource", "read failed on \(path)", underlying: String(cString: strerror(errno)))
        }
    }

    public func cancel() { state.withLock { $0.cancelled = true } }

    public func close() {
        state.withLock {
            if $0.fd >= 0 { Glibc.close($0.fd) }
            $0.fd = -1
        }
    }

    public var statistics: ByteSourceStatistics { state.withLock { $0.stats } }
}
