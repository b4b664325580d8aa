#if canImport(Glibc)
import Glibc
#endif
import OATConversion
import OATCore
import OATDevices
import Synchronization

// AudioInputQueue: the queue's own thread (takes captured audio from the ring, encodes it,
// fills and delivers the enqueued buffers).
extension AudioInputQueue {
    // MARK: The queue's thread

    /// Packets encoded but not yet delivered.
    struct Pending {
        var data: [UInt8] = []
        var descriptions: [AudioStreamPacketDescription] = []
        var frames: [Int] = []
        var first = 0
        var start = 0
        var count: Int { descriptions.count - first }
        mutating func compact() {
            guard first > 256 || (first > 0 && first == descriptions.count) else { return }
            data.removeFirst(start)
            let shift = Int64(start)
            descriptions.removeFirst(first)
            frames.removeFirst(first)
            for i in descriptions.indices { descriptions[i].startOffset -= shift }
            first = 0
            start = 0
        }
    }

    func runFeeder() {
        // The capture feeder drains the device ring: above ordinary work where allowed.
        ThreadPriority.raiseCurrentThread()
        let channels = deviceFormat.channels
        let chunkFrames = max(256, Int(deviceFormat.sampleRate / 50))
        var scratch = [Float](repeating: 0, count: chunkFrames * channels)
        var anchorHistory: [CaptureAnchor] = []
        var taken: Int64 = 0
        var pending = Pending()
        var constantBytes: [UInt8] = []
        var lastDropped: Int64 = 0
        let out = streamDescription
        let isConstant = out.bytesPerPacket > 0
        let floatFormat = AudioStreamBasicDescription.linearPCM(sampleRate: deviceFormat.sampleRate, channels: UInt32(channels),
                                                                bitsPerChannel: 32, isFloat: true)
        var converter: AudioConverter?
        var encoderInput: AudioPCMBuffer?
        var finishedByLimit = false
        var lostDevice = false

        func fail(_ error: AudioError) {
            control.withLock { s in s.encoderError = error; s.stopRequest = .discard }
            post(.encoderError(error))
        }

        func hostTime(atInputFrame frame: Int64) -> UInt64 {
            guard let a = anchorHistory.last(where: { $0.position <= frame }) ?? anchorHistory.first else { return HostTime.now() }
            let delta = Double(frame - a.position) / deviceFormat.sampleRate * 1e9
            return delta >= 0 ? a.hostTime &+ UInt64(delta) : a.hostTime &- UInt64(-delta)
        }

        /// Delivers full buffers (all pending data when `flush`); returns false when a buffer
        /// is needed and none is enqueued.
        @discardableResult
        func deliver(flush: Bool) -> Bool {
            while true {
                let (queuedFirst, encoder, delivered) = control.withLock { s in (s.queued.first, s.encoder, s.deliveredFrames) }
                let priming = Int64(encoder?.primeInfo.leadingFrames ?? 0)
                var packets = 0, frames = 0, bytes = 0
                if isConstant ? constantBytes.isEmpty : pending.count == 0 { return true }
                guard let buffer = queuedFirst else { return false }
                if isConstant {
                    let available = constantBytes.count
                    let per = Int(out.bytesPerPacket)
                    let fit = (buffer.audioDataBytesCapacity / per) * per
                    let availableFrames = available / per * Int(max(1, out.framesPerPacket))
                    if available < fit && !flush && availableFrames < bufferFramesLimit.load(ordering: .relaxed) { return true }
                    bytes = min(fit, available)
                    guard bytes > 0 else { return true }
                    constantBytes.withUnsafeBytes { buffer.audioData.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: bytes) }
                    constantBytes.removeFirst(bytes)
                    packets = bytes / per
                    frames = packets * Int(max(1, out.framesPerPacket))
                    buffer.audioDataByteSize = bytes
                    buffer.packetDescriptions.removeAll(keepingCapacity: true)
                } else {
                    var size = 0
                    var i = pending.first
                    // A buffer allocated without descriptions takes as many packets as fit (the
                    // delivery carries their descriptions), as Apple's input queues do.
                    let descriptionLimit = buffer.packetDescriptionCapacity > 0 ? buffer.packetDescriptionCapacity : Int.max
                    while i < pending.descriptions.count, packets < descriptionLimit,
                          size + Int(pending.descriptions[i].dataByteSize) <= buffer.audioDataBytesCapacity {
                        size += Int(pending.descriptions[i].dataByteSize)
                        packets += 1
                        i += 1
                    }
                    if packets == 0 {
                        // A packet larger than the buffer can never be delivered: drop it, say so.
                        let d = pending.descriptions[pending.first]
                        pending.start = Int(d.startOffset) + Int(d.dataByteSize)
                        pending.first += 1
                        post(.encoderError(AudioError(.limitExceeded, component: component,
                                                      "a \(d.dataByteSize)-byte packet does not fit a \(buffer.audioDataBytesCapacity)-byte buffer (size buffers with maximumOutputPacketSize)")))
                        continue
                    }
                    if i == pending.descriptions.count && !flush && packets < descriptionLimit {
                        // The buffer has room for more: wait for the next packet unless it is
                        // full or holds the maximum duration.
                        var held = 0
                        for k in pending.first..<i { held += pending.frames[k] }
                        if size + maximumOutputPacketSize <= buffer.audioDataBytesCapacity && held < bufferFramesLimit.load(ordering: .relaxed) {
                            return true
                        }
                    }
                    let base = Int(pending.descriptions[pending.first].startOffset)
                    pending.data.withUnsafeBytes { buffer.audioData.baseAddress!.copyMemory(from: $0.baseAddress! + base, byteCount: size) }
                    buffer.packetDescriptions.removeAll(keepingCapacity: true)
                    for k in pending.first..<(pending.first + packets) {
                        var d = pending.descriptions[k]
                        d.startOffset -= Int64(base)
                        buffer.packetDescriptions.append(d)
                        frames += pending.frames[k]
                    }
                    buffer.audioDataByteSize = size
                    pending.start = base + size
                    pending.first += packets
                    pending.compact()
                    bytes = size
                }
                let inputFrame = max(0, delivered - (out.isPCM ? 0 : priming))
                let time = AudioTimeStamp(sampleTime: Double(delivered), hostTime: hostTime(atInputFrame: inputFrame), rateScalar: 1,
                                          flags: .sampleHostTimeValid)
                control.withLock { s in
                    if let idx = s.queued.firstIndex(where: { $0 === buffer }) { s.queued.remove(at: idx) }
                    s.deliveredFrames += Int64(frames)
                    s.deliveredPackets += Int64(packets)
                }
                _ = bytes
                inputCallback(self, AudioInputQueueDelivery(buffer: buffer, startTime: time, packetCount: packets, frameCount: frames))
            }
        }

