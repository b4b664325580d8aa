// AVAudioRecorder: Apple's file recorder, over the input AudioQueue (the device thread copies
// into a ring; the queue's thread converts, encodes and meters) and the crash-safe file writer
// afrecord uses.
internal import OATCore
import Foundation
import OpenAudioToolbox
import Synchronization

/// The delegate of an ``AVAudioRecorder`` (Apple's `AVAudioRecorderDelegate`). Both methods are
/// optional (they have empty default implementations); the recorder calls them on the main
/// queue.
public protocol AVAudioRecorderDelegate: NSObjectProtocol, Sendable {
    /// The recording ended: ``AVAudioRecorder/stop()`` was called, or the duration given to
    /// ``AVAudioRecorder/record(forDuration:)`` was reached (`flag` true), or it ended on an error
    /// or because the input device went away (`flag` false). The file is finished when this is
    /// called.
    func audioRecorderDidFinishRecording(_ recorder: AVAudioRecorder, successfully flag: Bool)
    /// Encoding or writing the file failed; the recording stops (what was written is kept).
    func audioRecorderEncodeErrorDidOccur(_ recorder: AVAudioRecorder, error: (any Error)?)
}

extension AVAudioRecorderDelegate {
    /// Does nothing (the method is optional).
    public func audioRecorderDidFinishRecording(_ recorder: AVAudioRecorder, successfully flag: Bool) {}
    /// Does nothing (the method is optional).
    public func audioRecorderEncodeErrorDidOccur(_ recorder: AVAudioRecorder, error: (any Error)?) {}
}

/// Records from the input device into a file (Apple's `AVAudioRecorder`).
///
/// ```swift
/// let settings: [String: Any] = [AVFormatIDKey: Int(kAudioFormatMPEG4AAC), AVSampleRateKey: 44100,
///                                AVNumberOfChannelsKey: 1, AVEncoderAudioQualityKey: AVAudioQuality.high.rawValue]
/// let recorder = try AVAudioRecorder(url: url, settings: settings)
/// recorder.delegate = self
/// recorder.record(forDuration: 10)
/// ```
///
/// The container follows the URL's extension (`.caf`, `.m4a`, `.wav`, `.aif`/`.aiff`, `.aifc`,
/// `.flac`, `.opus`, `.aac`, `.mp3`) or `AVAudioFileTypeKey`; the data format the settings
/// (linear PCM, AAC, Apple Lossless, FLAC, Opus, MP3, mu-law, A-law). A combination the
/// container cannot hold throws at creation.
///
/// The input is `OAT_INPUT` (`pulse:SOURCE`, `alsa:DEVICE`) when set, else the session's
/// preferred input, else PulseAudio's default source (ALSA's default without a server).
///
/// The file is written so that a process killed at any moment (SIGKILL included) leaves a
/// readable file at the URL holding all but about the last half second: WAVE/AIFF/CAF headers
/// are refreshed every half second, M4A is written as fragmented MP4 until ``stop()`` lays it
/// out normally, compressed CAF keeps its packet table up to date. An existing file at the URL
/// is replaced when the recording is finished (until then the recording goes to a temporary
/// file beside it).
///
/// Thread safety: the methods may be called from any thread. The device thread only copies
/// captured samples into a preallocated ring; converting, encoding, metering and writing run on
/// the queue's own thread; the delegate is called on the main queue.
open class AVAudioRecorder: NSObject, @unchecked Sendable {
    /// Where the recording is written.
    public let url: URL
    /// The container and data format.
    let plan: RecorderPlan
    private let givenSettings: [String: Any]
    private let completedFormat: AVAudioFormat
    /// Serialises the transport (record, pause, stop, the end of a recording).
    private let transport = NSLock()
    private let state = Locked(RecorderState())
    /// Where events and scheduled starts are handled, off the queue's thread.
    private let control = DispatchQueue(label: "AVAudioRecorder")

    /// Creates a recorder writing `url` in the format `settings` describe (see the class
    /// discussion for the keys); throws an `NSError` (`NSOSStatusErrorDomain`) when the file
    /// type, the format or an encoder setting cannot be recorded. Nothing is created yet.
    public init(url: URL, settings: [String: Any]) throws {
        guard url.isFileURL else {
            throw avError(kAudio_ParamError, "AVAudioRecorder: \(url) is not a file URL")
        }
        self.url = url
        plan = try RecorderPlan(url: url, settings: settings)
        givenSettings = settings
        let queue: AudioInputQueue
        do {
            queue = try RecorderSession.makeQueue(plan, sink: RecorderSink())
        } catch {
            throw avError(kAudioFormatUnsupportedDataFormatError, "AVAudioRecorder: cannot encode \(plan.format) for \(url.path): \(error.message)")
        }
        var completed = queue.streamDescription
        completedFormat = AVAudioFormat(streamDescription: &completed)
            ?? AVAudioFormat(standardFormatWithSampleRate: plan.format.sampleRate, channels: plan.format.channelsPerFrame)!
        super.init()
    }

