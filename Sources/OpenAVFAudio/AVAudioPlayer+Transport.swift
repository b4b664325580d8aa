// AVAudioPlayer's transport: prepare, play (now or at a device time), pause, stop, seeking,
// loops scheduled ahead as file segments, the end, and the delegate's calls.
import Foundation
import OpenAudioToolbox
internal import OATUnits
#if canImport(Glibc)
import Glibc
#endif

extension AVAudioPlayer {
    /// The player's nodes, first to last.
    var chain: [AVAudioNode] { [node] + (timePitch.map { [$0] } ?? []) }

    /// Attaches the player's nodes to the shared engine (with a time-pitch unit after the
    /// player when ``enableRate`` is set). Caller holds `lock`.
    func attachIfNeeded() {
        guard !attached else { return }
        if storedEnableRate {
            let unit = timePitch ?? AVAudioUnitTimePitch()
            unit.rate = storedRate
            timePitch = unit
        } else {
            timePitch = nil
        }
        node.volume = storedVolume
        node.pan = storedPan
        meter.setGain(storedVolume)
        removeMeterTap()
        if storedMetering { installMeterTap() }
        output.attach(chain)
        attached = true
    }

    // MARK: Internals

    func start(atDeviceTime deviceTime: TimeInterval?) -> Bool {
        lock.lock(); defer { lock.unlock() }
        if playing { return true }
        observeInterruptions()
        attachIfNeeded()
        guard output.activate(self) else { return false }
        if paused && scheduled && deviceTime == nil {
            // A paused player goes on where it paused.
            paused = false
            playing = true
            node.play()
            return true
        }
        if scheduled {
            position = frameNow()
            generation += 1
            node.stop()
            scheduled = false
        }
        paused = false
        if position >= file.length { position = 0 }
        let when = deviceTime.map { AVAudioTime(sampleTime: AVAudioFramePosition(($0 * output.rate).rounded()), atRate: output.rate) }
        scheduleAndPlay(at: when)
        return true
    }

    /// Schedules from ``position``: the rest of this pass, then as many passes as
    /// ``numberOfLoops`` asks, a few ahead; then starts the node. Caller holds `lock`.
    func scheduleAndPlay(at when: AVAudioTime?) {
        // The node's stop drops what its unit buffered at the next render: wait for that, so
        // the new schedule's first frames are not dropped with it.
        if let unit = node.unit as? AUPlayerNode {
            let deadline = Date().addingTimeInterval(0.5)
            while unit.isFlushPending && output.engine.isRunning && Date() < deadline { usleep(1000) }
        }
        generation += 1
        let g = generation
        outstanding = 0
        loopsScheduled = 0
        let unit = node.unit as? AUPlayerNode
        scheduledUnit = unit
        playedBase = unit?.playedFrames ?? 0
        let length = file.length
        if length > position { schedulePass(from: position, loop: false, generation: g) }
        // Full passes ahead: enough to cover half a second, at least two.
        let ahead = duration > 0 ? min(64, max(2, Int((0.5 / duration).rounded(.up)))) : 2
        while length > 0, outstanding < ahead, loopsScheduled < loopsWanted { schedulePass(from: 0, loop: true, generation: g) }
        scheduled = true
        playing = true
        if outstanding == 0 {
            // Nothing to play (an empty file): finished at once.
            control.async { [weak self] in self?.finish(generation: g, successfully: true) }
        }
        node.play(at: when)
    }

    /// Passes after the first wanted in all (`Int.max` for ever).
    var loopsWanted: Int { storedLoops < 0 ? Int.max : storedLoops }

    /// Schedules one pass of the file from `frame` to its end (`loop`: a repetition, counted
    /// against ``numberOfLoops``). Caller holds `lock`.
    func schedulePass(from frame: AVAudioFramePosition, loop: Bool, generation g: Int) {
        if loop { loopsScheduled += 1 }
        outstanding += 1
        let count = AVAudioFrameCount(clamping: file.length - frame)
        node.scheduleSegment(file, startingFrame: frame, frameCount: count, at: nil, completionCallbackType: .dataPlayedBack) { [weak self] _ in
            // Called on the player's feeder thread (or the caller of stop): hand over.
            self?.control.async { [weak self] in self?.passPlayedBack(generation: g) }
        }
    }

    /// A pass was played back: schedule the next one the loop count asks for, or finish.
    func passPlayedBack(generation g: Int) {
        lock.lock()
        guard g == generation else { lock.unlock(); return }
        outstanding -= 1
        if let error = file.takeError() {
            lock.unlock()
            finish(generation: g, successfully: false, error: error)
            return
        }
        if file.length > 0, loopsScheduled < loopsWanted {
            schedulePass(from: 0, loop: true, generation: g)
            lock.unlock()
            return
        }
        let done = outstanding <= 0
        lock.unlock()
        if done { finish(generation: g, successfully: true) }
    }

    /// The end (or a decode error): the player stops, ``currentTime`` is 0, and the delegate
    /// hears of it on the main queue.
    func finish(generation g: Int, successfully: Bool, error: (any Error)? = nil) {
        lock.lock()
        guard g == generation else { lock.unlock(); return }
        generation += 1
        let wasActive = playing || paused
        playing = false
        paused = false
        scheduled = false
        position = 0
        node.stop()
        if attached {
            output.detach(chain)
            attached = false
        }
        lock.unlock()
        if wasActive { output.deactivate(self) }
        let reported = error
        DispatchQueue.main.async { [self] in
            MainActor.assumeIsolated {
                if let reported { delegate?.audioPlayerDecodeErrorDidOccur(self, error: reported) }
                delegate?.audioPlayerDidFinishPlaying(self, successfully: successfully)
            }
        }
    }

    /// The file frame the player has reached (caller holds `lock`): the schedule's start plus
    /// the frames its unit has played (at the engine's rate), wrapped at the end of the file
    /// for the passes after the first.
    func frameNow() -> AVAudioFramePosition {
        guard scheduled, let unit = scheduledUnit, unit === (node.unit as? AUPlayerNode), output.rate > 0 else { return position }
        let played = max(0, unit.playedFrames - playedBase)
        let fileFrames = AVAudioFramePosition((Double(played) * file.processingFormat.sampleRate / output.rate).rounded(.down))
        var frame = position + fileFrames
        let length = file.length
        if length > 0 && frame >= length { frame = (frame - length) % length }
        return frame
    }

    /// Pauses on the session's interruption (the sound server went away) and tells the
    /// delegate; tells it again when the interruption ends.
    func observeInterruptions() {
        guard interruptionObserver == nil else { return }
        interruptionObserver = NotificationCenter.default.addObserver(forName: AVAudioSession.interruptionNotification, object: nil,
                                                                      queue: nil) { [weak self] note in
            guard let self else { return }
            let type = (note.userInfo?[AVAudioSessionInterruptionTypeKey] as? UInt).flatMap(AVAudioSession.InterruptionType.init(rawValue:))
            let options = Int(note.userInfo?[AVAudioSessionInterruptionOptionKey] as? UInt ?? 0)
            if type == .began {
                guard self.isPlaying else { return }
                self.pause()
                DispatchQueue.main.async { [self] in MainActor.assumeIsolated { self.delegate?.audioPlayerBeginInterruption(self) } }
            } else if type == .ended {
                DispatchQueue.main.async { [self] in
                    MainActor.assumeIsolated { self.delegate?.audioPlayerEndInterruption(self, withOptions: options) }
                }
            }
        }
    }
}
