import OATCore
import OATDevices
import Synchronization

/// The render side of an output queue: a preallocated ring of interleaved Float32 frames filled
/// by the queue's feeder thread and read by the device's render thread, plus lock-free
/// parameters (gain ramp, pan), a start time, an end-of-stream mark and level metering.
///
/// Thread safety: ``render(_:_:_:)`` runs on the device thread and only touches atomics and
/// preallocated memory; every other method is for the feeder/control side.
final class QueueRenderer: @unchecked Sendable {
    let channels: Int
    let sampleRate: Double
    let ring: SPSCRingBuffer<Float>
    /// Frames written into the ring (feeder).
    let written = Atomic<Int64>(0)
    /// Frames taken from the ring, played or discarded (render).
    let consumed = Atomic<Int64>(0)
    /// Frames of output produced by render calls, silence included (render).
    let rendered = Atomic<Int64>(0)
    /// Frames before this index are stale (after a reset or stop) and are skipped.
    let discardUntil = Atomic<Int64>(0)
    /// The frame index at which the stream ends (Int64.max: not yet known).
    let endFrame = Atomic<Int64>(Int64.max)
    /// Host time before which render outputs silence (0: play at once).
    let startHostTime = Atomic<UInt64>(0)
    /// Underruns: render calls that found less audio than asked for, mid-stream.
    let underruns = Atomic<Int>(0)
    let targetGainBits = Atomic<UInt32>(Float(1).bitPattern)
    let rampFrames = Atomic<Int>(0)
    let panBits = Atomic<UInt32>(Float(0).bitPattern)
    let meteringEnabled = Atomic<Bool>(false)
    /// False for devices that are not paced: a short render returns fewer frames instead of
    /// padding with silence, and is not an underrun.
    let padsShortRenders = Atomic<Bool>(true)
    /// After a reset, until the device is flushed: render plays silence and takes nothing from
    /// the ring, so that the new audio waits there instead of queueing behind the old audio
    /// the device still holds (the flush would drop it).
    let holding = Atomic<Bool>(false)
    /// Level snapshots: per render call, peak then mean square per channel.
    let levels: SPSCRingBuffer<Float>
    /// Feeder to render: the ring frame index at which each enqueued buffer's audio ends, in
    /// order (queues that return buffers when they have been played).
    let bufferEnds = SPSCQueue<Int64>(minimumCapacity: 1024)
    /// Render to feeder: each of those ends once render has taken it from the ring, with the
    /// host time at which the device plays its last frame (0: at once, or a stale frame).
    let heardEnds = SPSCQueue<HeardEnd>(minimumCapacity: 1024)
    /// Render to feeder: the ring has room again (the feeder arms the free frames it waits for;
    /// render posts once they are free). See ``RealTimeSignal`` for why posting is real-time safe.
    let space = RealTimeSignal()
    /// A buffer end render has passed and when the device plays it.
    struct HeardEnd {
        /// The ring frame index (as in ``bufferEnds``).
        var end: Int64
        /// Host time (ns) at which the frame before `end` leaves the device; 0 for at once.
        var hostTime: UInt64
    }
    /// Render-thread-only: the end popped from ``bufferEnds`` and not yet passed (-1: none).
    private var nextEnd: Int64 = -1
    // Render-thread-only state (never touched elsewhere after start).
    private var gain: Float = 1
    private var gainStep: Float = 0
    private var gainStepsLeft = 0
    private var lastTarget: Float = 1
    private let levelScratch: UnsafeMutableBufferPointer<Float>
    private let frameScratch: UnsafeMutableBufferPointer<Float>
    private let maxFrames: Int

    init(channels: Int, sampleRate: Double, ringSeconds: Double = 2, maxFramesPerRender: Int = 8192) {
        self.channels = channels
        self.sampleRate = sampleRate
        ring = SPSCRingBuffer(minimumCapacity: Int(sampleRate * ringSeconds) * channels, zero: 0)
        levels = SPSCRingBuffer(minimumCapacity: channels * 2 * 16, zero: 0)
        levelScratch = .allocate(capacity: channels * 2)
        levelScratch.initialize(repeating: 0)
        maxFrames = maxFramesPerRender
        frameScratch = .allocate(capacity: maxFramesPerRender * channels)
        frameScratch.initialize(repeating: 0)
    }

