import OATCore
import OATNetwork
import OATFiles

/// How much a ``StreamingPlayer`` buffers, when it starts and when it gives up.
///
/// The defaults aim at a quick start (a local Icecast stream starts in well under 100 ms) with
/// a target that grows after every underrun, so that a slow network stops stuttering.
public struct BufferingPolicy: Sendable, Equatable {
    /// Seconds of decoded audio ready before playback starts. Default 0.15 s.
    public var startSeconds: Double = 0.15
    /// Seconds of decoded audio ready before playback resumes after an underrun. Default 1 s.
    public var rebufferSeconds: Double = 1
    /// Factor applied to both targets after each underrun (at most ``maximumTargetSeconds``).
    /// Default 2.
    public var growthAfterUnderrun: Double = 2
    /// Upper bound for the grown targets. Default 8 s.
    public var maximumTargetSeconds: Double = 8
    /// Largest number of undecoded bytes held between the network thread and the decoder; the
    /// network thread blocks when it is reached (bounded memory for endless streams). Default 4 MiB.
    public var maximumBufferedBytes: Int = 4 << 20
    /// Seconds of decoded audio the output queue's play ring holds when the first item is a live
    /// stream (rounded up to a power of two of samples: 0.74 s at 44.1 kHz stereo for the
    /// default). The reserve beyond it, up to the grown targets, waits as received bytes
    /// (``maximumBufferedBytes``) and is decoded as the ring drains: a 128 kbps MP3 takes 16 KB a
    /// second undecoded and 353 KB as Float32 stereo. With the queue's buffers (about 0.46 s)
    /// that much decoded audio is ready when the decoder thread does not get the CPU. An
    /// on-demand first item gets a 2 s ring: the decoder then parses further ahead, and a seek
    /// into the parsed bytes lands on the exact frame. Default 0.7 s.
    public var liveRingSeconds: Double = 0.7
    /// Largest number of already-decoded bytes of the current item kept so that a seek back
    /// inside them needs no new request. Default 16 MiB.
    public var maximumRetainedBytes: Int = 16 << 20
    /// Seconds without a single byte, and without a new request from the source, while
    /// buffering before the player gives up with a `timedOut` error (a source still retrying
    /// through an outage is bounded by its own reconnect policy instead). Default 15 s.
    public var stallTimeout: Double = 15
    /// Seconds the player may buffer (before the start, or after an underrun) while bytes still
    /// arrive but too slowly to reach the target, before it gives up with a `timedOut` error
    /// that gives the rate received (a live stream arriving at 100 B/s buffered for ever).
    /// Counted from the start of the buffering; 0 turns it off. Default 30 s.
    public var slowBufferingTimeout: Double = 30
    /// Seconds the output device may stay lost (a PulseAudio server gone, reconnecting) before
    /// the player stops with a `deviceUnavailable` error naming the device and the reason,
    /// instead of waiting forever. Default 30 s.
    public var deviceLostTimeout: Double = 30
    /// Joins a live stream again when its server closes the connection (at most 5 times in a
    /// row without audio in between). Default true: radio does not end.
    public var rejoinsLiveStreamAtEnd = true
    /// The give-up rule for a live server that closes every connection mid-stream (with audio
    /// in between, so the 5-in-a-row limit never trips): more than this many rejoins of one
    /// item within ``liveRejoinWindow`` seconds and the item fails with `timedOut`. Default 10.
    public var maximumLiveRejoinsInWindow = 10
    /// The window of ``maximumLiveRejoinsInWindow``, in seconds. Default 300.
    public var liveRejoinWindow: Double = 300
    /// Bytes a paused live stream may keep recording into its timeshift buffer on disk; the
    /// oldest bytes are dropped beyond it. 0 disables timeshift (pausing a live stream then
    /// drops the connection's backlog). Default 64 MiB.
    public var timeshiftBytes: Int64 = 64 << 20
    /// Seconds over which one on-demand item fades into the next (equal-power: the outgoing
    /// item's gain follows cos, the incoming one's sin, so the summed power stays constant).
    /// 0 (the default) joins items gaplessly instead. Live items are never faded (they have no
    /// end to overlap); an item shorter than the fade is faded over its whole length. At most 30 s.
    public var crossfadeSeconds: Double = 0
    /// The output buffer (seconds) to switch to once playback is steady: this much plus 0.5 s
    /// played (the start is heard first) and decoded ahead (the larger request is filled with
    /// audio), not paused. A
    /// quick start wants a small device buffer, a steady stream a large one (fewer wake-ups of
    /// the device thread and the sound server); volume changes, seeks and skips are heard up to
    /// this much later. Nil (the default) keeps the buffer the device opened with.
    public var steadyOutputLatency: Double?
    /// Bytes of an item that may be parsed (or skipped inside the buffer) without a single
    /// decoded frame before the item fails with `invalidData`: a header claiming a 4 GB chunk
    /// followed by zeros, or a stream of garbage, is not downloaded for ever. Counted again from
    /// 0 after every decoded frame and every seek. Default 32 MiB (large ID3 artwork and FLAC
    /// pictures are a few MiB).
    public var maximumBytesWithoutAudio: Int64 = 32 << 20
    /// Queue entries in a row that fail without playing any audio (dead links, unplayable
    /// files) before the player gives up on the rest of the queue with `limitExceeded`.
    /// Default 16.
    public var maximumConsecutiveFailures = 16
    /// The pause before opening the next entry after a failed one, doubled for every further
    /// failure in a row up to 1 s (so a playlist of dead links is not a request storm).
    /// Default 0.1 s.
    public var failureBackoff: Double = 0.1
    /// Opens the output device as soon as the first item's source has answered (at 44.1 kHz
    /// stereo, reopened at the stream's own format when that differs, before anything plays),
    /// so that the device's set-up overlaps the wait for the first audio bytes instead of
    /// following them. Default true.
    public var opensOutputEarly = true

