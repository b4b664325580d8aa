// AVAudioPlayerNode: Apple's scheduling player (buffers, files, segments, completion handlers)
// over the OATUnits player node's ring.
import Foundation
import OpenAudioToolbox
internal import OATUnits
internal import OATCore
#if canImport(Glibc)
import Glibc
#endif

/// Options for a scheduled buffer (Apple's `AVAudioPlayerNodeBufferOptions`).
public struct AVAudioPlayerNodeBufferOptions: OptionSet, Sendable {
    /// The raw value.
    public let rawValue: UInt
    /// Creates options from a raw value.
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// Play the buffer again and again (until something interrupts it or the player stops).
    public static let loops = AVAudioPlayerNodeBufferOptions(rawValue: 1 << 0)
    /// Replace whatever is scheduled (the current buffer stops now).
    public static let interrupts = AVAudioPlayerNodeBufferOptions(rawValue: 1 << 1)
    /// Replace a looping buffer at the end of its current pass.
    public static let interruptsAtLoop = AVAudioPlayerNodeBufferOptions(rawValue: 1 << 2)
}

/// When a completion handler is called (Apple's `AVAudioPlayerNodeCompletionCallbackType`).
public enum AVAudioPlayerNodeCompletionCallbackType: Int, Sendable {
    /// When the player has taken all the data (it may not have been heard yet).
    case dataConsumed = 0
    /// When the player has rendered all the data.
    case dataRendered = 1
    /// When all the data has been rendered and the device has had time to play it.
    case dataPlayedBack = 2
}

/// A completion handler without arguments (Apple's `AVAudioNodeCompletionHandler`).
public typealias AVAudioNodeCompletionHandler = () -> Void
/// A completion handler told which point was reached (Apple's `AVAudioPlayerNodeCompletionHandler`).
public typealias AVAudioPlayerNodeCompletionHandler = (AVAudioPlayerNodeCompletionCallbackType) -> Void

/// Plays scheduled buffers and file segments (Apple's `AVAudioPlayerNode`). Schedule, then
/// ``play()`` once the engine runs; completion handlers are called on a thread of the player's,
/// never the render thread. Audio in another format than the player's output (rate, channels)
/// is converted.
open class AVAudioPlayerNode: AVAudioNode, AVAudioMixing, @unchecked Sendable {
    /// Linear gain at the mixer this player feeds, 0 ... 1.
    open var volume: Float = 1 { didSet { mixingSetOnNode(volume: volume) } }
    /// Stereo position at the mixer this player feeds, -1 ... 1.
    open var pan: Float = 0 { didSet { mixingSetOnNode(pan: pan) } }

    enum Source {
        case buffer(AVAudioPCMBuffer)
        case file(AVAudioFile, start: AVAudioFramePosition, count: AVAudioFramePosition)
    }

    final class Item {
        let source: Source
        let loops: Bool
        let callbackType: AVAudioPlayerNodeCompletionCallbackType
        let handler: AVAudioPlayerNodeCompletionHandler?
        /// Frames taken so far (of the source, in its own rate).
        var taken: AVAudioFramePosition = 0
        var converter: AVAudioConverter?
        /// The run of the converter this item plays through (shared with the items it carries on to).
        var run: ConverterRun?
        /// Where the item's last frame lands in the player's output, when the converter still
        /// held some of its frames as it ended (carried on to the next item); nil: where the
        /// frames it produced end.
        var outputEnd: Int64?
        var scratch: AVAudioPCMBuffer?
        var ended = false
        /// True once every frame of the source has been read (the converter may still hold some).
        var sourceExhausted = false
        var consumedReported = false
        init(_ source: Source, loops: Bool, callbackType: AVAudioPlayerNodeCompletionCallbackType, handler: AVAudioPlayerNodeCompletionHandler?) {
            self.source = source
            self.loops = loops
            self.callbackType = callbackType
            self.handler = handler
        }
        var format: AVAudioFormat {
            switch source {
            case .buffer(let b): b.format
            case .file(let f, _, _): f.processingFormat
            }
        }
    }

