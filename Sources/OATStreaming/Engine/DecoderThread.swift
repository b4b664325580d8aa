import OATConversion
import OATCore
import OATNetwork
import OATDevices
import OATFiles
import OATQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Raised inside the decoder thread to abandon the work in hand (stop, seek, skip).
struct Interrupted: Error {}

/// The decoder thread: sequences the engine's parts, each its own type with its own state:
/// the parse-and-decode pump (``DecodePump``, the items being decoded), the output feeder
/// (``OutputFeeder``, the queue and what was enqueued), when playback starts
/// (``BufferingController``), title and event timing (``EventTimeline``), and pacing after
/// failures (``FailurePacer``). What it keeps itself: which queue entry comes next, the command
/// being carried out, and the queue's transport (started, paused).
final class DecoderThread {
    let engine: StreamingEngine
    var policy: BufferingPolicy { engine.policy }

    /// The items being parsed and decoded.
    var pump: DecodePump
    /// The output queue, its buffers, what was enqueued and the crossfade held before it.
    let feeder: OutputFeeder
    /// Title and event timing: what is reported when the device has played which frame.
    var timeline = EventTimeline()
    /// When playback starts, stops for an underrun and starts again.
    var buffering: BufferingController
    /// Pacing after entries that failed without audio, and giving up on the queue.
    var failures: FailurePacer

    /// The queue entry to open when the current item is done.
    var next = 0
    /// How each queue entry plays: expanded as a playlist, as HLS, or from the factory's source.
    var entries = EntryClassifier()
    /// The command that interrupted the work in hand, carried out by ``handleInterrupt()``.
    var pendingCommand: EngineCommand?

    var queueStarted = false
    var queuePaused = false
    var firstAudioReported = false
    /// ``BufferingPolicy/steadyOutputLatency`` was applied to the device.
    var steadyLatencySet = false
    var lastHealth: UInt64 = 0
    /// When the current buffering began (host time; nil while playing) and the bytes received since.
    var bufferingSince: UInt64?
    var bytesWhileBuffering: Int64 = 0
    var lastError: AudioError?

    init(engine: StreamingEngine) {
        self.engine = engine
        pump = DecodePump(policy: engine.policy)
        feeder = OutputFeeder(crossfadeSeconds: engine.policy.crossfadeSeconds)
        buffering = BufferingController(policy: engine.policy)
        failures = FailurePacer(policy: engine.policy)
    }

    // MARK: Main loop

    func run() {
        defer { shutdown() }
        // The decoder feeds the queue and reports timed events: above ordinary work where allowed.
        ThreadPriority.raiseCurrentThread()
        while true {
            if engine.control.withLock({ $0.stopRequested }) { break }
            if pump.current == nil {
                if !paceAfterFailures() { break }
                let url = engine.control.withLock { c -> String? in next < c.items.count && !failures.gaveUp ? c.items[next] : nil }
                guard let url else {
                    if finishPlayback() { break }
                    continue
                }
                if let p = pump.prefetched, p.index == next {
                    pump.current = p
                    pump.prefetched = nil
                } else {
                    pump.prefetched?.reader.cancel()
                    pump.prefetched = nil
                    if expandPlaylist(at: next, url: url) { continue }
                    guard let item = openItem(index: next, url: url, at: 0) else { next += 1; continue }
                    pump.current = item
                }
                if !queueStarted { engine.setState(.connecting) }
            }
            guard let item = pump.current else { continue }
            do {
                if item.drained {
                    if !item.finishMarked {
                        item.finishMarked = true
                        timeline.add(.itemFinished(item.index, item.url), at: enqueuedFrames)
                        // The session's stop reason follows the last item: one that played to
                        // its end clears the error of an earlier one.
                        lastError = nil
                    }
                    let hasNext = engine.control.withLock { item.index + 1 < $0.items.count }
                    if hasNext {
                        if !item.isLive { feeder.handOverFadeTail() }
                        retire(item)
                        pump.current = nil
                        next = item.index + 1
                        if buffering.phase == .ending, let queue {
                            // An item was appended while the end played out: take the end back.
                            try? queue.start()
                            buffering.phase = .playing
                        }
                    } else if finishPlayback() {
                        break
                    }
                    continue
                }
                try step(item)
            } catch is Interrupted {
                if let target = handleInterrupt() { next = target }
            } catch let gone as DeviceGone {
                // No device to play to: the whole session ends with the error.
                fail(item, gone.error)
                engine.setState(.stopped(reason: .error(gone.error)))
                break
            } catch let error as AudioError {
                fail(item, error)
                retire(item)
                pump.current = nil
                next = item.index + 1
            } catch {
                fail(item, AudioError(.invalidState, component: "StreamingPlayer", "\(error)"))
                retire(item)
                pump.current = nil
                next = item.index + 1
            }
        }
    }

