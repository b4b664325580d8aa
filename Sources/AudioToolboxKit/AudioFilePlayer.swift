import OATCore
import OATDevices
import OATFiles
import OATProcessing
import OATQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Plays local files through an `AudioOutputQueue`: the local-file AudioQueue player of
/// Apple's Audio Queue Services guide, with a gapless queue of files, pause, seek, volume and
/// position. Files are decoded on the player's thread into Float32 at the device rate (priming
/// and remainder trimmed), so consecutive gapless-encoded files join without gap or overlap.
///
/// Thread safety: control methods are safe from any thread; ``eventHandler`` is called on the
/// player's or queue's thread.
public final class AudioFilePlayer: @unchecked Sendable {
    /// What the player reports.
    public enum Event: Sendable, Equatable {
        /// An item began to be decoded (`index` into ``paths``), with its file's format.
        case itemStarted(index: Int, format: AudioStreamBasicDescription)
        /// Playback state changed.
        case state(State)
        /// A file could not be played; the player moves on to the next.
        case itemFailed(index: Int, error: AudioError)
        /// The device or queue reported something.
        case queue(AudioOutputQueueEvent)
    }

    /// Playback state.
    public enum State: String, Sendable, Equatable {
        /// Not started.
        case idle
        /// Playing.
        case playing
        /// Paused.
        case paused
        /// Everything played.
        case ended
        /// Stopped by ``stop()``.
        case stopped
    }

    /// The files, in play order.
    public let paths: [String]
    /// The format the device runs at.
    public let deviceFormat: AudioDeviceFormat
    /// Receives events.
    public var eventHandler: (@Sendable (Event) -> Void)? {
        get { state.withLock { $0.handler } }
        set { state.withLock { $0.handler = newValue } }
    }

    private let queue: AudioOutputQueue
    private final class Pool: Sendable {
        let buffers = Locked<[OATQueueEngine.QueueBuffer]>([])
    }
    private let pool = Pool()
    private let bufferReturned = DispatchSemaphore(value: 0)
    private let state = Locked(Shared())
    /// Frames per queue buffer: 0.1 s at the device rate. Six of them (0.6 s) are what the
    /// queue decodes ahead before it starts, so they must cover play()'s 0.5 s wait at every
    /// rate: at a fixed 4096 frames a 96 kHz file had 0.26 s decoded when the device asked for
    /// its 0.4 s, and underran (the rest of its first request was silence).
    private let framesPerBuffer: Int
    /// The feeder thread and whether ``stop()`` has run; guarded so that control calls from
    /// several threads start at most one feeder and join it once.
    private struct Transport {
        var thread: JoinableThread?
        var stopped = false
    }
    private let transport = Locked(Transport())
    /// The first file, opened (and indexed) by init for its format; the feeder reads it instead
    /// of opening and indexing it a second time. Set before the feeder thread starts, then only
    /// touched (taken) on that thread.
    private var firstFile: AudioFile?

    struct Shared {
        var handler: (@Sendable (Event) -> Void)?
        var state: State = .idle
        var seekRequest: Double?
        var stopRequested = false
        var stopAfterSeconds: Double?
        /// (queue frame where the item starts, item index, item start frame) for items enqueued.
        var marks: [(queueFrame: Int64, item: Int, itemFrame: Int64)] = []
        var queueFramesEnqueued: Int64 = 0
        var durations: [Double?] = []
        var generationBase: Int64 = 0
        /// True once ``play(from:duration:)`` has started the queue.
        var queueStarted = false
        /// True once the feeder has enqueued everything (or stopped).
        var feederDone = false
    }

