// AVAudioPlayer: Apple's simple file and data player, over AVAudioEngine. Each player is an
// AVAudioPlayerNode (plus an AVAudioUnitTimePitch when it changes rate) attached to one engine
// the process's players share (AVAudioPlayer+Output.swift): they mix into one output stream and
// share its clock, as Apple's players share the output device.
import Foundation
import OpenAudioToolbox
internal import OATUnits
#if canImport(Glibc)
import Glibc
#endif

/// What an ``AVAudioPlayer`` tells its delegate (Apple's `AVAudioPlayerDelegate`), on the main
/// queue. Every method is optional, as on Apple (empty default implementations here: Linux has
/// no Objective-C optional requirements). The main queue must be serviced (a run loop,
/// `dispatchMain()`, an async `main`, or a UI toolkit's loop), as on Apple.
@MainActor public protocol AVAudioPlayerDelegate: NSObjectProtocol {
    /// The player played to its end (`flag` true), or stopped because its audio could not be
    /// decoded (`flag` false). Not called after ``AVAudioPlayer/stop()`` or ``AVAudioPlayer/pause()``.
    func audioPlayerDidFinishPlaying(_ player: AVAudioPlayer, successfully flag: Bool)
    /// The player could not decode its audio while playing; ``audioPlayerDidFinishPlaying(_:successfully:)``
    /// follows with `false`.
    func audioPlayerDecodeErrorDidOccur(_ player: AVAudioPlayer, error: (any Error)?)
    /// The session was interrupted (the sound server went away): the player paused (Apple's
    /// deprecated `audioPlayerBeginInterruption(_:)`).
    func audioPlayerBeginInterruption(_ player: AVAudioPlayer)
    /// The interruption ended; `flags` holds `AVAudioSession.InterruptionOptions` raw values
    /// (Apple's deprecated `audioPlayerEndInterruption(_:withOptions:)`).
    func audioPlayerEndInterruption(_ player: AVAudioPlayer, withOptions flags: Int)
}

extension AVAudioPlayerDelegate {
    /// Does nothing (the method is optional).
    public func audioPlayerDidFinishPlaying(_ player: AVAudioPlayer, successfully flag: Bool) {}
    /// Does nothing (the method is optional).
    public func audioPlayerDecodeErrorDidOccur(_ player: AVAudioPlayer, error: (any Error)?) {}
    /// Does nothing (the method is optional).
    public func audioPlayerBeginInterruption(_ player: AVAudioPlayer) {}
    /// Does nothing (the method is optional).
    public func audioPlayerEndInterruption(_ player: AVAudioPlayer, withOptions flags: Int) {}
}

/// Plays a sound file or in-memory audio (Apple's `AVAudioPlayer`): any format the project
/// reads, with volume, pan, rate (pitch kept), loops, seeking, level meters and a delegate.
/// Players mix: each is a player node on the engine the process's players share, which runs
/// while one of them plays or is paused.
///
/// As on Apple: ``prepareToPlay()`` is optional (``play()`` does it); ``pause()`` keeps the
/// player ready and its position; ``stop()`` releases what ``prepareToPlay()``/``play()`` took
/// but keeps ``currentTime``, so ``play()`` goes on from there; at the end ``currentTime`` is 0
/// and the delegate hears ``AVAudioPlayerDelegate/audioPlayerDidFinishPlaying(_:successfully:)``.
/// Keep a strong reference while it plays: a player that goes away stops.
///
/// Thread safety: every method may be called from any thread; the delegate is called on the
/// main queue; nothing of the player's runs on the render thread.
open class AVAudioPlayer: NSObject, @unchecked Sendable {
    let file: AVAudioPlayerFile
    /// The file the player plays, or nil for in-memory data.
    public let url: URL?
    /// The data the player plays, or nil for a file.
    public let data: Data?
    /// The format of the player's audio (the file's).
    public let format: AVAudioFormat

    let output = AVAudioPlayerOutput.shared
    let node = AVAudioPlayerNode()
    var timePitch: AVAudioUnitTimePitch?
    let meter = AVAudioPlayerMeter()
    let lock = NSRecursiveLock()
    /// Work the completion handlers hand over (never on the feeder or render thread).
    let control = DispatchQueue(label: "oat.avaudioplayer")