    /// The defaults, as documented on each field.
    public init() {}
}

/// Why a ``StreamingPlayer`` stopped.
public enum StreamingStopReason: Sendable, Equatable {
    /// The queue played out and its last item played to its end (earlier items may have
    /// failed: their ``StreamingPlayerEvent/error(index:_:)`` events say so).
    case ended
    /// ``StreamingPlayer/stop()`` was called.
    case stopped
    /// Playback failed: the last item of the queue failed (at open or mid-way, after what it
    /// had decoded played out), or the device went away; the error names what and where.
    case error(AudioError)
}

/// The state of a ``StreamingPlayer``.
public enum StreamingPlayerState: Sendable, Equatable {
    /// Nothing was played yet.
    case idle
    /// Opening the source (request sent, waiting for the response head).
    case connecting
    /// Filling the buffer before starting or after an underrun; `progress` is 0...1 of the target.
    case buffering(progress: Double)
    /// Audio is playing.
    case playing
    /// Paused by ``StreamingPlayer/pause()``.
    case paused
    /// Stopped for good, with the reason.
    case stopped(reason: StreamingStopReason)

    /// A short name (`idle`, `connecting`, `buffering`, `playing`, `paused`, `stopped`).
    public var name: String {
        switch self {
        case .idle: "idle"
        case .connecting: "connecting"
        case .buffering: "buffering"
        case .playing: "playing"
        case .paused: "paused"
        case .stopped: "stopped"
        }
    }
}

/// How full the player's buffers are.
public struct BufferHealth: Sendable, Equatable {
    /// Seconds of decoded audio waiting to play.
    public var bufferedSeconds: Double
    /// Undecoded bytes waiting between the network thread and the decoder.
    public var bufferedBytes: Int
    /// Underruns so far.
    public var underruns: Int
    /// Creates a snapshot.
    public init(bufferedSeconds: Double, bufferedBytes: Int, underruns: Int) {
        self.bufferedSeconds = bufferedSeconds
        self.bufferedBytes = bufferedBytes
        self.underruns = underruns
    }
}