    /// One converter's run across the items that share it: the output frame it started at and
    /// the source frames it has taken, so an item's end in the output is known exactly even
    /// while the converter (a resampler) still holds its last frames.
    final class ConverterRun {
        let converter: AVAudioConverter
        let base: Int64
        var input: Int64 = 0
        init(converter: AVAudioConverter, base: Int64) {
            self.converter = converter
            self.base = base
        }
    }

    private let lock = NSLock()
    private var queue: [Item] = []
    /// Handlers waiting for the render side: (frames produced when the item ended, handler).
    private var waiting: [Waiting] = []

    /// A handler waiting for the render side: rendered once the player has rendered `end`
    /// frames; played back the device's latency after that (`renderedAt`, host time).
    struct Waiting {
        let end: Int64
        let type: AVAudioPlayerNodeCompletionCallbackType
        let handler: AVAudioPlayerNodeCompletionHandler
        var renderedAt: UInt64?
        /// The player's render position when its end was seen rendered.
        var renderedFrame: Int64?
    }
    private var playing = false
    private var produced: Int64 = 0
    private var playedBeforeStop: Int64 = 0
    private var feeding = false
    /// The converter of an item that ended while the next item, in the same format, was
    /// already scheduled: that item continues through it, so a sample-rate conversion runs on
    /// across the join as it does within one buffer (a converter per buffer restarted the
    /// resampler, and drained it, at every join of a streamer's many buffers).
    private var carried: ConverterRun?
    /// The player's ring in frames (set by the engine before it builds the graph).
    var ringFrames: Int?

    /// Creates a player to attach to an engine.
    public init() { super.init(inputs: 0, outputs: 1) }

    /// True between ``play()`` and ``stop()``/``pause()``.
    open var isPlaying: Bool { lock.lock(); defer { lock.unlock() }; return playing }

    // MARK: Scheduling

    /// Schedules a buffer after whatever is scheduled; `completionHandler` once it is consumed.
    open func scheduleBuffer(_ buffer: AVAudioPCMBuffer, completionHandler: AVAudioNodeCompletionHandler? = nil) {
        scheduleBuffer(buffer, at: nil, options: [], completionHandler: completionHandler)
    }

    /// Schedules a buffer with options (loops, interrupts); `when` must be nil here (as soon as
    /// possible after what is scheduled).
    open func scheduleBuffer(_ buffer: AVAudioPCMBuffer, at when: AVAudioTime?, options: AVAudioPlayerNodeBufferOptions = [],
                             completionHandler: AVAudioNodeCompletionHandler? = nil) {
        enqueue(Item(.buffer(buffer), loops: options.contains(.loops), callbackType: .dataConsumed, handler: completionHandler.map { h in { _ in h() } }),
                options: options)
    }

    /// Schedules a buffer, calling `completionHandler` at the point `callbackType` names.
    open func scheduleBuffer(_ buffer: AVAudioPCMBuffer, at when: AVAudioTime?, options: AVAudioPlayerNodeBufferOptions = [],
                             completionCallbackType callbackType: AVAudioPlayerNodeCompletionCallbackType,
                             completionHandler: AVAudioPlayerNodeCompletionHandler? = nil) {
        enqueue(Item(.buffer(buffer), loops: options.contains(.loops), callbackType: callbackType, handler: completionHandler), options: options)
    }

    /// Schedules a whole file.
    open func scheduleFile(_ file: AVAudioFile, at when: AVAudioTime?, completionHandler: AVAudioNodeCompletionHandler? = nil) {
        scheduleSegment(file, startingFrame: 0, frameCount: AVAudioFrameCount(clamping: file.length), at: when, completionHandler: completionHandler)
    }

    /// Schedules a whole file, calling `completionHandler` at the point `callbackType` names.
    open func scheduleFile(_ file: AVAudioFile, at when: AVAudioTime?, completionCallbackType callbackType: AVAudioPlayerNodeCompletionCallbackType,
                           completionHandler: AVAudioPlayerNodeCompletionHandler? = nil) {
        scheduleSegment(file, startingFrame: 0, frameCount: AVAudioFrameCount(clamping: file.length), at: when,
                        completionCallbackType: callbackType, completionHandler: completionHandler)
    }