    deinit {
        levelScratch.deallocate()
        frameScratch.deallocate()
    }

    /// Frames the feeder may still write.
    var freeFrames: Int { ring.availableToWrite / channels }

    /// Frames the ring holds when full.
    var capacityFrames: Int { ring.capacity / channels }

    /// Frames written but not yet consumed.
    var queuedFrames: Int64 { written.load(ordering: .acquiring) - consumed.load(ordering: .acquiring) }

    /// Frames written since the last reset or stop and not yet consumed (the stale frames
    /// render has not skipped yet left out).
    var freshFrames: Int64 {
        let from = max(consumed.load(ordering: .acquiring), discardUntil.load(ordering: .acquiring))
        return max(0, written.load(ordering: .acquiring) - from)
    }

    /// Feeder: appends interleaved frames; returns frames written (may be fewer when full).
    func write(_ frames: UnsafeBufferPointer<Float>) -> Int {
        let whole = (min(frames.count, ring.availableToWrite) / channels) * channels
        guard whole > 0 else { return 0 }
        let n = ring.write(UnsafeBufferPointer(rebasing: frames[0..<whole]))
        written.add(Int64(n / channels), ordering: .releasing)
        return n / channels
    }

    /// Control: everything written so far is stale.
    func discardAll() {
        discardUntil.store(written.load(ordering: .acquiring), ordering: .releasing)
        endFrame.store(Int64.max, ordering: .releasing)
    }

    /// Control: the stream ends after what has been written.
    func markEnd() { endFrame.store(written.load(ordering: .acquiring), ordering: .releasing) }

    /// The render callback body.
    /// Thread safety: device thread only; no allocation, no locks.
    func render(_ buffers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, _ frameCount: Int, _ time: AudioTimeStamp) -> AudioRenderResult {
        // Every frame asked for is served, whatever the rate: the scratch is a staging area
        // copied through in pieces, not a cap (capped at 8192 frames, a 96 kHz PulseAudio
        // stream asking for 9600 got 8192 and the device padded the rest with silence).
        let count = frameCount
        var out = 0
        // Drop stale frames first.
        let stale = discardUntil.load(ordering: .acquiring) - consumed.load(ordering: .relaxed)
        if stale > 0 {
            let dropped = ring.skip(Int(stale) * channels) / channels
            consumed.add(Int64(dropped), ordering: .releasing)
        }
        let consumedBefore = consumed.load(ordering: .relaxed)
        // Ends already passed (stale, or written after render took their frames): heard from now.
        passEnds(upTo: consumedBefore, from: consumedBefore, at: 0, time)
        // Silence before the start time.
        let startAt = startHostTime.load(ordering: .acquiring)
        if startAt > 0 && time.flags.contains(.hostTimeValid) && time.hostTime < startAt {
            let wait = Double(startAt - time.hostTime) / 1e9 * sampleRate
            out = min(count, Int(wait.rounded()))
            for c in 0..<buffers.count { buffers[c].update(repeating: 0, count: out) }
        }
        if holding.load(ordering: .acquiring) {
            if padsShortRenders.load(ordering: .relaxed) {
                for c in 0..<buffers.count { (buffers[c] + out).update(repeating: 0, count: count - out) }
                out = count
            }
            rendered.add(Int64(out), ordering: .releasing)
            space.postIfReached(freeFrames)
            return AudioRenderResult(frames: out, isEndOfStream: false)
        }
        let end = endFrame.load(ordering: .acquiring)
        let consumedNow = consumed.load(ordering: .relaxed)
        let available = min(Int64(ring.availableToRead / channels), end - consumedNow)
        let n = Int(min(Int64(count - out), max(0, available)))
        var left = n
        while left > 0 {
            let part = min(left, maxFrames)
            let got = ring.read(into: UnsafeMutableBufferPointer(rebasing: frameScratch[0..<(part * channels)])) / channels
            if got == 0 { break }
            consumed.add(Int64(got), ordering: .releasing)
            deinterleave(into: buffers, at: out, frames: got)
            passEnds(upTo: consumedNow + Int64(got), from: consumedNow, at: out, time)
            out += got
            left -= got
        }
        let isEnd = consumedNow + Int64(n) >= end
        if out < count && !isEnd && padsShortRenders.load(ordering: .relaxed) {
            if startAt == 0 || time.hostTime >= startAt { underruns.add(1, ordering: .relaxed) }
            for c in 0..<buffers.count { (buffers[c] + out).update(repeating: 0, count: count - out) }
            out = count
        }
        rendered.add(Int64(out), ordering: .releasing)
        space.postIfReached(freeFrames)
        return AudioRenderResult(frames: out, isEndOfStream: isEnd)
    }

