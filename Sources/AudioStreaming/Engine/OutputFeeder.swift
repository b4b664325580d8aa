import AudioConversion
import AudioCore
import AudioNetwork
import AudioDevices
import AudioFiles
import AudioQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// When playback starts, stops for an underrun and starts again: the start and rebuffer targets
/// (``BufferingPolicy/startSeconds``, ``BufferingPolicy/rebufferSeconds``), grown after each
/// underrun up to ``BufferingPolicy/maximumTargetSeconds``.
///
/// A value the decoder thread owns: it is told what is decoded and what the queue reports and
/// answers what to do; the decoder thread carries that out on the queue.
struct BufferingController {
    enum Phase { case starting, playing, rebuffering, ending }
    var phase = Phase.starting
    private(set) var startTarget: Double
    private(set) var rebufferTarget: Double
    let growth: Double
    let maximumTarget: Double
    /// Underruns that paused playback to rebuffer.
    private(set) var underruns = 0
    /// The queue's underrun count as last seen.
    var lastUnderrunCount = 0

    init(policy: BufferingPolicy) {
        startTarget = policy.startSeconds
        rebufferTarget = policy.rebufferSeconds
        growth = policy.growthAfterUnderrun
        maximumTarget = policy.maximumTargetSeconds
    }

    /// Waiting for audio before (re)starting the queue.
    var isBuffering: Bool { phase == .starting || phase == .rebuffering }

    /// The decoded seconds to wait for in this phase.
    var target: Double { phase == .starting ? startTarget : rebufferTarget }

    /// Whether the queue may start: `decoded` seconds of audio wait in the queue; `full` when
    /// every queue buffer is in use; `inputDone` when no more bytes will come. Decoded audio,
    /// not received bytes, decides (a queue started on the bytes of a burst the decoder had not
    /// been through yet began with one frame in its ring and underran at once).
    func readyToStart(decoded: Double, full: Bool, inputDone: Bool) -> Bool {
        isBuffering && (decoded >= target || full || (inputDone && decoded > 0))
    }

    /// The progress shown while buffering, 0...1 in steps of 0.01, for `buffered` seconds
    /// (decoded audio plus an estimate for the bytes not decoded yet).
    func progress(buffered: Double) -> Double {
        (min(1, buffered / max(0.001, target)) * 100).rounded() / 100
    }

    /// The queue reports `count` underruns in all, with `aheadFrames` enqueued but not played
    /// at `rate`. True when playback must pause to rebuffer: the ring ran dry mid-stream
    /// (not at the end of the input); the targets grow.
    mutating func underrun(count: Int, paused: Bool, inputDone: Bool, aheadFrames: Int64, rate: Double) -> Bool {
        guard phase == .playing, !paused, count > lastUnderrunCount else { return false }
        lastUnderrunCount = count
        guard !inputDone, aheadFrames < Int64(0.05 * rate) else { return false }
        underruns += 1
        phase = .rebuffering
        startTarget = min(maximumTarget, startTarget * growth)
        rebufferTarget = min(maximumTarget, rebufferTarget * growth)
        return true
    }

    /// Whether a source silent for `secondsSinceActivity` has stalled: only while buffering
    /// (before the queue first started, or rebuffering) and past `timeout`.
    func stalled(queueStarted: Bool, secondsSinceActivity: Double, timeout: Double) -> Bool {
        (!queueStarted || phase == .rebuffering) && secondsSinceActivity > timeout
    }
}