    /// Schedules `frameCount` frames of a file from `startingFrame`.
    open func scheduleSegment(_ file: AVAudioFile, startingFrame: AVAudioFramePosition, frameCount: AVAudioFrameCount, at when: AVAudioTime?,
                              completionHandler: AVAudioNodeCompletionHandler? = nil) {
        enqueue(Item(.file(file, start: max(0, startingFrame), count: AVAudioFramePosition(frameCount)), loops: false, callbackType: .dataConsumed,
                     handler: completionHandler.map { h in { _ in h() } }), options: [])
    }

    /// Schedules a file segment, calling `completionHandler` at the point `callbackType` names.
    open func scheduleSegment(_ file: AVAudioFile, startingFrame: AVAudioFramePosition, frameCount: AVAudioFrameCount, at when: AVAudioTime?,
                              completionCallbackType callbackType: AVAudioPlayerNodeCompletionCallbackType,
                              completionHandler: AVAudioPlayerNodeCompletionHandler? = nil) {
        enqueue(Item(.file(file, start: max(0, startingFrame), count: AVAudioFramePosition(frameCount)), loops: false, callbackType: callbackType,
                     handler: completionHandler), options: [])
    }

    private func enqueue(_ item: Item, options: AVAudioPlayerNodeBufferOptions) {
        var dropped: [Item] = []
        lock.lock()
        if options.contains(.interrupts) {
            dropped = queue
            queue.removeAll()
            carried = nil
        } else if options.contains(.interruptsAtLoop), let last = queue.last, last.loops {
            // The looping buffer finishes its pass, then this one plays.
            queue[queue.count - 1] = Item(last.source, loops: false, callbackType: last.callbackType, handler: last.handler)
            queue[queue.count - 1].taken = last.taken
        }
        queue.append(item)
        lock.unlock()
        for d in dropped { d.handler?(d.callbackType) }
    }

    // MARK: Transport

    /// Starts playing what is scheduled (and what will be), as soon as possible.
    open func play() { play(at: nil) }

    /// Starts playing at `when` (a node time: a sample time at any rate, converted to the
    /// engine's, or a host time), nil meaning as soon as possible. Before a future time the
    /// player renders silence; in offline manual rendering its first frame lands exactly on
    /// that sample. The player's time (``playerTime(forNodeTime:)``) is 0 there.
    open func play(at when: AVAudioTime?) {
        // Already playing: nothing changes, as on Apple (streamers call play() after every
        // scheduleBuffer; restarting the timeline each time broke their progress).
        lock.lock()
        if playing { lock.unlock(); return }
        lock.unlock()
        releasePauseHold()
        lock.lock()
        // After a pause the player's timeline goes on from where it paused (Apple's "intervals
        // during which it was paused" are left out); only a stop resets it.
        if !playing, let start = startSample, let at = pausedAt { resumeFrom = (start, at) }
        playing = true
        requestedStart = when
        startSample = nil
        pausedAt = nil
        lock.unlock()
        applyStart()
        engine?.playerStarted(self)
    }

    /// The start asked for by ``play(at:)`` (nil: as soon as possible).
    private var requestedStart: AVAudioTime?
    /// The node sample time (engine rate) at which the player's time is 0: where it started,
    /// moved later by the time it spent paused (nil: stopped).
    private var startSample: AVAudioFramePosition?
    /// The node sample time at which the player paused (nil: not paused).
    private var pausedAt: AVAudioFramePosition?
    /// A play after a pause, for ``applyStart()``: the timeline's start and the pause's node time.
    private var resumeFrom: (start: AVAudioFramePosition, pausedAt: AVAudioFramePosition)?

    /// Holds the render node until the start time, once the node exists (again after a rebuild).
    private func applyStart() {
        guard let player = unit as? AUPlayerNode, let engine else { return }
        let rate = engine.renderRate
        lock.lock()
        let when = requestedStart
        let isPlaying = playing
        lock.unlock()
        guard isPlaying else { return }
        let now = player.renderedFrames
        var at: Int64?
        if let when, when.isSampleTimeValid {
            let r = when.sampleRate > 0 ? when.sampleRate : rate
            at = r == rate ? when.sampleTime : Int64((Double(when.sampleTime) * rate / r).rounded())
        } else if let when, when.isHostTimeValid, !engine.isManualRendering {
            let seconds = (Double(when.hostTime) - Double(AudioGetCurrentHostTime())) / hostTicksPerSecond
            at = now + Int64((seconds * rate).rounded())
        }
        if let at, at > now {
            player.holdPlayback(untilBuffered: 0)
            player.scheduleStart(atSampleTime: at)
        } else if player.isHeld {
            player.scheduleStart(atSampleTime: nil)
        }
        lock.lock()
        let begin = max(at ?? now, now)
        if let resume = resumeFrom {
            // Resumed: the timeline skips the paused interval.
            startSample = resume.start + max(0, begin - resume.pausedAt)
            resumeFrom = nil
        } else {
            startSample = begin
        }
        lock.unlock()
    }

