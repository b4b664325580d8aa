import OATCore
import OATNetwork
import OATQueueEngine
import OATDevices
import Dispatch

/// Plays audio from URLs, paths and standard input: progressive HTTP(S) files, ICY/Icecast
/// radio, local files, one after another in a gapless queue. What AudioStreamer, FreeStreamer
/// and StreamingKit are on iOS, as a Swift actor.
///
/// ```swift
/// let player = StreamingPlayer()            // plays to the default output
/// Task { for await event in player.events { print(event) } }
/// await player.play("http://127.0.0.1:8000/radio.mp3")
/// ```
///
/// The actor is the control plane: its methods never block on audio or network work. Each item
/// is read by its own network thread into a bounded buffer (``BufferingPolicy/maximumBufferedBytes``)
/// and one decoder thread parses (``AudioFileStream``), decodes (``AudioConverter``) and feeds an
/// ``AudioOutputQueue``. Events (state changes, items, titles timed to the audio, first audio,
/// buffer health, errors) arrive through ``events`` in order.
///
/// Thread safety: an actor; ``events`` may be iterated from any task (one consumer).
public actor StreamingPlayer {
    /// Everything the player reports, in order. One stream for the player's lifetime; it ends
    /// when the player is deallocated.
    public nonisolated let events: AsyncStream<StreamingPlayerEvent>
    private let continuation: AsyncStream<StreamingPlayerEvent>.Continuation
    /// The buffering policy sessions use.
    public let policy: BufferingPolicy
    private let output: AudioOutputDeviceFactory
    private let makeSource: ByteSourceFactory
    private let onEvent: (@Sendable (StreamingPlayerEvent) -> Void)?
    private var engine: StreamingEngine?
    private var items: [String] = []
    private var volume: Float = 1
    private var lastState: StreamingPlayerState = .idle
    private let clock: any EngineClock

    /// Creates a player. `output` opens the device for the stream's format (default:
    /// ``defaultOutput(for:)``, the `auto` output);
    /// `sourceFactory` makes the byte source for each URL (default: ``defaultSource(for:)``).
    /// `onEvent`, when given, receives every event on the player's decoder thread as it happens,
    /// before it goes into ``events`` (keep it short and never block in it): for callers that
    /// cannot depend on the cooperative thread pool being free.
    public init(policy: BufferingPolicy = BufferingPolicy(), output: @escaping AudioOutputDeviceFactory = StreamingPlayer.defaultOutput(for:),
                sourceFactory: @escaping ByteSourceFactory = StreamingPlayer.defaultSource(for:),
                onEvent: (@Sendable (StreamingPlayerEvent) -> Void)? = nil) {
        self.init(policy: policy, output: output, sourceFactory: sourceFactory, onEvent: onEvent, clock: MonotonicClock())
    }

    /// A player whose engine timers (first audio, statistics, health reports, the backoff after
    /// failed entries, a lost device's timeout) read `clock`: tests drive them on a
    /// ``VirtualClock``.
    init(policy: BufferingPolicy, output: @escaping AudioOutputDeviceFactory, sourceFactory: @escaping ByteSourceFactory,
         onEvent: (@Sendable (StreamingPlayerEvent) -> Void)?, clock: any EngineClock) {
        self.policy = policy
        self.output = output
        self.makeSource = sourceFactory
        self.onEvent = onEvent
        self.clock = clock
        (events, continuation) = AsyncStream.makeStream(of: StreamingPlayerEvent.self, bufferingPolicy: .bufferingNewest(4096))
    }

    deinit {
        engine?.requestStop()
        continuation.finish()
    }

    /// The output a player opens when none is given: ``AudioOutputSpec/auto`` (PulseAudio if a
    /// server answers, else ALSA's default device, else the paced null output) at the stream's format.
    public static func defaultOutput(for format: AudioDeviceFormat) throws(AudioError) -> any AudioOutputDevice {
        try AudioOutput.open(.auto, format: format).device
    }

    /// The byte source for `url`: `http`, `https` and `icy` URLs give an ``HTTPByteSource`` with
    /// default options; `-` gives a ``StandardInputByteSource``; a path or `file://` URL a file source.
    public static func defaultSource(for url: String) throws(AudioError) -> any ByteSource {
        if url == "-" { return StandardInputByteSource() }
        let lower = url.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") || lower.hasPrefix("icy://") {
            return HTTPByteSource(url: url)
        }
        if let colon = url.firstIndex(of: ":"), url[..<colon].allSatisfy({ $0.isLetter || $0 == "+" }), url[url.index(after: colon)...].hasPrefix("//"),
           !url.hasPrefix("file://") {
            throw AudioError(.unsupportedFormat, component: "StreamingPlayer", "no byte source for the scheme of \(url)")
        }
        return FileByteSource(path: url)
    }

    // MARK: Queue and transport

    /// Plays `url` now (replacing the queue).
    public func play(_ url: String) async {
        await play([url])
    }

    /// Plays `urls` one after another, gaplessly (replacing the queue). PLS and M3U playlists
    /// (by extension) are fetched when reached and replaced by their entries; HLS playlists
    /// (`.m3u8` media or master playlists) play through ``HLSByteSource``.
    public func play(_ urls: [String]) async {
        await stopEngine(report: false)
        items = urls
        guard !urls.isEmpty else { return }
        let engine = StreamingEngine(items: urls, policy: policy, output: output, makeSource: makeSource,
                                     continuation: continuation, onEvent: onEvent, volume: volume, clock: clock)
        self.engine = engine
    }

    /// Adds `url` at the end of the queue.
    public func append(_ url: String) {
        items.append(url)
        engine?.control.withLock { $0.items.append(url) }
    }

    /// Removes the queue entry at `index` (an item that has not started decoding yet).
    public func remove(at index: Int) throws(AudioError) {
        guard items.indices.contains(index) else {
            throw AudioError(.invalidArgument, component: "StreamingPlayer", "no queue entry \(index) (the queue has \(items.count))")
        }
        let playing = engine?.control.withLock { $0.playingIndex } ?? -1
        guard index > playing + 1 || engine == nil else {
            throw AudioError(.invalidState, component: "StreamingPlayer", "queue entry \(index) is playing or being prepared; use skip()")
        }
        items.remove(at: index)
        engine?.control.withLock { c in if c.items.indices.contains(index) { c.items.remove(at: index) } }
    }

    /// The queue (playlists are replaced by their entries when they are reached).
    public var queue: [String] { engine?.control.withLock { $0.items } ?? items }

    /// Moves on to the next queue entry now.
    public func skip() {
        engine?.send(.skip)
    }

    /// Pauses. A live stream keeps being received into the bounded buffer meanwhile, so resume
    /// continues where it paused (see ``jumpToLive()``).
    public func pause() {
        engine?.control.withLock { $0.paused = true }
        engine?.wake.signal()
    }

    /// Resumes after ``pause()``.
    public func resume() {
        engine?.control.withLock { $0.paused = false }
        engine?.wake.signal()
    }

    /// A live stream: drops the backlog received while paused and plays what arrives now.
    public func jumpToLive() {
        engine?.send(.jumpToLive)
    }

    /// Stops playback and releases the device and connections; the state becomes
    /// `stopped(reason: .stopped)`.
    public func stop() async {
        await stopEngine(report: true)
    }

    private func stopEngine(report: Bool) async {
        guard let engine else { return }
        self.engine = nil
        engine.requestStop()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                engine.join()
                done.resume()
            }
        }
        lastState = report ? engine.control.withLock { $0.state } : .idle
    }

    /// Moves to `seconds` in the item playing. Exact where the file has a seek table (Xing TOC,
    /// FLAC seektable, MP4 sample tables, CAF packet table) or a constant bit rate; otherwise an
    /// estimate, flagged in the ``StreamingPlayerEvent/seeked(index:seconds:isEstimated:newRequest:)``
    /// event. Inside already-received bytes no request is made; otherwise the source reopens at
    /// the byte offset (an HTTP Range request). Live streams throw.
    public func seek(to seconds: Double) throws(AudioError) {
        guard let engine else {
            throw AudioError(.invalidState, component: "StreamingPlayer", "nothing is playing to seek in")
        }
        guard seconds.isFinite, seconds >= 0 else {
            throw AudioError(.invalidArgument, component: "StreamingPlayer", "cannot seek to \(seconds) s")
        }
        if let info = engine.control.withLock({ $0.currentInfo }), info.isLive {
            throw AudioError(.invalidState, component: "StreamingPlayer", "\(info.url) is a live stream: it cannot seek (pause keeps a timeshift buffer; jumpToLive() drops it)")
        }
        engine.send(.seek(seconds))
    }

    /// Sets the volume (0...1), ramped over `fade` seconds (a fade in or out).
    public func setVolume(_ volume: Float, fade: Double = 0.05) throws(AudioError) {
        guard volume >= 0, volume <= 1, fade >= 0, fade <= 60 else {
            throw AudioError(.invalidArgument, component: "StreamingPlayer", "volume \(volume) must be in 0...1 and fade \(fade) s in 0...60")
        }
        self.volume = volume
        engine?.control.withLock { c in
            c.volume = volume
            c.fade = Float(fade)
            c.volumeChanged = true
        }
        engine?.wake.signal()
    }

    /// The volume set last.
    public var currentVolume: Float { volume }

    // MARK: State

    /// The current state.
    public var state: StreamingPlayerState {
        engine?.control.withLock { $0.state } ?? lastState
    }

    /// The session's counters so far.
    public var statistics: StreamingPlayerStatistics {
        engine?.control.withLock { $0.stats } ?? StreamingPlayerStatistics()
    }

    /// The item playing, the position in it (seconds), and its duration when known.
    public var position: (index: Int, seconds: Double, duration: Double?) {
        engine?.control.withLock { ($0.playingIndex, $0.position, $0.duration) } ?? (0, 0, nil)
    }

    /// What the source of the item playing reported when it opened (content type, length,
    /// live or not, ICY station fields).
    public var sourceInfo: ByteSourceInfo? {
        engine?.control.withLock { $0.currentInfo }
    }
}