    // State, under `lock`.
    var attached = false
    var playing = false
    var paused = false
    /// The node holds a schedule made from ``position`` (false: the next play schedules).
    var scheduled = false
    /// Where playback starts (file frames) while nothing is scheduled; the first frame of the
    /// schedule while it is.
    var position: AVAudioFramePosition = 0
    /// The player unit's played-frame count when the schedule started, and that unit.
    var playedBase: Int64 = 0
    weak var scheduledUnit: AUPlayerNode?
    /// Bumped by every stop, seek and finish: handlers of older schedules do nothing.
    var generation = 0
    /// Passes scheduled and not yet played back, full passes scheduled after the first.
    var outstanding = 0
    var loopsScheduled = 0
    var fadeGeneration = 0
    var storedVolume: Float = 1
    var storedPan: Float = 0
    var storedRate: Float = 1
    var storedLoops = 0
    var storedEnableRate = false
    var storedMetering = false
    var interruptionObserver: (any NSObjectProtocol)?

    /// Creates a player for the audio file at `url` (any format the project reads). Throws an
    /// `NSError` in `NSOSStatusErrorDomain` whose code is the Audio File status (e.g.
    /// `kAudioFileUnsupportedFileTypeError` for data that is no audio file), as Apple's does.
    public convenience init(contentsOf url: URL) throws {
        try self.init(contentsOf: url, fileTypeHint: nil)
    }

    /// Creates a player for the audio file at `url`; `utiString` (a uniform type identifier
    /// such as `"public.mp3"`) is a hint Apple uses when the type cannot be told from the
    /// file: here the type is always told from the contents.
    public init(contentsOf url: URL, fileTypeHint utiString: String?) throws {
        do {
            file = try AVAudioPlayerFile(forReading: url, commonFormat: .pcmFormatFloat32, interleaved: false)
        } catch {
            let prefix = filePrefix(url)
            throw prefix.bytes.isEmpty ? error : refineOpenError(error, prefix: prefix.bytes, whole: prefix.whole)
        }
        self.url = url
        data = nil
        format = file.fileFormat
        super.init()
    }

    /// Creates a player for audio file data in memory (a whole file: WAV, MP3, M4A, ...).
    public convenience init(data: Data) throws {
        try self.init(data: data, fileTypeHint: nil)
    }

    /// Creates a player for audio file data in memory; `utiString` (a uniform type identifier
    /// such as `"public.mp3"`, or an extension) says what type the data is when it cannot be
    /// told from the bytes (raw ADTS or MP3 without a tag).
    public init(data: Data, fileTypeHint utiString: String?) throws {
        do {
            file = try openPlayerFile(data: data, typeHint: utiString)
        } catch {
            throw refineOpenError(error, prefix: [UInt8](data.prefix(65536)), whole: data.count <= 65536)
        }
        url = nil
        self.data = data
        format = file.fileFormat
        super.init()
    }

    deinit {
        lock.lock()
        generation += 1
        let wasActive = playing || paused
        lock.unlock()
        if let interruptionObserver { NotificationCenter.default.removeObserver(interruptionObserver) }
        node.stop()
        if attached { output.detach(chain) }
        if wasActive { output.deactivate(self) }
    }

    // MARK: Properties

    /// The format's settings dictionary (`AVFormatIDKey`, `AVSampleRateKey`, ...).
    open var settings: [String: Any] { format.settings }
    /// The audio's length in seconds.
    open var duration: TimeInterval { file.processingFormat.sampleRate > 0 ? Double(file.length) / file.processingFormat.sampleRate : 0 }
    /// The audio's channel count.
    open var numberOfChannels: Int { Int(format.channelCount) }
    /// True while playing (not after ``pause()``, ``stop()`` or the end).
    open var isPlaying: Bool { lock.lock(); defer { lock.unlock() }; return playing }

    /// The delegate (held weakly), called on the main queue.
    open weak var delegate: (any AVAudioPlayerDelegate)?

    /// Linear gain, 0 ... 1 (default 1). Setting it ends a fade in progress.
    open var volume: Float {
        get { lock.lock(); defer { lock.unlock() }; return storedVolume }
        set {
            lock.lock(); fadeGeneration += 1; lock.unlock()
            applyVolume(newValue)
        }
    }