/// The output feeder: the ``AudioOutputQueue``, its buffer pool, and when playback starts.
extension DecoderThread {
    /// Opens the output once the first item's source has answered, so that the device's set-up
    /// (a PulseAudio context, an ALSA PCM) overlaps the wait for the first audio bytes (an
    /// Icecast server sends its burst about 0.2 s after its response head) instead of following
    /// them; not earlier, where it would compete with loading libcurl and connecting. A queue at
    /// 44.1 kHz stereo (what most streams are), replaced in ``ensureQueue(for:layout:)`` before
    /// anything is enqueued when the stream turns out to be another rate or channel count.
    func openOutputEarly() {
        guard queue == nil, policy.opensOutputEarly else { return }
        do {
            try ensureQueue(for: .linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 32, isFloat: true))
            try queue?.prime(frames: 0)
            speculativeQueue = true
            debug("output opened before the first bytes")
        } catch {
            // Opened again (and its error reported) once the format is known.
            debug("output not opened early: \(error)")
            dropQueue()
        }
    }

    /// Disposes of a queue nothing was enqueued to, and its buffers.
    func dropQueue() {
        queue?.dispose(immediately: true)
        queue = nil
        pcm = nil
        pool.buffers.withLock { $0.removeAll() }
    }

    func ensureQueue(for format: AudioStreamBasicDescription, layout: AudioChannelLayout? = nil) throws {
        if speculativeQueue {
            speculativeQueue = false
            let labels = layout?.decodedLabels(for: format)
            // Kept when the stream is what was guessed (and names no layout the device must take).
            if format.sampleRate == deviceRate && Int(min(8, max(1, format.channelsPerFrame))) == channels && (labels == nil || channels <= 2) { return }
            debug("output reopened for \(format.sampleRate) Hz, \(format.channelsPerFrame) channels")
            dropQueue()
        }
        guard queue == nil else { return }
        deviceRate = format.sampleRate
        channels = Int(min(8, max(1, format.channelsPerFrame)))
        queueFormat = .linearPCM(sampleRate: deviceRate, channels: UInt32(channels), bitsPerChannel: 32, isFloat: true)
        framesPerBuffer = max(64, Int((deviceRate * 2048 / 44100).rounded(.up)))
        let pool = self.pool
        let wake = engine.wake
        let labels = format.channelsPerFrame == UInt32(channels) ? layout?.decodedLabels(for: format) : nil
        let q = try AudioOutputQueue(format: queueFormat, deviceFormat: AudioDeviceFormat(sampleRate: deviceRate, channels: channels, channelLabels: labels),
                                     bufferReturn: .whenCopied, output: engine.output) { _, buffer in
            pool.buffers.withLock { $0.append(buffer) }
            if pool.waiting.load(ordering: .sequentiallyConsistent) { wake.signal() }
        }
        for _ in 0..<10 {
            let b = try q.allocateBuffer(byteCapacity: framesPerBuffer * channels * 4)
            pool.buffers.withLock { $0.append(b) }
        }
        let engine = self.engine
        q.eventHandler = { event in
            switch event {
            case .ended:
                engine.queueEnded.store(true, ordering: .releasing)
                wake.signal()
            case .underrun:
                wake.signal()
            case .device(.lost(let reason)):
                engine.deviceLost.withLock { if $0 == nil { $0 = (engine.clock.now(), reason) } }
                wake.signal()
            case .device(.restored):
                engine.deviceLost.withLock { $0 = nil }
            default:
                break
            }
        }
        pcm = try AudioPCMBuffer(format: queueFormat, frameCapacity: framesPerBuffer)
        crossfade = CrossfadeMixer(channels: channels)
        queue = q
        applyVolume()
    }

    /// Moves decoded PCM from the converter into queue buffers (blocking while the queue is full).
    func drainConverter(_ item: ItemDecoder, _ converter: AudioConverter) throws {
        guard let pcm, let queue else { return }
        if crossfadeFrames > 0 && !item.isLive {
            try drainWithCrossfade(item, converter, pcm)
            return
        }
        while true {
            let n = converter.read(into: pcm)
            if n == 0 { break }
            item.bytesWithoutAudio = 0
            item.skipRequestsWithoutAudio = 0
            failures.audioArrived()
            let buffer = try takeBuffer()
            buffer.fill(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(pcm.mutableBytes(0))[0..<(n * channels * 4)]))
            do {
                try queue.enqueue(buffer)
            } catch {
                pool.buffers.withLock { $0.append(buffer) }
                throw error
            }
            enqueuedFrames += Int64(n)
            item.outputFrames += Int64(n)
            checkStart()
        }
    }

    /// Crossfade path of ``drainConverter(_:_:)``: mixes the previous item's tail into the first
    /// frames, holds back the newest ``crossfadeFrames`` and enqueues what is older.
    func drainWithCrossfade(_ item: ItemDecoder, _ converter: AudioConverter, _ pcm: AudioPCMBuffer) throws {
        while true {
            let n = converter.read(into: pcm)
            if n == 0 { break }
            item.bytesWithoutAudio = 0
            item.skipRequestsWithoutAudio = 0
            failures.audioArrived()
            crossfade.add(UnsafeRawBufferPointer(pcm.mutableBytes(0)).bindMemory(to: Float.self), frames: n)
            let excess = crossfade.heldFrames - crossfadeFrames
            if excess > 0 { try enqueueHeld(item, frames: excess) }
        }
    }

    /// Enqueues the oldest `frames` held frames (a queue buffer at a time, so an interruption
    /// leaves the rest held).
    func enqueueHeld(_ item: ItemDecoder?, frames: Int) throws {
        guard let queue else { return }
        var left = frames
        while left > 0 {
            let n = min(left, framesPerBuffer)
            let buffer = try takeBuffer()
            try crossfade.takeOldest(frames: n) { bytes in
                _ = buffer.fill(bytes)
                do {
                    try queue.enqueue(buffer)
                } catch {
                    pool.buffers.withLock { $0.append(buffer) }
                    throw error
                }
            }
            enqueuedFrames += Int64(n)
            item?.outputFrames += Int64(n)
            left -= n
            checkStart()
        }
    }

    /// Takes a free queue buffer, ticking while none is free.
    func takeBuffer() throws -> AudioQueueBuffer {
        while true {
            if let b = pool.buffers.withLock({ $0.popLast() }) { return b }
            // Announce the wait, then look again: a buffer returned in between is either seen
            // here or signals the wake-up.
            pool.waiting.store(true, ordering: .sequentiallyConsistent)
            defer { pool.waiting.store(false, ordering: .sequentiallyConsistent) }
            if let b = pool.buffers.withLock({ $0.popLast() }) { return b }
            try waitTick(milliseconds: 20)
        }
    }

    /// Decoded seconds waiting, plus an estimate for the undecoded bytes.
    func bufferedSeconds() -> Double {
        let played = queue?.playedStreamFrames ?? 0
        var seconds = Double(max(0, enqueuedFrames - played)) / deviceRate
        if let item = current, let parser = item.parser, parser.bitRate > 0 {
            seconds += Double(item.reader.bufferedBytes) * 8 / Double(parser.bitRate)
        }
        return seconds
    }

    /// Starts (or resumes) the queue once enough is buffered.
    func checkStart() {
        guard let queue, buffering.isBuffering else { return }
        let buffered = bufferedSeconds()
        let decoded = Double(max(0, enqueuedFrames - queue.playedStreamFrames)) / deviceRate
        // The play ring holds about 2 s: never wait for more decoded audio than fits.
        let inputDone = (current?.inputEnded ?? true) || (current?.reader.isFinished ?? true)
        // Every queue buffer is in use: nothing more can be buffered before playback starts.
        let full = pool.buffers.withLock { $0.isEmpty } && decoded > 0
        // `buffered` (bytes included) only drives the progress shown while buffering.
        if buffering.readyToStart(decoded: decoded, full: full, inputDone: inputDone) {
            if engine.control.withLock({ $0.paused }) {
                buffering.phase = .playing
                engine.setState(.paused)
                return
            }
            if startQueue() { buffering.phase = .playing }
        } else {
            engine.setState(.buffering(progress: buffering.progress(buffered: buffered)))
        }
    }

    @discardableResult
    func startQueue() -> Bool {
        guard let queue else { return false }
        do {
            try queue.start()
            debug("queue started")
        } catch {
            debug("queue start failed: \(error)")
            lastError = error
            engine.emit(.error(index: current?.index ?? 0, error))
            engine.requestStop()
            return false
        }
        queueStarted = true
        queuePaused = false
        buffering.lastUnderrunCount = queue.underrunCount
        engine.setState(.playing)
        return true
    }

    func applyVolume() {
        guard let queue else { return }
        let (volume, fade) = engine.control.withLock { ($0.volume, $0.fade) }
        try? queue.setParameter(.volumeRampTime, max(0, min(60, fade)))
        try? queue.setParameter(.volume, max(0, min(1, volume)))
    }
}