    /// A new graph: the player's timeline starts again on its clock. The graph rewired while
    /// running: the player keeps its unit, its timeline and its schedule; only a start not yet
    /// placed (``play(at:)`` before the player had a unit) is placed now.
    override func graphDidChange(rebuilt: Bool, unitMade: Bool) {
        lock.lock(); let placed = startSample != nil; lock.unlock()
        if rebuilt || !placed { applyStart() }
    }

    /// A player keeps its unit while the graph is rewired (its ring, its feeder and its
    /// timeline go on): a connection in another channel count converts after it.
    override func canKeep(_ unit: OATUnits.RenderNode, rate: Double, inputChannels: Int, outputChannels: Int) -> Bool {
        unit is AUPlayerNode
    }

    /// Pauses: the player falls silent at its next render (within the device's latency) and
    /// nothing more is taken from the schedule; ``play()`` continues where it paused (what the
    /// player had buffered is kept).
    open func pause() {
        let now = (unit as? AUPlayerNode)?.renderedFrames
        lock.lock()
        if playing, startSample != nil, let now { pausedAt = now }
        playing = false
        lock.unlock()
        holdForPause()
    }

    /// Stops: the schedule is cleared (each dropped item's handler is called, as on Apple),
    /// the player falls silent at its next render (within the device's latency) and the
    /// player's time starts again at 0.
    open func stop() {
        lock.lock()
        playing = false
        let dropped = queue
        queue.removeAll()
        let pending = waiting
        waiting.removeAll()
        playedBeforeStop = (unit as? AUPlayerNode)?.playedFrames ?? 0
        produced = 0
        carried = nil
        startSample = nil
        requestedStart = nil
        pausedAt = nil
        resumeFrom = nil
        // The feeder's pull waits while `feeding`: clear it first, or stopping the unit (which
        // joins the feeder) would wait for ever.
        feeding = false
        lock.unlock()
        (unit as? AUPlayerNode)?.stop()
        // What the player had buffered is dropped: the stop is heard within the device latency.
        flushForStop()
        for d in dropped { d.handler?(d.callbackType) }
        for p in pending { p.handler(p.type) }
    }

    open override func reset() { stop() }

    /// Converts a node time (the engine's render time) to the player's time: frames of the
    /// player's timeline since it started (negative before its start), the intervals it spent
    /// paused left out, as Apple's player timeline; while paused the player's time stays where
    /// it paused. Nil when the player is stopped or the engine not rendering.
    open func playerTime(forNodeTime nodeTime: AVAudioTime) -> AVAudioTime? {
        guard nodeTime.isSampleTimeValid, let engine, engine.isRendering else { return nil }
        lock.lock(); let start = startSample; let paused = pausedAt; lock.unlock()
        guard let start else { return nil }
        let rate = engine.renderRate
        let r = nodeTime.sampleRate > 0 ? nodeTime.sampleRate : rate
        var sample = r == rate ? nodeTime.sampleTime : Int64((Double(nodeTime.sampleTime) * rate / r).rounded())
        if let paused { sample = min(sample, paused) }
        return AVAudioTime(sampleTime: sample - start, atRate: rate)
    }

    /// The inverse of ``playerTime(forNodeTime:)``.
    open func nodeTime(forPlayerTime playerTime: AVAudioTime) -> AVAudioTime? {
        guard playerTime.isSampleTimeValid, let engine, engine.isRendering else { return nil }
        lock.lock(); let start = startSample; lock.unlock()
        guard let start else { return nil }
        let rate = engine.renderRate
        let r = playerTime.sampleRate > 0 ? playerTime.sampleRate : rate
        let sample = r == rate ? playerTime.sampleTime : Int64((Double(playerTime.sampleTime) * rate / r).rounded())
        return AVAudioTime(sampleTime: sample + start, atRate: rate)
    }