    /// Stereo position, -1 (left) ... 1 (right), default 0; a stereo sound is balanced
    /// (the far side is lowered, the near side kept).
    open var pan: Float {
        get { lock.lock(); defer { lock.unlock() }; return storedPan }
        set {
            let p = min(1, max(-1, newValue))
            lock.lock(); storedPan = p; lock.unlock()
            node.pan = p
        }
    }

    /// Whether ``rate`` applies. Set it before ``prepareToPlay()`` or ``play()``, as on Apple:
    /// the player then plays through a time-pitch unit (the tempo changes, the pitch does not).
    open var enableRate: Bool {
        get { lock.lock(); defer { lock.unlock() }; return storedEnableRate }
        set { lock.lock(); storedEnableRate = newValue; lock.unlock() }
    }

    /// Playback rate, 0.5 ... 2 (default 1), pitch unchanged; applies when ``enableRate`` was
    /// true when the player was prepared.
    open var rate: Float {
        get { lock.lock(); defer { lock.unlock() }; return storedRate }
        set {
            let r = min(2, max(0.5, newValue))
            lock.lock(); storedRate = r; let unit = timePitch; lock.unlock()
            unit?.rate = r
        }
    }

    /// Times the sound repeats after it has played once: 0 (default) plays it once, 2 three
    /// times, a negative value until ``stop()``. A change while playing applies to the passes
    /// not yet scheduled (the next pass, or the one after it for a sound shorter than 0.5 s).
    open var numberOfLoops: Int {
        get { lock.lock(); defer { lock.unlock() }; return storedLoops }
        set { lock.lock(); storedLoops = newValue; lock.unlock() }
    }

    /// The output device's clock in seconds: it advances while a player plays or is paused and
    /// reads 0 when none does (all players share it). ``play(atTime:)`` takes times on it.
    open var deviceCurrentTime: TimeInterval { output.deviceTime }

    /// The UID of the output device (macOS). Kept and read back; the player plays to the
    /// device the engines use (`OAT_OUTPUT`, else the default sink).
    open var currentDevice: String? {
        get { lock.lock(); defer { lock.unlock() }; return storedDevice }
        set { lock.lock(); storedDevice = newValue; lock.unlock() }
    }
    private var storedDevice: String?

    /// Channel descriptions the audio's channels go to (iOS). Kept and read back when it has
    /// ``numberOfChannels`` entries (else ignored, as Apple requires that count); the player's
    /// channels go to the output's first channels in order.
    open var channelAssignments: [AVAudioSessionChannelDescription]? {
        get { lock.lock(); defer { lock.unlock() }; return storedAssignments }
        set {
            guard newValue == nil || newValue?.count == numberOfChannels else { return }
            lock.lock(); storedAssignments = newValue; lock.unlock()
        }
    }
    private var storedAssignments: [AVAudioSessionChannelDescription]?

    // MARK: Transport

    /// Prepares the player: its nodes join the shared engine, the file is open. True on
    /// success. ``play()`` calls it.
    @discardableResult
    open func prepareToPlay() -> Bool {
        lock.lock(); defer { lock.unlock() }
        attachIfNeeded()
        return true
    }

    /// Plays from ``currentTime`` (after a pause, from where it paused), at once. False when
    /// the output device cannot start.
    @discardableResult
    open func play() -> Bool { start(atDeviceTime: nil) }

    /// Plays from ``currentTime`` when the output's clock (``deviceCurrentTime``) reaches
    /// `time`, to the sample: players started at the same device time play in sync. A time
    /// already past starts at once. (With ``enableRate`` and a rate other than 1 the start is
    /// placed on the player's clock, which the time-pitch unit runs faster or slower.)
    @discardableResult
    open func play(atTime time: TimeInterval) -> Bool { start(atDeviceTime: time) }

    /// Pauses: silent within the device's latency, ready to go on from here with ``play()``;
    /// ``deviceCurrentTime`` goes on.
    open func pause() {
        lock.lock(); defer { lock.unlock() }
        guard playing else { return }
        node.pause()
        playing = false
        paused = true
        fadeGeneration += 1
    }