    /// Opens the first file to learn the device format; `output` opens the device. The device
    /// runs at `sampleRate` when given (an output's `rate=HZ` option: the files are decoded and
    /// resampled to it), else at the first file's rate.
    public init(paths: [String], output: @escaping AudioOutputDeviceFactory, sampleRate: Double? = nil) throws(AudioError) {
        guard let first = paths.first else {
            throw AudioError(.invalidArgument, component: "AudioFilePlayer", "no files to play")
        }
        self.paths = paths
        let file = try AudioFile(path: first)
        firstFile = file
        // The device runs at the file's rate (or resamples it): refused outside the rates that
        // play (1 Hz PCM played 3 frames in 3 s and hung seeks).
        if let why = FormatLimits.unplayableRate(file.dataFormat.sampleRate) {
            throw AudioError(.unsupportedFormat, component: "AudioFilePlayer", "\(first): \(why)")
        }
        let channels = Int(min(8, max(1, file.dataFormat.channelsPerFrame)))
        if let sampleRate, !(sampleRate >= 1 && sampleRate <= 1_536_000) {
            throw AudioError(.invalidArgument, component: "AudioFilePlayer", "output sample rate \(sampleRate) Hz is out of range (1 Hz to 1536 kHz)")
        }
        deviceFormat = AudioDeviceFormat(sampleRate: sampleRate ?? file.dataFormat.sampleRate, channels: channels,
                                         channelLabels: channels == Int(file.dataFormat.channelsPerFrame) ? file.channelLayout?.decodedLabels(for: file.dataFormat) : nil)
        framesPerBuffer = max(64, Int((deviceFormat.sampleRate / 10).rounded(.up)))
        let pcm = AudioStreamBasicDescription.linearPCM(sampleRate: deviceFormat.sampleRate, channels: UInt32(deviceFormat.channels), bitsPerChannel: 32, isFloat: true)
        let pool = self.pool
        let returned = bufferReturned
        // A small play ring (the queue's default is 2 s): the feeder decodes from a local file far
        // faster than real time, and the device holds 0.4 s more. At least 0.7 s (the ring rounds
        // up to a power of two: 0.74 s, 256 KB at 44.1 kHz stereo, 768 KB less than 2 s); play()
        // waits for 0.5 s of it before starting the device.
        queue = try AudioOutputQueue(format: pcm, deviceFormat: deviceFormat, ringSeconds: 0.7, bufferReturn: .whenCopied, output: output) { _, buffer in
            pool.buffers.withLock { $0.append(buffer) }
            returned.signal()
        }
        for _ in 0..<6 {
            let b = try queue.allocateBuffer(byteCapacity: framesPerBuffer * deviceFormat.channels * 4)
            pool.buffers.withLock { $0.append(b) }
        }
        state.withLock { $0.durations = Array(repeating: nil, count: paths.count) }
        queue.eventHandler = { [weak self] e in self?.handleQueueEvent(e) }
    }

    deinit {
        stop()
    }

    /// The client format files are decoded to.
    private var clientFormat: AudioStreamBasicDescription {
        .linearPCM(sampleRate: deviceFormat.sampleRate, channels: UInt32(deviceFormat.channels), bitsPerChannel: 32, isFloat: true)
    }

