import AudioConversion
import AudioCore
import AudioDevices
import AudioFiles
import AudioQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The output feeder: the ``AudioOutputQueue``, its buffer pool, and when playback starts.
extension DecoderThread {
    func ensureQueue(for format: AudioStreamBasicDescription) throws {
        guard queue == nil else { return }
        deviceRate = format.sampleRate
        channels = Int(min(8, max(1, format.channelsPerFrame)))
        queueFormat = .linearPCM(sampleRate: deviceRate, channels: UInt32(channels), bitsPerChannel: 32, isFloat: true)
        framesPerBuffer = max(64, Int((deviceRate * 2048 / 44100).rounded(.up)))
        let pool = self.pool
        let wake = engine.wake
        let q = try AudioOutputQueue(format: queueFormat, bufferReturn: .whenCopied, output: engine.output) { _, buffer in
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
                engine.deviceLost.withLock { if $0 == nil { $0 = (HostTime.now(), reason) } }
                wake.signal()
            case .device(.restored):
                engine.deviceLost.withLock { $0 = nil }
            default:
                break
            }
        }
        pcm = try AudioPCMBuffer(format: queueFormat, frameCapacity: framesPerBuffer)
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
            consecutiveFailures = 0
            pacedFailures = 0
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
            consecutiveFailures = 0
            pacedFailures = 0
            let fresh = UnsafeRawBufferPointer(pcm.mutableBytes(0)).bindMemory(to: Float.self)
            let start = fadeHold.count
            fadeHold.append(contentsOf: fresh[0..<(n * channels)])
            mixFadeTail(into: start / channels, frames: n)
            let excess = fadeHold.count / channels - crossfadeFrames
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
            _ = fadeHold.withUnsafeBytes { buffer.fill(UnsafeRawBufferPointer(rebasing: $0[0..<(n * channels * 4)])) }
            do {
                try queue.enqueue(buffer)
            } catch {
                pool.buffers.withLock { $0.append(buffer) }
                throw error
            }
            fadeHold.removeFirst(n * channels)
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
        guard let queue, phase == .starting || phase == .rebuffering else { return }
        let target = phase == .starting ? startTarget : rebufferTarget
        let buffered = bufferedSeconds()
        let decoded = Double(max(0, enqueuedFrames - queue.playedStreamFrames)) / deviceRate
        // The play ring holds about 2 s: never wait for more decoded audio than fits.
        let inputDone = (current?.inputEnded ?? true) || (current?.reader.isFinished ?? true)
        // Every queue buffer is in use: nothing more can be buffered before playback starts.
        let full = pool.buffers.withLock { $0.isEmpty } && decoded > 0
        // Decoded audio, not received bytes, decides: the bytes of a burst arrive before the
        // decoder has been through them, and a queue started on bytes alone began with one
        // frame in its ring and underran at once (silence padded into the first request).
        // `buffered` (bytes included) only drives the progress shown while buffering.
        if decoded >= target || full || (inputDone && decoded > 0) {
            if engine.control.withLock({ $0.paused }) {
                phase = .playing
                engine.setState(.paused)
                return
            }
            if startQueue() { phase = .playing }
        } else {
            let progress = min(1, buffered / max(0.001, target))
            engine.setState(.buffering(progress: (progress * 100).rounded() / 100))
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
        lastUnderrunCount = queue.underrunCount
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