    /// Creates a recorder writing `url` in `format` (its settings; files hold interleaved samples
    /// in the container's byte order).
    public convenience init(url: URL, format: AVAudioFormat) throws {
        try self.init(url: url, settings: RecorderPlan.settings(of: format))
    }

    deinit {
        // Finish what was recorded, telling nobody (the object is going away).
        if let session = state.withLock({ $0.session }) { _ = session.finish() }
    }

    // MARK: Properties

    /// The settings of the recording: those given, completed with the format's keys.
    open var settings: [String: Any] {
        var s = givenSettings
        for (k, v) in completedFormat.settings where k != AVLinearPCMIsNonInterleaved { s[k] = v }
        if s[AVAudioFileTypeKey] == nil { s[AVAudioFileTypeKey] = Int(plan.fileType.rawValue) }
        return s
    }

    /// The format of the recorded audio (compressed formats completed by the encoder: AAC has
    /// 1024 frames per packet).
    open var format: AVAudioFormat { completedFormat }

    /// Receives the end of each recording and encoding errors, on the main queue. Held weakly.
    open var delegate: (any AVAudioRecorderDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    /// True while recording (also once a scheduled ``record(atTime:)`` was accepted); false when
    /// paused or stopped.
    open var isRecording: Bool { state.withLock { $0.isRecording } }

    /// Seconds recorded since the recording began (pauses excluded); 0 when stopped. It advances
    /// as the queue delivers, in steps of up to about 0.1 s (as the input device delivers).
    open var currentTime: TimeInterval {
        guard let session = state.withLock({ $0.session }) else { return 0 }
        return session.recordedSeconds
    }

    /// The host clock in seconds (monotonic), the time base of ``record(atTime:)``.
    open var deviceCurrentTime: TimeInterval { HostTime.seconds(ticks: HostTime.now()) }

    // MARK: Recording

    /// Creates the file (replacing one at the URL when the recording is finished) and the
    /// input queue; true on success. Called by the `record` methods when needed.
    @discardableResult
    open func prepareToRecord() -> Bool {
        transport.lock(); defer { transport.unlock() }
        return prepareLocked() != nil
    }

    private func prepareLocked() -> RecorderSession? {
        if let s = state.withLock({ $0.session }) { return s }
        do {
            let session = try RecorderSession(plan: plan, url: url) { [weak self] event, session in
                guard let recorder = self else { return }
                recorder.control.async { recorder.handle(event, from: session) }
            }
            let metering = state.withLock { s in
                s.session = session
                s.error = nil
                return s.isMeteringEnabled
            }
            session.queue.isLevelMeteringEnabled = metering
            return session
        } catch {
            state.withLock { $0.error = error as NSError }
            return nil
        }
    }

    /// Starts or resumes recording; true on success.
    @discardableResult
    open func record() -> Bool {
        transport.lock(); defer { transport.unlock() }
        return startLocked(limit: nil, at: nil)
    }

    /// Starts recording at `time` on the ``deviceCurrentTime`` clock (now if it has passed).
    @discardableResult
    open func record(atTime time: TimeInterval) -> Bool {
        transport.lock(); defer { transport.unlock() }
        return startLocked(limit: nil, at: time)
    }

    /// Records `duration` seconds (an exact frame count at the recording's rate), then stops by
    /// itself and tells the delegate (successfully: true).
    @discardableResult
    open func record(forDuration duration: TimeInterval) -> Bool {
        transport.lock(); defer { transport.unlock() }
        return startLocked(limit: duration, at: nil)
    }

    /// Records `duration` seconds from `time` on the ``deviceCurrentTime`` clock.
    @discardableResult
    open func record(atTime time: TimeInterval, forDuration duration: TimeInterval) -> Bool {
        transport.lock(); defer { transport.unlock() }
        return startLocked(limit: duration, at: time)
    }

    private func startLocked(limit: TimeInterval?, at time: TimeInterval?) -> Bool {
        if let limit, !(limit > 0 && limit.isFinite) { return false }
        guard let session = prepareLocked() else { return false }
        if let limit { session.queue.setFrameLimit(Int64((limit * plan.format.sampleRate).rounded())) }
        if let time, time > deviceCurrentTime + 0.001 {
            let generation = state.withLock { s -> Int in
                s.isRecording = true
                s.scheduleGeneration += 1
                return s.scheduleGeneration
            }
            let delay = time - deviceCurrentTime
            control.asyncAfter(deadline: .now() + delay) { [weak self] in
                guard let self else { return }
                self.transport.lock(); defer { self.transport.unlock() }
                guard self.state.withLock({ $0.scheduleGeneration == generation && $0.session === session && $0.isRecording }) else { return }
                if !self.startQueue(session) { self.state.withLock { $0.isRecording = false } }
            }
            return true
        }
        state.withLock { $0.scheduleGeneration += 1 }
        return startQueue(session)
    }

    private func startQueue(_ session: RecorderSession) -> Bool {
        do {
            try session.queue.start()
            state.withLock { $0.isRecording = true }
            return true
        } catch {
            state.withLock { s in s.isRecording = false; s.error = NSError(domain: NSOSStatusErrorDomain, code: Int(error.osStatus ?? kAudio_ParamError), userInfo: [NSLocalizedDescriptionKey: "AVAudioRecorder: \(error)"]) }
            return false
        }
    }

    /// Pauses; ``record()`` resumes, appending to the same file.
    open func pause() {
        transport.lock(); defer { transport.unlock() }
        guard let session = state.withLock({ $0.session }) else { return }
        state.withLock { s in s.isRecording = false; s.scheduleGeneration += 1 }
        if session.queue.isRunning { try? session.queue.pause() }
    }

    /// Stops recording and finishes the file (all captured audio written, sizes, packet table
    /// and index in place) before it returns; the delegate hears of it on the main queue.
    open func stop() {
        transport.lock(); defer { transport.unlock() }
        guard let session = state.withLock({ $0.session }) else { return }
        end(session, successfully: true)
    }

    /// Deletes the recording at ``url``; false while a recording is in progress (stop first) or
    /// when there is no regular file to delete.
    @discardableResult
    open func deleteRecording() -> Bool {
        transport.lock(); defer { transport.unlock() }
        guard state.withLock({ $0.session == nil }) else { return false }
        var st = stat()
        guard lstat(url.path, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return false }
        return unlink(url.path) == 0
    }

    // MARK: Metering

    /// Turns level metering on or off (off by default).
    open var isMeteringEnabled: Bool {
        get { state.withLock { $0.isMeteringEnabled } }
        set {
            let session = state.withLock { s in s.isMeteringEnabled = newValue; return s.session }
            session?.queue.isLevelMeteringEnabled = newValue
        }
    }

    /// Takes the latest levels (of the audio most recently captured) for
    /// ``averagePower(forChannel:)`` and ``peakPower(forChannel:)``.
    open func updateMeters() {
        let (session, on) = state.withLock { ($0.session, $0.isMeteringEnabled) }
        let levels = on ? session?.queue.currentLevelsDB() ?? [] : []
        state.withLock { $0.meters = levels }
    }

    /// The RMS level of channel `channelNumber` (0 based) at the last ``updateMeters()``, in dB
    /// full scale: -160 (silence, metering off, no such channel) ... 0.
    open func averagePower(forChannel channelNumber: Int) -> Float {
        meter(channelNumber) { $0.averagePower }
    }

    /// The peak level of channel `channelNumber` at the last ``updateMeters()``, in dB full
    /// scale: -160 ... 0.
    open func peakPower(forChannel channelNumber: Int) -> Float {
        meter(channelNumber) { $0.peakPower }
    }

    private func meter(_ channel: Int, _ value: (AudioQueueLevelMeterState) -> Float) -> Float {
        let levels = state.withLock { $0.meters }
        guard channel >= 0, channel < levels.count else { return -160 }
        let db = value(levels[channel])
        return db <= -120 || !db.isFinite ? -160 : min(0, db)
    }

    /// The error that made the last ``prepareToRecord()`` or `record` call return false.
    var lastError: NSError? { state.withLock { $0.error } }

    // MARK: Ending

    /// An event of the queue, on the control queue.
    private func handle(_ event: RecorderEvent, from session: RecorderSession) {
        transport.lock(); defer { transport.unlock() }
        guard state.withLock({ $0.session === session }) else { return }
        switch event {
        case .finished(let lost):
            end(session, successfully: !lost)
        case .failed(let error):
            let ns = NSError(domain: NSOSStatusErrorDomain, code: Int(error.osStatus ?? kAudio_ParamError),
                             userInfo: [NSLocalizedDescriptionKey: "AVAudioRecorder: \(error)"])
            DispatchQueue.main.async { [self] in delegate?.audioRecorderEncodeErrorDidOccur(self, error: ns) }
            end(session, successfully: false)
        }
    }

    /// Stops the queue, finishes the file, tells the delegate (transport lock held).
    private func end(_ session: RecorderSession, successfully: Bool) {
        let ok = session.finish() && successfully
        state.withLock { s in
            s.session = nil
            s.isRecording = false
            s.scheduleGeneration += 1
            s.meters = []
        }
        DispatchQueue.main.async { [self] in delegate?.audioRecorderDidFinishRecording(self, successfully: ok) }
    }
}

/// The recorder's state (behind its lock).
struct RecorderState {
    weak var delegate: (any AVAudioRecorderDelegate)?
    var session: RecorderSession?
    var isRecording = false
    var isMeteringEnabled = false
    var meters: [AudioQueueLevelMeterState] = []
    var scheduleGeneration = 0
    var error: NSError?
}