    /// After the last item: lets the queue play out and reports the end. True when the loop
    /// should end.
    func finishPlayback() -> Bool {
        guard let queue, enqueuedFrames > 0 || !feeder.crossfade.isEmpty else {
            engine.setState(.stopped(reason: lastError.map { .error($0) } ?? .ended))
            return true
        }
        if buffering.phase != .ending {
            if engine.control.withLock({ $0.paused }) {
                // Paused before the end was reached: wait for resume.
                do { try waitTick(milliseconds: 20) } catch let gone as DeviceGone {
                    return deviceGone(gone)
                } catch {
                    if let target = handleInterrupt() { next = target }
                }
                return false
            }
            do { try flushFade() } catch {
                if let target = handleInterrupt() { next = target }
                return false
            }
            if !queueStarted || queuePaused {
                if !startQueue() { return true }
            }
            queue.stop(immediately: false)
            buffering.phase = .ending
            engine.setState(.playing)
        }
        do {
            try waitTick(milliseconds: 10)
        } catch let gone as DeviceGone {
            return deviceGone(gone)
        } catch {
            // A seek or skip came while the end played out.
            if let target = handleInterrupt() { next = target }
            return false
        }
        let ended = engine.queueEnded.load(ordering: .acquiring)
        if ended || !queue.isRunning {
            if ended {
                // Everything enqueued has played: the position is the end, whether or not a
                // tick sampled the queue between its last render and its stop (its count is
                // back at 0 once stopped, and that window can be shorter than a tick).
                processMarks(played: timeline.observe(played: enqueuedFrames))
            }
            processMarks(played: Int64.max)
            // An item that failed mid-way still plays what it had decoded; the session then
            // stops with its error (nil when the last item played to its end).
            engine.setState(.stopped(reason: lastError.map { .error($0) } ?? .ended))
            return true
        }
        return false
    }

    func shutdown() {
        pump.current.map(retire)
        pump.prefetched.map(retire)
        feeder.dispose()
        engine.setState(.stopped(reason: .stopped))
        engine.control.withLock { $0.finished = true }
    }

    // MARK: Commands

    /// Carries out the command that interrupted the work; returns the item index to open next
    /// when the current item was dropped.
    func handleInterrupt() -> Int? {
        if engine.control.withLock({ $0.stopRequested }) { return nil }
        guard let command = pendingCommand else { return nil }
        pendingCommand = nil
        let playing = engine.control.withLock { $0.playingIndex }
        switch command {
        case .skip:
            resetQueue()
            pump.current.map(retire)
            pump.current = nil
            pump.prefetched.map(retire)
            pump.prefetched = nil
            buffering.phase = .starting
            return playing + 1
        case .seek(let seconds):
            if let item = pump.current, item.index == playing {
                do {
                    try seek(item, to: seconds)
                } catch {
                    let e = (error as? AudioError) ?? AudioError(.invalidState, component: "StreamingPlayer", "\(error)")
                    engine.emit(.error(index: item.index, e))
                }
                return nil
            }
            // The item playing is no longer the one being decoded (the next one was prefetched
            // for a gapless join): reopen it and seek once its header is parsed.
            pump.current.map(retire)
            pump.prefetched.map(retire)
            pump.prefetched = nil
            let url = engine.control.withLock { c in playing < c.items.count ? c.items[playing] : nil }
            resetQueue()
            buffering.phase = .starting
            guard let url, let item = openItem(index: playing, url: url, at: 0) else { pump.current = nil; return playing + 1 }
            item.pendingSeek = seconds
            pump.current = item
            return nil
        case .jumpToLive:
            guard let item = pump.current, item.isLive else { return nil }
            if let range = item.reader.pendingByteRange { item.reader.drop(before: range.end) }
            item.discontinuityNext = true
            item.converter?.reset()
            item.pendingMetadata.removeAll()
            resetQueue()
            item.outputFrames = 0
            let seconds = positionSeconds()
            timeline.restart(index: item.index, seconds: seconds)
            buffering.phase = .starting
            return nil
        }
    }

    /// Drops everything queued; the timeline restarts at 0.
    func resetQueue() {
        guard let queue else { return }
        if buffering.phase == .ending && queue.isRunning {
            // The end of the stream was marked: starting the running queue takes it back, so
            // the reset below is not followed by the queue stopping itself.
            try? queue.start()
            if queuePaused { try? queue.pause() }
        }
        // The queue keeps running through the reset (its device plays silence until new audio
        // comes): a paused device would keep the stale frames in the play ring, leaving no
        // room for the new ones.
        feeder.reset(played: max(timeline.playedHighWater, queue.playedStreamFrames))
        timeline.reset()
        engine.queueEnded.store(false, ordering: .releasing)
    }

    // MARK: Waiting and the periodic work