/// Something a ``StreamingPlayer`` reports through ``StreamingPlayer/events``.
public enum StreamingPlayerEvent: Sendable, Equatable {
    /// The state changed.
    case state(StreamingPlayerState)
    /// Item `index` (its URL) began to play (reported when its first frame plays), with the
    /// format of its data.
    case itemStarted(index: Int, url: String, format: AudioStreamBasicDescription)
    /// Item `index` played to its end (reported when its last frame played).
    case itemFinished(index: Int, url: String)
    /// Timed metadata (an ICY title, an HLS ID3 frame) reached the speakers: `playbackTime` is
    /// the position in item `index`, in seconds, of the first audio it belongs to.
    case metadata(StreamMetadata, index: Int, playbackTime: Double)
    /// The first audio of the session reached the device, `seconds` after ``StreamingPlayer/play(_:)``.
    case firstAudio(seconds: Double)
    /// A periodic buffer report (about once a second while playing).
    case bufferHealth(BufferHealth)
    /// The source reconnected; `continuous` false means a live rejoin (a discontinuity).
    case reconnected(index: Int, continuous: Bool)
    /// A seek was carried out; `isEstimated` is true when no exact table was available.
    case seeked(index: Int, seconds: Double, isEstimated: Bool, newRequest: Bool)
    /// An item could not be played (the player moves on to the next, if any).
    case error(index: Int, AudioError)
}

/// Counters of a ``StreamingPlayer`` session.
public struct StreamingPlayerStatistics: Sendable, Equatable {
    /// Seconds from ``StreamingPlayer/play(_:)`` until the first frame reached the device.
    public var timeToFirstAudio: Double?
    /// Bytes received from the sources (metadata and headers included where the source counts them).
    public var bytesReceived: Int64 = 0
    /// Average receive rate in bytes per second since the session began.
    public var throughput: Double = 0
    /// Seconds of decoded audio waiting to play.
    public var bufferedSeconds: Double = 0
    /// Undecoded bytes waiting for the decoder.
    public var bufferedBytes: Int = 0
    /// Times playback ran dry and had to rebuffer.
    public var underruns: Int = 0
    /// Renders the output device found short of audio while playing (silence padded in),
    /// rebuffering or not: 0 for a stream that never glitched.
    public var outputUnderruns: Int = 0
    /// Seconds of audio the output device has played in this session, across items (a seek or
    /// a skip does not reset it; pauses and underrun silence do not count).
    public var playedSeconds: Double = 0
    /// Reconnections the sources made after faults.
    public var reconnects: Int = 0
    /// Requests made (opens, range requests for seeks, reconnects).
    public var requests: Int = 0
    /// Creates zeroed statistics.
    public init() {}
}

/// Makes the byte source for a URL (or path, or `-` for standard input).
public typealias ByteSourceFactory = @Sendable (String) throws(AudioError) -> any ByteSource

/// A container hint from a MIME type or a URL's extension (nil when neither says).
func fileTypeHint(contentType: String?, url: String) -> AudioFileType? {
    switch contentType ?? "" {
    case "audio/mpeg", "audio/mp3", "audio/mpeg3", "audio/x-mpeg": return .mp3
    case "audio/aac", "audio/aacp", "audio/x-aac", "audio/adts": return .aacADTS
    case "audio/ogg", "application/ogg", "audio/opus", "audio/vorbis", "audio/x-ogg": return .ogg
    case "audio/flac", "audio/x-flac": return .flac
    case "audio/mp4", "audio/x-m4a", "audio/m4a": return .m4a
    case "audio/wav", "audio/x-wav", "audio/wave": return .wave
    default: break
    }
    var path = url
    if let q = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = String(path[..<q]) }
    guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
    switch path[path.index(after: dot)...].lowercased() {
    case "mp3": return .mp3
    case "aac", "adts": return .aacADTS
    case "ogg", "oga", "opus": return .ogg
    case "flac": return .flac
    case "m4a", "mp4", "m4b": return .m4a
    case "wav": return .wave
    case "caf": return .caf
    default: return nil
    }
}