    /// Stops: silent within the device's latency, and what ``prepareToPlay()`` and ``play()``
    /// took is released (the player leaves the shared engine; the engine stops with the last
    /// player). ``currentTime`` is kept, so ``play()`` goes on from there, as on Apple.
    open func stop() {
        lock.lock()
        let wasActive = playing || paused
        if scheduled { position = frameNow() }
        generation += 1
        fadeGeneration += 1
        playing = false
        paused = false
        scheduled = false
        node.stop()
        if attached {
            output.detach(chain)
            attached = false
        }
        meter.reset()
        lock.unlock()
        if wasActive { output.deactivate(self) }
    }

    /// The position in the audio in seconds: while playing, the frame the player has reached;
    /// otherwise where ``play()`` starts. Setting it seeks (clamped to 0 ... ``duration``).
    open var currentTime: TimeInterval {
        get {
            lock.lock(); defer { lock.unlock() }
            return Double(frameNow()) / file.processingFormat.sampleRate
        }
        set {
            lock.lock(); defer { lock.unlock() }
            let length = file.length
            let frame = min(length, max(0, AVAudioFramePosition((newValue * file.processingFormat.sampleRate).rounded())))
            if playing {
                generation += 1
                node.stop()
                position = frame
                scheduled = false
                scheduleAndPlay(at: nil)
            } else {
                if scheduled {
                    generation += 1
                    node.stop()
                    scheduled = false
                }
                position = frame
            }
        }
    }

    // MARK: Metering

    /// Whether the player measures its levels (off by default; it costs a tap).
    open var isMeteringEnabled: Bool {
        get { lock.lock(); defer { lock.unlock() }; return storedMetering }
        set {
            lock.lock(); defer { lock.unlock() }
            guard newValue != storedMetering else { return }
            storedMetering = newValue
            if attached { newValue ? installMeterTap() : removeMeterTap() }
            if !newValue { meter.reset() }
        }
    }

    /// Takes the levels of the audio played (the peak since the last call, the average of the
    /// last tenth of a second), for
    /// ``averagePower(forChannel:)`` and ``peakPower(forChannel:)``.
    open func updateMeters() {
        lock.lock(); let silent = !playing || !storedMetering; lock.unlock()
        meter.update(silent: silent)
    }

    /// The RMS level of `channelNumber` over the last tenth of a second played before the last
    /// ``updateMeters()``, in dBFS: 0 for a full-scale square wave, -3.01 for a full-scale
    /// sine, -160 for silence (after volume).
    open func averagePower(forChannel channelNumber: Int) -> Float { meter.average(channelNumber) }

    /// The peak level of `channelNumber` at the last ``updateMeters()``, in dBFS (0 full
    /// scale, -160 silence; after volume).
    open func peakPower(forChannel channelNumber: Int) -> Float { meter.peak(channelNumber) }

    func installMeterTap() {
        let meter = self.meter
        (timePitch ?? node).installTap(onBus: 0, bufferSize: 1024, format: nil) { buffer, _ in meter.add(buffer) }
    }

    func removeMeterTap() {
        timePitch?.removeTap(onBus: 0)
        node.removeTap(onBus: 0)
    }

    // MARK: Fades

    /// Moves the volume to `volume` over `duration` seconds (linearly, in 10 ms steps off the
    /// render thread; each step glides). Setting ``volume`` or a new fade ends it.
    open func setVolume(_ volume: Float, fadeDuration duration: TimeInterval) {
        lock.lock()
        fadeGeneration += 1
        let g = fadeGeneration
        let from = storedVolume
        lock.unlock()
        guard duration > 0 else { applyVolume(volume); return }
        let start = Date()
        let target = min(1, max(0, volume))
        @Sendable func step() {
            lock.lock(); let current = fadeGeneration == g; lock.unlock()
            guard current else { return }
            let t = min(1, Date().timeIntervalSince(start) / duration)
            applyVolume(from + (target - from) * Float(t))
            if t < 1 { control.asyncAfter(deadline: .now() + 0.01) { step() } }
        }
        control.async { step() }
    }

    func applyVolume(_ v: Float) {
        let clamped = min(1, max(0, v))
        lock.lock(); storedVolume = clamped; lock.unlock()
        node.volume = clamped
        meter.setGain(clamped)
    }
}