        func take(_ batch: AudioPacketBatch) {
            guard batch.packetCount > 0 else { return }
            if isConstant {
                constantBytes.append(contentsOf: batch.data)
                return
            }
            let base = Int64(pending.data.count)
            pending.data.append(contentsOf: batch.data)
            for d in batch.packetDescriptions {
                var c = d
                c.startOffset += base
                pending.descriptions.append(c)
                pending.frames.append(out.framesPerPacket > 0 ? Int(out.framesPerPacket) : Int(d.variableFramesInPacket))
            }
        }

        func encode(_ frames: Int) throws(AudioError) {
            guard let encoder = control.withLock({ $0.encoder }) else { return }
            if converter == nil || encoderInput == nil {
                converter = try AudioConverter(from: floatFormat, to: encoder.inputFormat)
                encoderInput = try AudioPCMBuffer(format: encoder.inputFormat, frameCapacity: chunkFrames * 2)
            }
            guard let converter, let encoderInput else { return }
            let result = scratch.withUnsafeBytes { raw in
                Result { () throws(AudioError) in try converter.decode(packet: UnsafeRawBufferPointer(rebasing: raw[0..<(frames * channels * 4)])) }
            }
            try result.get()
            while converter.read(into: encoderInput) > 0 {
                take(try encoder.encode(encoderInput))
            }
        }

        func finishEncoder() throws(AudioError) {
            guard let encoder = control.withLock({ $0.encoder }) else { return }
            if let converter, let encoderInput {
                try converter.endOfInput()
                while converter.read(into: encoderInput) > 0 { take(try encoder.encode(encoderInput)) }
            }
            take(try encoder.finish())
            let info = encoder.packetTableInfo
            control.withLock { s in
                s.magicCookie = encoder.magicCookie
                s.packetTableInfo = out.isPCM || out.formatID == .ulaw || out.formatID == .alaw ? nil : info
                s.encoder = nil
            }
        }

