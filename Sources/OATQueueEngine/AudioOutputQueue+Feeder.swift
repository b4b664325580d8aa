#if canImport(Glibc)
import Glibc
#endif
import OATConversion
import OATCore
import OATDevices
import OATProcessing
import Dispatch
import Synchronization

// AudioOutputQueue: the queue's own thread (decode into the play ring, hand buffers back,
// watch the device) and the internals it shares with the transport.
extension AudioOutputQueue {
    // MARK: Internals

    func openDevice() throws(AudioError) {
        let needs = try control.withLock { (s) throws(AudioError) -> Bool in
            guard !s.disposed else { throw AudioError(.invalidState, component: component, "the queue is disposed", osStatus: -66671) }
            return s.device == nil
        }
        guard needs else { return }
        let device: any AudioOutputDevice = control.withLock { $0.offline } ? OfflineOutputDevice(format: deviceFormat) : try deviceFactory(deviceFormat)
        guard device.format.channels == deviceFormat.channels else {
            device.close()
            throw AudioError(.deviceUnavailable, component: component, "device \(device.name) opened with \(device.format), queue needs \(deviceFormat)")
        }
        control.withLock { s in
            if s.device == nil { s.device = device } else { device.close() }
        }
    }

    func setRunning(_ running: Bool, _ d: inout Deferred) {
        let changed = control.withLock { s -> Bool in
            guard s.isRunning != running else { return false }
            s.isRunning = running
            return true
        }
        if changed { d.add { [self] in notify(.isRunning) } }
    }

    /// The decoder for the current format and cookie; a failure becomes the queue's converter
    /// error (property, listener, event) once per distinct error, and nil.
    func makeConverterReporting() -> AudioConverter? {
        do throws(AudioError) {
            return try makeConverter()
        } catch {
            let fresh = control.withLock { s -> Bool in
                guard s.converterError != error else { return false }
                s.converterError = error
                return true
            }
            if fresh {
                notify(.converterError)
                post(.converterError(error))
            }
            return nil
        }
    }

    func notify(_ property: AudioQueueProperty) {
        let (listeners, handler) = control.withLock { s in (Array(s.listeners.values), s.eventHandler) }
        for l in listeners { l(self, property) }
        handler?(.propertyChanged(property))
    }

    func post(_ event: AudioOutputQueueEvent) {
        control.withLock { $0.eventHandler }?(event)
    }

    /// Takes every buffer the queue holds (decoded or not), to be handed back in order once
    /// the transport lock is released.
    func returnPendingBuffers(_ d: inout Deferred) {
        let buffers = control.withLock { s -> [QueueBuffer] in
            defer { s.pending.removeAll(); s.held.removeAll() }
            return s.held.map(\.buffer) + s.pending.map(\.buffer)
        }
        guard !buffers.isEmpty else { return }
        d.add { [self] in for b in buffers { outputCallback(self, b) } }
    }

    /// Feeder: takes what render reported (buffer ends it passed and when they are heard), hands
    /// back, in order, the buffers whose audio has been played (a queue that is not running keeps
    /// them), and returns when the next one is due (nil: nothing to wait for).
    @discardableResult
    func returnPlayedBuffers() -> UInt64? {
        var heard: [QueueRenderer.HeardEnd] = []
        while let h = renderer.heardEnds.pop() { heard.append(h) }
        let now = HostTime.now()
        let (due, next) = control.withLock { s -> ([QueueBuffer], Held?) in
            if !heard.isEmpty {
                var k = 0
                for i in s.held.indices where s.held[i].heardAt == nil {
                    while k < heard.count && heard[k].end < s.held[i].end { k += 1 }
                    guard k < heard.count else { break }
                    s.held[i].heardAt = heard[k].hostTime
                }
            }
            // Paused, the device holds its audio: nothing is played (`.whenCopied` hands back as before).
            guard s.isRunning, !s.isPaused || bufferReturn == .whenCopied else { return ([], nil) }
            var n = 0
            while n < s.held.count, let at = s.held[n].heardAt, at <= now { n += 1 }
            defer { s.held.removeFirst(n) }
            return (s.held[0..<n].map(\.buffer), n < s.held.count ? s.held[n] : nil)
        }
        for b in due { outputCallback(self, b) }
        guard let next else { return nil }
        if let at = next.heardAt { return at }
        // Not reached by render yet: about when it will be, at the device's rate (render answers
        // at its next call, so no sooner than 5 ms: no spinning while it comes).
        let ahead = max(0, next.end - renderer.consumed.load(ordering: .acquiring))
        return now + max(5_000_000, UInt64(Double(ahead) / deviceFormat.sampleRate * 1e9))
    }