    /// Reads ahead `frameCount` frames (the engine's player rings are small: nothing to do).
    open func prepare(withFrameCount frameCount: AVAudioFrameCount) {}

    // MARK: Engine side

    override func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode {
        // A new unit counts what it plays from 0: what the previous one played before a stop no
        // longer applies (handlers waited for it after a detach or a new graph).
        lock.lock(); playedBeforeStop = 0; lock.unlock()
        // Real time: a tenth of a second of ring (pause and stop take effect within it). Manual
        // rendering fills the ring before each render: a second, so a varispeed or time-pitch
        // after the player can take several render slices' worth.
        return AUPlayerNode(channels: outputChannels, bufferFrames: max(1024, ringFrames ?? Int(rate / 10)), name: "AVAudioPlayerNode")
    }

    /// Starts the feeder thread (real-time rendering).
    func startFeeding(rate: Double) {
        lock.lock()
        guard let player = unit as? AUPlayerNode, !feeding else { lock.unlock(); return }
        feeding = true
        lock.unlock()
        // On a device that is not real time (a WAV file), the graph itself renders the effects'
        // tails after the player's last frame and then stops (AudioGraph.start(device:isReady:)):
        // no silence allowance, so the file ends where the audio does. Played back is counted in frames.
        let realTime = engine?.deviceIsRealTime ?? true
        let latency = outputPresentationLatency
        player.setIdleSilenceAllowance(frames: realTime ? Int((latency * rate).rounded(.up)) + 2 * 4096 : 0)
        lock.lock()
        deviceRealTime = realTime
        lock.unlock()
        let channels = player.channels
        player.play(from: { [weak self, weak player] (out: UnsafeMutableBufferPointer<Float>) throws(AudioError) -> Int in
            guard let self else { return 0 }
            while true {
                self.deliverRendered()
                let n = self.produce(into: out, channels: channels, rate: rate)
                // Nothing scheduled (or paused) is not the end: renders need not wait for it.
                player?.setProducerIdle(n == 0)
                if n > 0 { return n }
                if !self.feedingActive { return 0 }
                usleep(5000)
            }
        }, chunkFrames: 1024)
    }

    /// Whether the engine's device is paced by a clock (false for a WAV file output), as of
    /// the feeder's start.
    private var deviceRealTime = true

    private var feedingActive: Bool { lock.lock(); defer { lock.unlock() }; return feeding }

    /// Manual rendering: fills the ring up to `frames` on the caller's thread.
    func fillForOffline(frames: Int, rate: Double) {
        guard let player = unit as? AUPlayerNode else { return }
        let channels = player.channels
        var scratch = [Float](repeating: 0, count: 1024 * channels)
        // Fill the ring (not just `frames`: a node downstream may pull faster than real time).
        while true {
            let room = min(1024, (player.capacityFrames - player.bufferedFrames))
            if room < 64 { break }
            let n = scratch.withUnsafeMutableBufferPointer { produce(into: UnsafeMutableBufferPointer(rebasing: $0[..<(room * channels)]), channels: channels, rate: rate) }
            if n == 0 { break }
            scratch.withUnsafeBufferPointer { _ = player.schedule(UnsafeBufferPointer(rebasing: $0[..<(n * channels)])) }
        }
        deliverRendered(offline: true, pending: frames)
    }