    /// Waits for a wake-up (data, a returned buffer, a command) or the timeout, then does the
    /// periodic work; throws ``Interrupted`` for a stop or a command.
    func waitTick(milliseconds: Int) throws {
        let fast = queueStarted && !firstAudioReported
        _ = engine.wake.wait(timeout: .now() + .milliseconds(fast ? 2 : idleMilliseconds(milliseconds)))
        try tick()
    }

    /// How long a steady decoder may sleep without a wake-up: new bytes, a returned queue
    /// buffer, a command, an underrun and the queue's end all signal `wake`, so while playing
    /// only the timeline needs the clock: the next mark (item start, metadata) is waited for
    /// until it is due, the position is refreshed at least every 100 ms. Before playback and
    /// while buffering or ending, `milliseconds` (the stall and start checks tick).
    func idleMilliseconds(_ milliseconds: Int) -> Int {
        guard buffering.phase == .playing, queueStarted, !queuePaused, let queue else { return milliseconds }
        return timeline.idleMilliseconds(played: max(timeline.playedHighWater, queue.playedStreamFrames), rate: deviceRate, cap: 100)
    }

    func debug(_ text: @autoclosure () -> String) {
        guard debugEnabled else { return }
        let line = "[stream \(String(format3(engine.elapsed)))] \(text())\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }

    func tick() throws {
        let (stop, command, paused, volumeChanged) = engine.control.withLock { c -> (Bool, EngineCommand?, Bool, Bool) in
            let command = c.commands.isEmpty ? nil : c.commands.removeFirst()
            let v = c.volumeChanged
            c.volumeChanged = false
            return (c.stopRequested, command, c.paused, v)
        }
        if stop { throw Interrupted() }
        if let lost = engine.deviceLost.withLock({ $0 }),
           let gone = deviceGoneError(lost: lost, now: engine.clock.now(), timeout: policy.deviceLostTimeout, device: queue?.currentDevice ?? "") {
            throw gone
        }
        if volumeChanged { applyVolume() }
        if let command {
            pendingCommand = command
            throw Interrupted()
        }
        guard let queue, !feeder.isSpeculative else { return }
        // Pause and resume.
        debug("tick phase \(buffering.phase) started \(queueStarted) paused \(queuePaused)/\(paused) enq \(enqueuedFrames) played \(queue.playedStreamFrames) ring \(queue.bufferedFrames) running \(queue.isRunning) underruns \(queue.underrunCount)")
        if paused && queueStarted && !queuePaused {
            try? queue.pause()
            queuePaused = true
            engine.setState(.paused)
        } else if !paused && queuePaused && (buffering.phase == .playing || buffering.phase == .ending) {
            do { try queue.start() } catch { debug("resume failed: \(error)") }
            queuePaused = false
            engine.setState(.playing)
        } else if paused && !queueStarted {
            engine.setState(.paused)
        }
        // The queue's count goes back to 0 once a drained queue has stopped at the end: the
        // position stays where the last frame left it.
        let played = timeline.observe(played: queue.playedStreamFrames)
        if queueStarted { processMarks(played: played) }
        if queueStarted && !firstAudioReported && played > 0 {
            firstAudioReported = true
            let t = engine.elapsed
            engine.control.withLock { $0.stats.timeToFirstAudio = t }
            engine.emit(.firstAudio(seconds: t))
        }
        // Not before the first audio has been heard: with PulseAudio's latency adjustment a
        // larger buffer also delays the start of a stream the server has not started yet.
        if let steady = policy.steadyOutputLatency, !steadyLatencySet, firstAudioReported, buffering.phase == .playing, !queuePaused,
           Double(played) / deviceRate >= steady + 0.5, Double(enqueuedFrames - played) / deviceRate >= steady + 0.5 {
            steadyLatencySet = true
            queue.setDeviceLatency(steady)
            debug("output buffer set to \(steady) s")
        }
        // Underrun: the ring ran dry mid-stream. Pause, rebuffer with a larger target.
        if buffering.underrun(count: queue.underrunCount, paused: queuePaused, inputDone: pump.current?.inputEnded ?? true,
                              aheadFrames: enqueuedFrames - played, rate: deviceRate) {
            try? queue.pause()
            queuePaused = true
            engine.setState(.buffering(progress: 0))
        }
        checkStart()
        // Plenty decoded ahead and playing: the network thread may read in larger, rarer pieces.
        if let item = pump.current {
            item.reader.setRelaxed(buffering.phase == .playing && !queuePaused && !item.inputEnded && bufferedSeconds() >= 2)
        }
        let now = engine.clock.now()
        if queueStarted && HostTime.seconds(ticks: now - lastHealth) >= 1 {
            lastHealth = now
            let health = BufferHealth(bufferedSeconds: bufferedSeconds(), bufferedBytes: pump.current?.reader.bufferedBytes ?? 0, underruns: buffering.underruns)
            engine.emit(.bufferHealth(health))
        }
        updateStatistics(played: played)
    }
}