        var drainDeadline: UInt64 = 0
        loop: while true {
            let (request, resetNow, device) = control.withLock { s -> (StopRequest?, Bool, (any AudioInputDevice)?) in
                let r = s.resetRequested
                s.resetRequested = false
                return (s.stopRequest, r, s.device)
            }
            if let device {
                for e in device.takeEvents() where e != .started {
                    post(.device(e))
                    if case .lost = e { lostDevice = true }
                }
            }
            let d = shared.dropped.load(ordering: .relaxed)
            if d != lastDropped { lastDropped = d; post(.droppedFrames(total: d)) }
            if resetNow {
                _ = ring.skip(ring.availableToRead)
                pending = Pending()
                constantBytes.removeAll()
                converter = nil
                encoderInput = nil
                do {
                    let e = EncoderBox(try Self.makeEncoder(format, encoderSettings))
                    control.withLock { s in s.encoderBox = e; s.deliveredFrames = 0; s.deliveredPackets = 0 }
                } catch { fail(error) }
            }
            if request == .discard { break }
            // Take captured frames (leave them in the ring while the packets wait for buffers).
            // Frames encoded but not delivered (no buffer enqueued): stop taking more past a second.
            let backlog = isConstant
                ? constantBytes.count / max(1, Int(out.bytesPerPacket)) * Int(max(1, out.framesPerPacket))
                : pending.frames[pending.first...].reduce(0, +)
            var tookAny = false
            if backlog < Int(deviceFormat.sampleRate) {
                while true {
                    let n = min(ring.availableToRead / channels, chunkFrames)
                    guard n > 0 else { break }
                    while let a = anchors.pop() { anchorHistory.append(a) }
                    if anchorHistory.count > 512 { anchorHistory.removeFirst(anchorHistory.count - 256) }
                    _ = scratch.withUnsafeMutableBufferPointer { ring.read(into: UnsafeMutableBufferPointer(rebasing: $0[0..<(n * channels)])) }
                    if meteringOn.load(ordering: .relaxed) { meter(scratch, frames: n, channels: channels) }
                    do { try encode(n) } catch { fail(error); break }
                    taken += Int64(n)
                    tookAny = true
                    if !isConstant && pending.count > 0 || isConstant && !constantBytes.isEmpty { break }
                }
            }
            deliver(flush: false)
            if taken >= shared.limit.load(ordering: .relaxed) && ring.availableToRead == 0 {
                finishedByLimit = true
                break
            }
            if lostDevice && ring.availableToRead == 0 { break }
            if request == .drain {
                if ring.availableToRead == 0 { break }
                if drainDeadline == 0 { drainDeadline = HostTime.now() + HostTime.ticks(seconds: 2) }
                if HostTime.now() > drainDeadline { break }
            }
            // An immediate stop takes what was captured (the device has stopped) without
            // waiting for buffers: done once nothing more moves.
            if request == .immediate && (ring.availableToRead == 0 || !tookAny) { break }
            if !tookAny { usleep(request == .drain ? 1000 : 5000) }
        }
        let request = control.withLock { $0.stopRequest }
        if request != .discard {
            do { try finishEncoder() } catch { fail(error) }
            if request == .immediate {
                // Into the buffers enqueued (a callback that enqueues again gets more), no waiting.
                deliver(flush: true)
            } else {
                let deadline = HostTime.now() + HostTime.ticks(seconds: 2)
                while !deliver(flush: true) && HostTime.now() < deadline { usleep(2000) }
            }
            if finishedByLimit || lostDevice {
                // Stopped by itself: release the device from this thread, then tell the client.
                let device = control.withLock { s -> (any AudioInputDevice)? in
                    let d = s.device
                    s.device = nil
                    s.isRunning = false
                    s.isPaused = false
                    s.feeder?.join() // detaches: this is the feeder thread
                    s.feeder = nil
                    return d
                }
                device?.stop()
                device?.close()
                notify(.isRunning)
                post(.finished)
            }
        } else {
            control.withLock { s in s.encoder = nil }
        }
    }

    func meter(_ samples: [Float], frames: Int, channels: Int) {
        var out: [AudioQueueLevelMeterState] = []
        out.reserveCapacity(channels)
        for c in 0..<channels {
            var sum: Float = 0, peak: Float = 0
            var i = c
            for _ in 0..<frames {
                let x = samples[i]
                sum += x * x
                peak = max(peak, abs(x))
                i += channels
            }
            out.append(AudioQueueLevelMeterState(averagePower: (sum / Float(max(1, frames))).squareRoot(), peakPower: peak))
        }
        levels.withLock { $0 = out }
    }
}