    /// Calls the handlers whose audio has been rendered.
    func deliverRendered(offline: Bool = false, pending: Int = 0) {
        guard let player = unit as? AUPlayerNode else { return }
        let played = player.playedFrames - playedBeforeStop + (offline ? Int64(pending) : 0)
        // The feeder calls this every few milliseconds: with no handler waiting there is nothing
        // to do, and the path to the device is walked only when a `.dataPlayedBack` waits.
        lock.lock()
        let anyWaiting = !waiting.isEmpty
        let needsLatency = !offline && waiting.contains { $0.type == .dataPlayedBack }
        lock.unlock()
        guard anyWaiting else { return }
        // Played back: rendered, and the latency downstream later (what the effects after the
        // player and the device held has been heard). Read outside the player's lock: it takes
        // the engine's.
        let latency = needsLatency ? outputPresentationLatency : 0
        let now = AudioGetCurrentHostTime()
        let renderedNow = player.renderedFrames
        // (Read after `played`: idle then means idle after the renders that played it.)
        let graphIdle = needsLatency ? (engine?.clocklessOutputIdle ?? true) : true
        lock.lock()
        // A device that is not real time renders faster than the clock: the latency is waited
        // in frames rendered after the player's end, not in seconds.
        let latencyFrames = deviceRealTime ? nil : Int64((latency * player.sampleRate).rounded(.up))
        // And there played back is also written: the graph has rendered the tails after the
        // player's end (it is idle), or the longest tail a graph renders (60 s) has passed, so a
        // host that stops the engine then gets the same file every run.
        let idle = deviceRealTime || graphIdle
        let tailCap = Int64(60 * player.sampleRate)
        var ready: [Waiting] = []
        var keep: [Waiting] = []
        for var w in waiting {
            if w.renderedAt == nil && w.end <= played { w.renderedAt = now; w.renderedFrame = renderedNow }
            let playedBack: Bool
            if let at = w.renderedAt, let frame = w.renderedFrame {
                if let latencyFrames {
                    playedBack = renderedNow - frame >= latencyFrames && (idle || renderedNow - frame >= latencyFrames + tailCap)
                } else {
                    playedBack = Double(now &- at) / 1e9 >= latency
                }
            } else {
                playedBack = false
            }
            if w.renderedAt != nil, w.type != .dataPlayedBack || playedBack {
                ready.append(w)
            } else {
                keep.append(w)
            }
        }
        waiting = keep
        lock.unlock()
        for d in ready { d.handler(d.type) }
    }

    /// Produces up to `out.count / channels` frames at the engine's rate and channel count from
    /// the schedule; 0 when nothing is scheduled or the player is not playing.
    func produce(into out: UnsafeMutableBufferPointer<Float>, channels: Int, rate: Double) -> Int {
        let wanted = out.count / channels
        var done = 0
        while done < wanted {
            lock.lock()
            guard playing, let item = queue.first else { lock.unlock(); break }
            let position = produced + Int64(done)
            lock.unlock()
            let n = take(item, into: UnsafeMutableBufferPointer(rebasing: out[(done * channels)...]), channels: channels, rate: rate, position: position)
            done += n
            if item.sourceExhausted && !item.consumedReported && item.callbackType == .dataConsumed {
                // Consumed: the player has taken every frame of it (Apple's dataConsumed).
                item.consumedReported = true
                item.handler?(.dataConsumed)
            }
            if item.ended {
                lock.lock()
                if queue.first === item { queue.removeFirst() }
                // A converter carried on to the next item still holds this item's last frames:
                // it is rendered once they are.
                let end = max(produced + Int64(done), item.outputEnd ?? 0)
                if let h = item.handler, item.callbackType != .dataConsumed { waiting.append(Waiting(end: end, type: item.callbackType, handler: h)) }
                lock.unlock()
                if item.callbackType == .dataConsumed && !item.consumedReported {
                    item.consumedReported = true
                    item.handler?(.dataConsumed)
                }
            } else if n == 0 {
                break
            }
        }
        lock.lock(); produced += Int64(done); lock.unlock()
        return done
    }