    /// Render thread: reports the buffer ends up to ring frame `last` (frames from `first`
    /// went to the output from frame `offset` of this call) with the host time at which the device
    /// plays them: the call's time stamp plus their offset, on a paced device; at once otherwise.
    @inline(__always)
    private func passEnds(upTo last: Int64, from first: Int64, at offset: Int, _ time: AudioTimeStamp) {
        while true {
            if nextEnd < 0 {
                guard let e = bufferEnds.pop() else { return }
                nextEnd = e
            }
            guard nextEnd <= last else { return }
            var at: UInt64 = 0
            if padsShortRenders.load(ordering: .relaxed) && time.flags.contains(.hostTimeValid) && time.hostTime > 0 {
                let frames = offset + Int(max(0, nextEnd - first))
                at = time.hostTime &+ UInt64(Double(frames) / sampleRate * 1e9)
            }
            guard heardEnds.push(HeardEnd(end: nextEnd, hostTime: at)) else { return }
            nextEnd = -1
        }
    }

    @inline(__always)
    private func deinterleave(into buffers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, at offset: Int, frames: Int) {
        // Gain ramp.
        let target = Float(bitPattern: targetGainBits.load(ordering: .relaxed))
        if target != lastTarget {
            lastTarget = target
            let ramp = rampFrames.load(ordering: .relaxed)
            if ramp > 0 {
                gainSteps(to: target, over: ramp)
            } else {
                gain = target
                gainStepsLeft = 0
            }
        }
        let pan = Float(bitPattern: panBits.load(ordering: .relaxed))
        let outChannels = buffers.count
        let metering = meteringEnabled.load(ordering: .relaxed)
        if metering { for i in 0..<(outChannels * 2) { levelScratch[i] = 0 } }
        for i in 0..<frames {
            if gainStepsLeft > 0 {
                gain += gainStep
                gainStepsLeft -= 1
                if gainStepsLeft == 0 { gain = lastTarget }
            }
            for c in 0..<outChannels {
                var v = c < channels ? frameScratch[i * channels + c] : 0
                if outChannels == 2 && pan != 0 {
                    v *= c == 0 ? min(1, 1 - pan) : min(1, 1 + pan)
                }
                v *= gain
                buffers[c][offset + i] = v
                if metering {
                    let a = abs(v)
                    if a > levelScratch[c * 2] { levelScratch[c * 2] = a }
                    levelScratch[c * 2 + 1] += v * v
                }
            }
        }
        if metering && frames > 0 {
            for c in 0..<outChannels { levelScratch[c * 2 + 1] /= Float(frames) }
            if levels.availableToWrite >= outChannels * 2 {
                levels.write(UnsafeBufferPointer(rebasing: levelScratch[0..<(outChannels * 2)]))
            }
        }
    }

    private func gainSteps(to target: Float, over frames: Int) {
        gainStepsLeft = max(1, frames)
        gainStep = (target - gain) / Float(gainStepsLeft)
    }

    /// Control: the most recent level snapshot per channel (peak, mean square), if any.
    func latestLevels() -> [(peak: Float, meanSquare: Float)]? {
        let per = channels * 2
        var latest: [Float]?
        var scratch = [Float](repeating: 0, count: per)
        while levels.availableToRead >= per {
            _ = scratch.withUnsafeMutableBufferPointer { levels.read(into: $0) }
            latest = scratch
        }
        guard let l = latest else { return nil }
        return (0..<channels).map { (l[$0 * 2], l[$0 * 2 + 1]) }
    }
}
