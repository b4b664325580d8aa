#if canImport(Glibc)
import Glibc
#endif
import OATConversion
import OATCore
import OATDevices
import OATProcessing
import Dispatch
import Synchronization

// AudioOutputQueue: offline rendering (Apple's AudioQueueSetOfflineRenderFormat / AudioQueueOfflineRender).
extension AudioOutputQueue {
    // MARK: Offline rendering

    /// Switches the queue to offline rendering (Apple's `AudioQueueSetOfflineRenderFormat`):
    /// no device; ``renderOffline(into:frames:timeStamp:)`` pulls the audio as fast as the
    /// queue can decode it. Set it while the queue is stopped; `false` returns to the device.
    public func setOfflineRendering(_ enabled: Bool) throws(AudioError) {
        try control.withLock { (s) throws(AudioError) in
            guard !s.isRunning, s.device == nil else {
                throw AudioError(.invalidState, component: component, "offline rendering can only be switched while the queue is stopped", osStatus: -66626)
            }
            s.offline = enabled
        }
    }

    /// True in offline mode.
    public var isOfflineRendering: Bool { control.withLock { $0.offline } }

    /// Renders the next `frames` frames into planar `buffers` (Apple's `AudioQueueOfflineRender`),
    /// waiting for the queue's thread to decode them; returns the frames of audio rendered
    /// (fewer only at the end of the stream; the rest of the buffers is silence). The queue must
    /// be started, in offline mode. `timeStamp` (host time valid) places this render on the host
    /// clock so that a ``start(at:)`` host time takes effect; by default the render's host time
    /// follows its sample time from the first render.
    public func renderOffline(into buffers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, frames: Int,
                              timeStamp: AudioTimeStamp? = nil) throws(AudioError) -> Int {
        let device = try control.withLock { (s) throws(AudioError) -> OfflineOutputDevice in
            guard s.offline, let d = s.device as? OfflineOutputDevice, s.isRunning else {
                throw AudioError(.invalidState, component: component, "offline render needs a started queue in offline mode", osStatus: -66626)
            }
            return d
        }
        guard buffers.count == deviceFormat.channels, frames >= 0, frames <= 65536 else {
            throw AudioError(.invalidArgument, component: component, "offline render takes \(deviceFormat.channels) buffers and 0...65536 frames", osStatus: -50)
        }
        var done = 0
        var idleSpins = 0
        var waits = 0
        while done < frames {
            // Wait until the ring holds the rest, the stream ended, or nothing more comes for
            // 50 ms. Decoded buffers come back only once rendered (and a program refills them
            // then, as Apple's callbacks run during the offline render): with nothing being
            // decoded and buffers held, render what the ring has at once.
            while renderer.queuedFrames < Int64(frames - done) && renderer.endFrame.load(ordering: .acquiring) == Int64.max {
                wake.signal()
                offlineSpace.signal()
                if offlineData.wait(timeout: .now() + .milliseconds(2)) == .timedOut {
                    let (noneEnqueued, holding) = control.withLock { ($0.pending.isEmpty, !$0.held.isEmpty) }
                    let feederDone = noneEnqueued && feederIdle.load(ordering: .acquiring)
                    if feederDone && holding { break }
                    idleSpins = feederDone ? idleSpins + 1 : 0
                    if idleSpins > 25 { break }
                }
            }
            let part = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: buffers.count)
            defer { part.deallocate() }
            for c in 0..<buffers.count { part[c] = buffers[c] + done }
            let got = device.render(part, frames: frames - done, timeStamp: timeStamp, offset: done)
            offlineSpace.signal()
            done += got
            if got > 0 {
                idleSpins = 0
                waits = 0
                continue
            }
            // Nothing rendered: the end was played, nothing came for 50 ms, or the buffers
            // render passed are on their way back to the program (wait for them, 5 s at most).
            if renderer.consumed.load(ordering: .acquiring) >= renderer.endFrame.load(ordering: .acquiring) || idleSpins > 25 { break }
            waits += 1
            if waits > 2500 { break }
            wake.signal()
            _ = offlineData.wait(timeout: .now() + .milliseconds(2))
        }
        for c in 0..<buffers.count { (buffers[c] + done).update(repeating: 0, count: frames - done) }
        return done
    }
}