    /// Tests: replaces how the queue's thread is started (before it is).
    func setThreadStarter(_ starter: @escaping ThreadStarter) { control.withLock { $0.startThread = starter } }

    /// Starts the queue's thread once; throws when it cannot be started (the queue would
    /// never play).
    func ensureFeeder() throws(AudioError) {
        try control.withLock { (s) throws(AudioError) in
            guard !s.feederStarted, !s.disposed else { return }
            // The new thread's first step takes this lock, so it waits until we are done here.
            do throws(AudioError) {
                s.feeder = try s.startThread("oat-queue") { [self] in feederLoop() }
            } catch {
                throw AudioError(.deviceUnavailable, component: component,
                                 "cannot start the queue's thread: \(error.message)", osStatus: -66681)
            }
            s.feederStarted = true
        }
    }

    /// The queue's own thread: decodes enqueued buffers into the ring, returns them through the
    /// callback, watches the device, and ends the stream.
    func feederLoop() {
        // The feeder keeps the device ring filled: above ordinary work where allowed.
        ThreadPriority.raiseCurrentThread()
        var converter: AudioConverter? = makeConverterReporting()
        let scratch = try! AudioPCMBuffer(format: .linearPCM(sampleRate: deviceFormat.sampleRate, channels: UInt32(deviceFormat.channels), bitsPerChannel: 32, isFloat: true), frameCapacity: 4096)
        var generation = control.withLock { $0.generation }
        var processingVersion = -1
        var ended = false
        /// When the next held buffer is due back (host time), if any.
        var nextDue: UInt64?
        /// Buffer ends render's queue had no room for yet (more than 1024 buffers in the ring).
        var unsentEnds: [Int64] = []
        while true {
            // Enqueue, start, stop and reset signal `wake`; otherwise look at the device now and
            // then (events, the end of a drained stream) without spinning, and wake when the next
            // buffer has been played.
            var timeout = UInt64(feederIdle.load(ordering: .relaxed) ? 50 : 5) * 1_000_000
            if let due = nextDue {
                let now = HostTime.now()
                timeout = min(timeout, due > now ? due - now : 0)
            }
            if timeout > 0 { _ = wake.wait(timeout: .now() + .nanoseconds(Int(timeout))) }
            if control.withLock({ $0.disposed }) { break }
            if control.withLock({ $0.cookieChanged }) { converter = makeConverterReporting() }
            // Generation change (reset/stop): start the decoder afresh.
            let g = control.withLock { $0.generation }
            if g != generation {
                generation = g
                converter?.reset()
                chain.reset()
                ended = false
            }
            let (version, settings, taps) = control.withLock { ($0.processingVersion, $0.timePitch, $0.taps) }
            if version != processingVersion {
                processingVersion = version
                let failure = chain.configure(settings, taps: taps)
                let changed = control.withLock { s -> Bool in
                    defer { s.timePitchError = failure }
                    return s.timePitchError != failure
                }
                if changed, let failure { post(.timePitchError(failure)) }
            }
            while let e = unsentEnds.first, renderer.bufferEnds.push(e) { unsentEnds.removeFirst() }
            nextDue = returnPlayedBuffers()
            handleDeviceEvents(&ended)
            // The buffer's contents are copied while it is certainly still pending: once a
            // concurrent stop or reset has handed it back, the app may refill it at once.
            let claimed = control.withLock { s -> (Pending, [UInt8], [AudioStreamPacketDescription])? in
                guard let p = s.pending.first else { return nil }
                let b = p.buffer
                return (p, Array(UnsafeRawBufferPointer(rebasing: b.audioData[0..<b.audioDataByteSize])), b.packetDescriptions)
            }
            guard case let (next, contents, descriptions)? = claimed else {
                let (flush, stopAfter) = control.withLock { ($0.flushRequested, $0.stopAfterQueued) }
                if flush || stopAfter, let c = converter {
                    try? c.endOfInput()
                    drain(c, scratch, generation: generation, trimEnd: 0)
                    _ = chain.finish { emit($0, generation: generation) }
                    c.reset()
                    control.withLock { $0.flushRequested = false }
                }
                // Everything enqueued before the end is in the ring: nothing more will come.
                flushAfterReset(final: stopAfter)
                if stopAfter && !ended {
                    renderer.markEnd()
                    ended = true
                    // A queue that never started still ends.
                    if !(control.withLock { $0.isRunning }) { finishStop() }
                }
                // Idle only once the end-of-stream work is done (an offline render that sees
                // an idle feeder stops waiting for more audio).
                feederIdle.store(true, ordering: .releasing)
                continue
            }
            feederIdle.store(false, ordering: .releasing)
            ended = false
            if let c = converter {
                decode(next, contents: contents, descriptions: descriptions, with: c, scratch: scratch, generation: generation)
            } else {
                converter = makeConverterReporting()
            }
            // Hold the buffer until its audio has been played (or hand it back now, for
            // `.whenCopied`), unless a reset/stop already handed it back; a queue not running yet
            // keeps it until it starts. Buffers come back in the order they were enqueued.
            let end = renderer.written.load(ordering: .acquiring)
            let track = control.withLock { s -> Bool in
                guard s.generation == generation, let i = s.pending.firstIndex(where: { $0.buffer === next.buffer }) else { return false }
                s.pending.remove(at: i)
                s.held.append(Held(buffer: next.buffer, end: end, heardAt: bufferReturn == .whenCopied ? 0 : nil))
                return bufferReturn == .whenPlayed
            }
            if track && (!unsentEnds.isEmpty || !renderer.bufferEnds.push(end)) { unsentEnds.append(end) }
            nextDue = returnPlayedBuffers()
            flushAfterReset(final: false)
        }
    }