    /// Takes frames of one item, converted to `channels` interleaved at `rate`; `position` is
    /// where they go in the player's output (frames produced before them).
    private func take(_ item: Item, into out: UnsafeMutableBufferPointer<Float>, channels: Int, rate: Double, position: Int64) -> Int {
        let wanted = out.count / channels
        guard wanted > 0 else { return 0 }
        let format = item.format
        let target = AVAudioFormat(commonFormat: .pcmFormatFloat32, sampleRate: rate, channels: AVAudioChannelCount(channels), interleaved: true)!
        // Exactly the frames wanted: the converter fills its output buffer whole.
        if item.scratch?.frameCapacity != AVAudioFrameCount(wanted) {
            item.scratch = AVAudioPCMBuffer(pcmFormat: target, frameCapacity: AVAudioFrameCount(wanted))
        }
        guard let scratch = item.scratch else { item.ended = true; return 0 }
        if item.converter == nil {
            // The previous item's converter when this item continues it (same format).
            lock.lock()
            let previous = carried
            carried = nil
            lock.unlock()
            if let previous, previous.converter.inputFormat.isEqual(format), previous.converter.outputFormat.isEqual(target) {
                item.converter = previous.converter
                item.run = previous
            } else if let made = AVAudioConverter(from: format, to: target) {
                made.downmix = true // a file with more channels than the engine is mixed down, not cut
                item.converter = made
                item.run = ConverterRun(converter: made, base: position)
            }
            if item.converter == nil { item.ended = true; return 0 }
        }
        let converter = item.converter!
        let run = item.run
        let chunk = AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 1024)!
        var error: NSError?
        let status = converter.convert(to: scratch, error: &error) { packets, status in
            let n = self.read(item, into: chunk, max: Int(min(packets, 1024)))
            run?.input += Int64(n)
            if n == 0 {
                // The item is over: when the next one is already scheduled in the same format,
                // its frames follow through this converter ("no data now" keeps the resampler's
                // state and the frames it holds); otherwise the converter drains.
                status.pointee = self.isContinued(item, format: format) ? .noDataNow : .endOfStream
                return nil
            }
            status.pointee = .haveData
            return chunk
        }
        if status == .endOfStream || status == .error {
            item.ended = true
            return 0
        }
        if status == .inputRanDry {
            // Continued by the next item: it takes over the converter (and what it holds). The
            // frames the converter holds back (a resampler's look-ahead) are this item's last:
            // its end in the output is where its source frames end at the output's rate.
            item.ended = true
            if let run {
                item.outputEnd = run.base + Int64((Double(run.input) * rate / format.sampleRate).rounded())
            }
            lock.lock()
            carried = run
            lock.unlock()
        }
        let frames = min(Int(scratch.frameLength), wanted)
        let data = scratch.floatChannelData![0]
        out.baseAddress!.update(from: data, count: frames * channels)
        return frames
    }

    /// True when `item` is first in the schedule and the item after it has the same format.
    private func isContinued(_ item: Item, format: AVAudioFormat) -> Bool {
        lock.lock(); defer { lock.unlock() }
        guard playing, queue.count > 1, queue[0] === item else { return false }
        return queue[1].format.isEqual(format)
    }

    /// Source frames of `item` into `chunk` (its format), at most `max`; loops restart.
    private func read(_ item: Item, into chunk: AVAudioPCMBuffer, max: Int) -> Int {
        switch item.source {
        case .buffer(let b):
            var total = AVAudioFramePosition(b.frameLength)
            if total == 0 { return 0 }
            if item.taken >= total {
                lock.lock(); let loops = item.loops && playing; lock.unlock()
                guard loops else { item.sourceExhausted = true; return 0 }
                item.taken = 0
                total = AVAudioFramePosition(b.frameLength)
            }
            let n = Int(Swift.min(AVAudioFramePosition(max), total - item.taken))
            let bytes = Int(b.format.streamDescription.pointee.mBytesPerFrame)
            let src = UnsafeMutableAudioBufferListPointer(UnsafeMutablePointer(mutating: b.audioBufferList))
            let dst = UnsafeMutableAudioBufferListPointer(chunk.mutableAudioBufferList)
            for i in 0..<Swift.min(src.count, dst.count) {
                dst[i].mData!.copyMemory(from: src[i].mData! + Int(item.taken) * bytes, byteCount: n * bytes)
            }
            chunk.frameLength = AVAudioFrameCount(n)
            item.taken += AVAudioFramePosition(n)
            if item.taken >= total && !item.loops { item.sourceExhausted = true }
            return n
        case .file(let f, let start, let count):
            guard item.taken < count else { item.sourceExhausted = true; return 0 }
            if item.taken == 0 { f.framePosition = start }
            let n = AVAudioFrameCount(Swift.min(AVAudioFramePosition(max), count - item.taken))
            do { try f.read(into: chunk, frameCount: n) } catch { return 0 }
            item.taken += AVAudioFramePosition(chunk.frameLength)
            if item.taken >= count || chunk.frameLength == 0 { item.sourceExhausted = true }
            return Int(chunk.frameLength)
        }
    }
}