    /// Starts playback at `seconds` into the first file; stops by itself after `duration`
    /// seconds when given (afplay's `-t`). A start past the end of the file ends the item at
    /// once; a duration longer than the files (up to infinity) plays them whole. NaN and negative
    /// values throw `invalidArgument`.
    public func play(from seconds: Double = 0, duration: Double? = nil) throws(AudioError) {
        guard !seconds.isNaN, seconds >= 0 else {
            throw AudioError(.invalidArgument, component: "AudioFilePlayer", "start time \(seconds) is not a number of seconds >= 0")
        }
        if let duration, duration.isNaN || duration <= 0 {
            throw AudioError(.invalidArgument, component: "AudioFilePlayer", "duration \(duration) is not a positive number of seconds")
        }
        let started: JoinableThread? = try transport.withLock { (t: inout Transport) throws(AudioError) -> JoinableThread? in
            if t.stopped {
                throw AudioError(.invalidState, component: "AudioFilePlayer", "play after stop: a stopped player cannot restart; create a new one")
            }
            if t.thread != nil { return nil }
            state.withLock { s in
                s.seekRequest = seconds > 0 ? seconds : nil
                s.stopAfterSeconds = duration
            }
            let thread = try JoinableThread(name: "oat-file-player") { [self] in feed() }
            t.thread = thread
            return thread
        }
        if started == nil {
            // Already playing or paused: play(from:) moves there and resumes.
            seek(to: seconds)
            try queue.start()
            setState(.playing)
            return
        }
        // Connect to the device now, while the feeder opens the file and decodes the first
        // buffers on its thread (prime with 0 frames only opens the device and returns).
        _ = try queue.prime(frames: 0)
        // Let the feeder fill some audio before the device starts pulling: the device's first
        // request is its whole target buffer (up to half a second for afplay's PulseAudio
        // stream), which decodes in a few milliseconds. The queue keeps the buffers it used
        // until it starts (as Apple's does): once all of them are decoded, nothing more comes.
        // Half a second of MP3 decodes in about a millisecond: polled with a backoff from 0.1 ms.
        let pool = self.pool
        _ = pollWithBackoff(until: HostTime.now() + HostTime.ticks(seconds: 2)) {
            queue.bufferedFrames >= Int64(deviceFormat.sampleRate / 2)
                || (pool.buffers.withLock { $0.isEmpty } && queue.pendingBufferCount == 0 && queue.bufferedFrames > 0)
                || state.withLock { $0.state == .ended || $0.stopRequested || $0.feederDone }
        }
        try queue.start()
        state.withLock { $0.queueStarted = true }
        setState(.playing)
    }

    /// Pauses.
    public func pause() throws(AudioError) {
        try queue.pause()
        setState(.paused)
    }

    /// Resumes after ``pause()``.
    public func resume() throws(AudioError) {
        try queue.start()
        setState(.playing)
    }

    /// Stops playback and the player's thread.
    public func stop() {
        state.withLock { $0.stopRequested = true }
        bufferReturned.signal()
        // Take the thread out under the lock, join outside it: the feeder may call the event
        // handler, which may call back into the player.
        let thread = transport.withLock { t -> JoinableThread? in
            t.stopped = true
            defer { t.thread = nil }
            return t.thread
        }
        thread?.join()
        queue.dispose(immediately: true)
        let wasEnded = state.withLock { $0.state == .ended }
        if !wasEnded { setState(.stopped) }
    }

    /// Moves to `seconds` in the item playing now.
    public func seek(to seconds: Double) {
        guard !seconds.isNaN else { return }
        state.withLock { $0.seekRequest = max(0, seconds) }
        bufferReturned.signal()
    }

    /// Volume 0...1, ramped over `rampSeconds`.
    public func setVolume(_ volume: Float, rampSeconds: Float = 0.05) throws(AudioError) {
        try queue.setParameter(.volumeRampTime, rampSeconds)
        try queue.setParameter(.volume, max(0, min(1, volume)))
    }

    /// The volume.
    public var volume: Float { queue.parameter(.volume) }

    /// Plays at `rate` (0.5...2, pitch unchanged) shifted by `pitchCents` (-2400...2400) with
    /// `algorithm`; rate 1 and pitch 0 turn the time-pitch stage off. Set it before ``play(from:duration:)``
    /// (a later change reaches the ear after the audio already buffered). See docs/timepitch.md.
    /// Throws when `algorithm` cannot run (the spectral and time-domain algorithms need the
    /// Rubber Band library).
    public func setTimePitch(rate: Float, pitchCents: Float = 0, algorithm: TimePitchAlgorithm = .spectral) throws(AudioError) {
        if rate != 1 || pitchCents != 0 { try TimePitchProcessor.checkAvailable(algorithm) }
        try queue.setParameter(.playRate, rate)
        try queue.setParameter(.pitch, pitchCents)
        queue.timePitchAlgorithm = algorithm
        queue.isTimePitchEnabled = rate != 1 || pitchCents != 0
    }