    func decode(_ item: Pending, contents: [UInt8], descriptions: [AudioStreamPacketDescription],
                        with converter: AudioConverter, scratch: AudioPCMBuffer, generation: Int) {
        var batch = AudioPacketBatch()
        batch.data = contents
        // Constant-size packets (linear PCM included) are the buffer's bytes: descriptions
        // passed with them are ignored, as Apple's queues do (stale ones must not drop audio).
        if descriptions.isEmpty || format.bytesPerPacket > 0 {
            let bpp = max(1, Int(format.bytesPerPacket))
            batch.packetCount = contents.count / bpp
        } else {
            batch.packetDescriptions = descriptions
            batch.packetCount = descriptions.count
        }
        let before = converter.decodedFrameCount
        do {
            try converter.decode(batch)
        } catch {
            control.withLock { $0.converterError = error }
            notify(.converterError)
            post(.converterError(error))
        }
        if let e = converter.lastDecodeError, control.withLock({ $0.converterError }) != e {
            control.withLock { $0.converterError = e }
            notify(.converterError)
            post(.converterError(e))
        }
        _ = before
        // Start-time alignment: insert silence so the buffer starts at its sample time.
        if let start = item.options.startSampleTime {
            let at = renderer.written.load(ordering: .relaxed) - control.withLock({ $0.playedAtStart })
            let gap = Int64(start) - at
            if gap > 0 { writeSilence(Int(gap), generation: generation) }
        }
        // Per-buffer trimming applies to the frames this buffer produced.
        var skip = item.options.trimFramesAtStart
        while skip > 0 {
            let n = converter.read(into: scratch, maxFrames: skip)
            if n == 0 { break }
            skip -= n
        }
        drain(converter, scratch, generation: generation, trimEnd: item.options.trimFramesAtEnd)
    }

