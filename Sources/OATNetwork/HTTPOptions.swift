import OATCore

/// When and how an HTTP source retries after a fault.
///
/// Defaults: connect timeout 10 s, stall timeout 15 s, first retry after 0.25 s doubling up to
/// 8 s with ±25 % jitter, give up 120 s after the first fault of a run of faults, 3 attempts for
/// the first open, `Retry-After` honoured up to 30 s.
public struct ReconnectPolicy: Sendable, Equatable {
    /// Seconds allowed for the TCP (and TLS) connection to be established.
    public var connectTimeout: Double = 10
    /// Seconds without a single byte while waiting (for the response head or the body) before the
    /// connection is treated as faulty and reconnected; a stream never hangs longer than this.
    public var stallTimeout: Double = 15
    /// The least throughput, in bytes per second, accepted while the reader waits: a server that
    /// trickles fewer bytes than this over ``stallTimeout`` seconds is treated like a stall
    /// (reconnect, then give up) instead of buffering forever. 0 turns the check off.
    public var minimumBytesPerSecond: Double = 64
    /// The delay before the first retry, in seconds; doubled for every further attempt.
    public var initialBackoff: Double = 0.25
    /// The largest delay between attempts, in seconds.
    public var maximumBackoff: Double = 8
    /// Random spread applied to every delay, as a fraction (0.25: ±25 %).
    public var jitter: Double = 0.25
    /// Seconds after the first fault of a run of faults after which the source gives up and throws.
    public var giveUpAfter: Double = 120
    /// Attempts for the first ``HTTPByteSource/open(at:)`` (1: no retry). An unreachable server
    /// fails after these instead of after ``giveUpAfter``.
    public var openAttempts: Int = 3
    /// The longest `Retry-After` (429/503) honoured; longer values are clamped to this.
    public var maximumRetryAfter: Double = 30
    /// Seconds a reconnected transfer must run without a fault before a later fault starts a new
    /// run (with a fresh ``giveUpAfter``); shorter-lived connections keep counting toward give-up.
    public var healthyAfter: Double = 10
    /// True to rejoin an ICY/Icecast live stream whose body ends (radio servers close streams
    /// when a source client drops); false to report `.end`.
    public var rejoinsEndedLiveStreams: Bool = true
    /// True to reconnect at all after a mid-stream fault.
    public var reconnects: Bool = true
    /// The give-up rule for a server that closes every connection mid-stream (each one healthy
    /// enough to reset ``giveUpAfter``): more than this many reconnects within
    /// ``reconnectWindow`` seconds and the source gives up with the last fault. Default 10
    /// (in 300 s: a reconnect every 30 s for 5 minutes).
    public var maximumReconnectsInWindow: Int = 10
    /// The window of ``maximumReconnectsInWindow``, in seconds. Default 300.
    public var reconnectWindow: Double = 300

    /// The default policy.
    public init() {}

    /// A policy that never retries (faults throw at once).
    public static var never: ReconnectPolicy {
        var p = ReconnectPolicy()
        p.reconnects = false
        p.openAttempts = 1
        return p
    }
}

/// Options of an ``HTTPByteSource``.
public struct HTTPOptions: Sendable, Equatable {
    /// Extra request headers, sent as given.
    public var headers: [ByteSourceInfo.HeaderField] = []
    /// The `User-Agent` header.
    public var userAgent: String = "OpenAudioToolbox/1.0 (Linux; libcurl)"
    /// Basic-auth user name (user info in the URL works too).
    public var username: String?
    /// Basic-auth password.
    public var password: String?
    /// Accepts any TLS certificate and host name. Off by default: certificates are verified
    /// against the system's CA store.
    public var allowsInsecureTLS: Bool = false
    /// A CA bundle (PEM) to verify servers with instead of the system store.
    public var caBundlePath: String?
    /// Redirects followed before failing (default 5).
    public var maximumRedirects: Int = 5
    /// Sends `Icy-MetaData: 1` so that ICY servers interleave titles (removed by the source).
    public var requestsICYMetadata: Bool = true
    /// How ICY metadata text is decoded.
    public var icyCharset: ICYCharset = .automatic
    /// The largest response head accepted, in bytes (all header lines of one response).
    public var maximumHeaderBytes: Int = 64 * 1024
    /// Audio bytes held between the network and the reader before the transfer is paused.
    public var bufferLimit: Int = 256 * 1024
    /// The largest Range start skipped by reading when a server answers a range request with 200.
    public var maximumRangeSkip: Int64 = 1 << 20
    /// A proxy URL; nil uses libcurl's default (`http_proxy`, `https_proxy`, `no_proxy`).
    /// With a proxy (this option or `http_proxy`/`all_proxy` in the environment) `http://` URLs
    /// go through libcurl too.
    public var proxy: String?
    /// True to carry `http://` (and `icy://`) URLs through libcurl, as `https://`. False (the
    /// default): plain `http://` without a proxy or credentials goes over a TCP socket of the
    /// source's own, and libcurl (with its TLS libraries, about 8 MB of resident memory) is not
    /// loaded. The environment variable `OAT_HTTP_TRANSPORT=curl` has the same effect for every
    /// source, for comparisons.
    public var prefersLibcurl: Bool = false
    /// Retry and timeout policy.
    public var reconnect = ReconnectPolicy()

    /// The default options.
    public init() {}
}