    /// The playback state.
    public var currentState: State { state.withLock { $0.state } }

    /// Turns level metering on or off.
    public var isMeteringEnabled: Bool {
        get { queue.isLevelMeteringEnabled }
        set { queue.isLevelMeteringEnabled = newValue }
    }

    /// Per-channel levels (linear) over the last render period.
    public func levels() -> [AudioQueueLevelMeterState] { queue.currentLevels() }

    /// Seconds of audio decoded ahead of the play position.
    public var bufferedSeconds: Double { Double(queue.bufferedFrames) / deviceFormat.sampleRate }

    /// Underruns so far.
    public var underrunCount: Int { queue.underrunCount }

    /// The item playing and the position in it (seconds), and its duration when known.
    public func position() -> (item: Int, seconds: Double, duration: Double?) {
        // Frames played are output frames: at a play rate they cover rate x as much of the file.
        var rate = 1.0
        if queue.isTimePitchEnabled && !queue.isTimePitchBypassed {
            rate = Double(queue.parameter(.playRate))
            if queue.timePitchAlgorithm == .varispeed { rate *= exp2(Double(queue.parameter(.pitch)) / 1200) }
        }
        let played = Int64((queue.currentTime()?.time.sampleTime ?? 0) * rate)
        return state.withLock { s in
            let now = s.generationBase + played
            let mark = s.marks.last(where: { $0.queueFrame <= now }) ?? (queueFrame: 0, item: 0, itemFrame: 0)
            let seconds = Double(now - mark.queueFrame + mark.itemFrame) / deviceFormat.sampleRate
            return (mark.item, max(0, seconds), s.durations[mark.item])
        }
    }

    // MARK: Feeding

    private func setState(_ new: State) {
        let handler = state.withLock { s -> (@Sendable (Event) -> Void)? in
            guard s.state != new else { return nil }
            // Stopped is terminal: a control call racing with stop() cannot revive the state.
            if s.state == .stopped || (s.stopRequested && new != .stopped && new != .ended) { return nil }
            s.state = new
            return s.handler
        }
        handler?(.state(new))
    }

    private func emit(_ event: Event) { state.withLock { $0.handler }?(event) }

    private func handleQueueEvent(_ event: AudioOutputQueueEvent) {
        if event == .ended { setState(.ended) }
        emit(.queue(event))
    }

    private func takeBuffer() -> OATQueueEngine.QueueBuffer? {
        while true {
            if state.withLock({ $0.stopRequested || $0.seekRequest != nil }) { return nil }
            if let b = pool.buffers.withLock({ $0.popLast() }) { return b }
            // Returned buffers, seek and stop all signal: the timeout is only a safety net, long
            // enough not to wake the thread dozens of times a second while the ring is full.
            _ = bufferReturned.wait(timeout: .now() + .milliseconds(250))
        }
    }