    /// Moves decoded frames from the converter into the ring, keeping back `trimEnd` frames
    /// (dropped), waiting while the ring is full; stops early on a reset/stop.
    func drain(_ converter: AudioConverter, _ scratch: AudioPCMBuffer, generation: Int, trimEnd: Int) {
        while converter.bufferedFrameCount > trimEnd {
            let n = converter.read(into: scratch, maxFrames: converter.bufferedFrameCount - trimEnd)
            if n == 0 { break }
            let samples = scratch.floatChannel(0)!
            let ok = chain.push(UnsafeBufferPointer(rebasing: samples[0..<(n * deviceFormat.channels)])) { emit($0, generation: generation) }
            if !ok { return }
        }
        if trimEnd > 0 {
            var left = converter.bufferedFrameCount
            while left > 0 {
                let n = converter.read(into: scratch, maxFrames: left)
                if n == 0 { break }
                left -= n
            }
        }
    }

    /// Writes processed interleaved frames into the play ring, waiting while it is full; false
    /// when a reset/stop made them stale.
    func emit(_ frames: UnsafeBufferPointer<Float>, generation: Int) -> Bool {
        let n = frames.count / deviceFormat.channels
        var offset = 0
        let offline = control.withLock { $0.offline }
        while offset < n {
            if control.withLock({ $0.generation != generation || $0.disposed }) { return false }
            let wrote = renderer.write(UnsafeBufferPointer(rebasing: frames[(offset * deviceFormat.channels)..<(n * deviceFormat.channels)]))
            offset += wrote
            if offline && wrote > 0 { offlineData.signal() }
            if wrote == 0 {
                var ignored = false
                handleDeviceEvents(&ignored)
                if offline {
                    _ = offlineSpace.wait(timeout: .now() + .milliseconds(20))
                    continue
                }
                // The ring is full: wait until render has freed a quarter of it (it posts
                // `renderer.space` once that much is free; see RealTimeSignal), not just this
                // chunk's worth: a full ring holds seconds of audio, and waking for every few
                // milliseconds of room was most of a steady stream's CPU. Stop, reset and
                // dispose post it too. Buffers played meanwhile still come back on time, and the
                // device's events (a lost device stops rendering) are looked at every 250 ms.
                let due = returnPlayedBuffers()
                let want = max(min(n - offset, 4096), renderer.capacityFrames / 4)
                renderer.space.arm(at: want)
                if renderer.freeFrames >= want || control.withLock({ $0.generation != generation || $0.disposed }) {
                    renderer.space.disarm()
                    continue
                }
                renderer.space.wait(untilHostTime: min(due ?? .max, HostTime.now() + 250_000_000))
            }
        }
        return true
    }

    func writeSilence(_ frames: Int, generation: Int) {
        let zeros = [Float](repeating: 0, count: 1024 * deviceFormat.channels)
        var left = frames
        while left > 0 {
            if control.withLock({ $0.generation != generation || $0.disposed }) { return }
            let n = min(left, 1024)
            let ok = zeros.withUnsafeBufferPointer { z in
                chain.push(UnsafeBufferPointer(rebasing: z[0..<(n * deviceFormat.channels)])) { emit($0, generation: generation) }
            }
            if !ok { return }
            left -= n
        }
    }

    func handleDeviceEvents(_ ended: inout Bool) {
        guard let device = control.withLock({ $0.device }) else { return }
        for event in device.takeEvents() {
            switch event {
            case .drained:
                finishStop()
            case .started:
                break
            default:
                post(.device(event))
            }
        }
        let u = renderer.underruns.load(ordering: .relaxed)
        let report = control.withLock { s -> Bool in
            defer { s.lastUnderruns = u }
            return u > s.lastUnderruns
        }
        if report { post(.underrun(count: u)) }
    }

    func finishStop() {
        withTransport { d in finishStopLocked(&d) }
    }

    func finishStopLocked(_ d: inout Deferred) {
        guard control.withLock({ !$0.disposed && ($0.device != nil || $0.isRunning || $0.stopAfterQueued) }) else { return }
        let device = control.withLock { s -> (any AudioOutputDevice)? in
            defer { s.device = nil; s.stopAfterQueued = false; s.isPaused = false }
            return s.device
        }
        device?.stop(drain: false)
        device?.close()
        cancelFlushAfterReset()
        renderer.discardAll()
        renderer.startHostTime.store(0, ordering: .releasing)
        // Everything has been played (or the queue ended without running, stopped before any
        // start): the buffers come back, then the queue reports that it stopped.
        returnPendingBuffers(&d)
        setRunning(false, &d)
        d.add { [self] in post(.ended) }
    }
}