    private func feed() {
        // The feeder keeps the queue filled: above ordinary work where allowed (ThreadPriority).
        ThreadPriority.raiseCurrentThread()
        var index = 0
        var reader: ExtendedAudioFile?
        // True once everything is enqueued and the queue was told to end after it.
        var endIssued = false
        guard let pcm = try? AudioPCMBuffer(format: clientFormat, frameCapacity: framesPerBuffer) else { return }
        // Saturating: `-t 1e308` or `-t inf` means the whole file, never a trap.
        let limitFrames = state.withLock { $0.stopAfterSeconds }.map { InputArithmetic.frames(seconds: $0, sampleRate: deviceFormat.sampleRate) }
        // End the stream only once the queue runs: starting a queue clears a pending
        // stop(immediately: false), and a queue stopped before it starts ends at once, dropping
        // what it holds (a file shorter than the ring would never play, or never end).
        func issueEnd() {
            state.withLock { $0.feederDone = true }
            _ = pollWithBackoff { state.withLock { $0.queueStarted || $0.stopRequested } }
            if !(state.withLock { $0.stopRequested }) { queue.stop(immediately: false) }
            endIssued = true
        }
        while !(state.withLock { $0.stopRequested }) {
            if endIssued {
                // Everything is enqueued (the ring holds seconds of audio): keep serving seeks
                // until the queue has played out.
                let (ended, seeking, paused) = state.withLock { ($0.state == .ended, $0.seekRequest != nil, $0.state == .paused) }
                if ended { break }
                guard seeking else {
                    _ = bufferReturned.wait(timeout: .now() + .milliseconds(100))
                    continue
                }
                // Take back the end of stream (starting the running queue clears it) and
                // reopen the item playing now; the seek below moves in it.
                do {
                    try queue.start()
                    if paused { try queue.pause() }
                } catch {
                    emit(.itemFailed(index: index, error: error))
                    break
                }
                endIssued = false
                state.withLock { $0.feederDone = false }
                index = position().item
                reader = nil
            }
            if reader == nil {
                guard index < paths.count else { issueEnd(); continue }
                do {
                    let opened = index == 0 ? firstFile : nil
                    firstFile = nil
                    let r: ExtendedAudioFile
                    if let opened {
                        r = try ExtendedAudioFile(file: opened, clientFormat: clientFormat)
                    } else {
                        r = try ExtendedAudioFile(path: paths[index], clientFormat: clientFormat)
                    }
                    reader = r
                    let duration = Double(r.frameCount) / r.file.dataFormat.sampleRate
                    let queued = state.withLock { s -> Int64 in
                        s.durations[index] = duration
                        s.marks.append((s.queueFramesEnqueued, index, 0))
                        return s.queueFramesEnqueued
                    }
                    _ = queued
                    emit(.itemStarted(index: index, format: r.file.dataFormat))
                } catch {
                    emit(.itemFailed(index: index, error: error))
                    index += 1
                    continue
                }
            }
            if let seek = state.withLock({ s -> Double? in defer { s.seekRequest = nil }; return s.seekRequest }), let r = reader {
                let frame = min(r.frameCount, InputArithmetic.frames(seconds: seek, sampleRate: r.file.dataFormat.sampleRate))
                queue.reset()
                do { try r.seek(toFrame: frame) } catch { emit(.itemFailed(index: index, error: error)) }
                let clientFrame = Int64(Double(frame) / r.file.dataFormat.sampleRate * deviceFormat.sampleRate)
                state.withLock { s in
                    s.generationBase = s.queueFramesEnqueued
                    s.marks.append((s.queueFramesEnqueued, index, clientFrame))
                }
                continue
            }
            if let limit = limitFrames, state.withLock({ $0.queueFramesEnqueued }) >= limit { issueEnd(); continue }
            guard let buffer = takeBuffer() else { continue }
            do {
                var n = try reader!.read(into: pcm)
                if let limit = limitFrames {
                    n = Int(min(Int64(n), max(0, limit - state.withLock { $0.queueFramesEnqueued })))
                }
                if n == 0 {
                    pool.buffers.withLock { $0.append(buffer) }
                    if index + 1 < paths.count {
                        reader = nil
                        index += 1
                    } else {
                        // Keep the last reader: a seek may still come while the ring plays out.
                        issueEnd()
                    }
                    continue
                }
                buffer.fill(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(pcm.mutableBytes(0))[0..<(n * deviceFormat.channels * 4)]))
                try queue.enqueue(buffer)
                state.withLock { $0.queueFramesEnqueued += Int64(n) }
            } catch {
                pool.buffers.withLock { $0.append(buffer) }
                emit(.itemFailed(index: index, error: error))
                reader = nil
                index += 1
            }
        }
    }
}
