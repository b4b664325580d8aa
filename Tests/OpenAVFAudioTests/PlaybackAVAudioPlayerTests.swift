// AVAudioPlayer at a real private PulseAudio null sink, recorded from its monitor: a corpus file
// (and the same file as in-memory data) against ffmpeg's decode, loops exactly, seeking, rate
// 2 with the pitch kept, volume and pan of two players mixing, meters of a known tone, a start
// at a device time, and the delegate on the main queue.
import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Waits up to `seconds` for `condition`.
private func waitFor(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// One channel of interleaved samples.
private func channel(_ samples: [Float], _ c: Int, of channels: Int) -> [Float] {
    stride(from: c, to: samples.count, by: channels).map { samples[$0] }
}

/// RMS of `x` in dBFS.
private func rmsDB(_ x: ArraySlice<Float>) -> Double {
    guard !x.isEmpty else { return -.infinity }
    let sum = x.reduce(0.0) { $0 + Double($1) * Double($1) }
    return 10 * log10(sum / Double(x.count))
}

/// A chirp (unique everywhere, so an alignment cannot slip), never zero at a frame boundary.
private func chirp(_ i: Int, _ c: Int, rate: Double) -> Float {
    let t = Double(i) / rate
    return Float((0.4 + 0.05 * Double(c)) * sin(2 * .pi * (200 + 400 * t) * t + 0.7))
}

/// The frames of `samples` (interleaved) at or above `threshold` in any channel: first and last.
private func audibleSpan(_ samples: [Float], channels: Int, threshold: Float = 1e-4) -> (first: Int, last: Int)? {
    let frames = samples.count / channels
    func audible(_ f: Int) -> Bool { (0..<channels).contains { abs(samples[f * channels + $0]) >= threshold } }
    guard let first = (0..<frames).first(where: audible), let last = (0..<frames).reversed().first(where: audible) else { return nil }
    return (first, last)
}

/// Watches for the delegate's calls and the thread they come on.
@MainActor private final class FinishWatcher: NSObject, AVAudioPlayerDelegate {
    static let mainQueueKey = DispatchSpecificKey<Bool>()
    var results: [Bool] = []
    var onMainQueue = true
    func audioPlayerDidFinishPlaying(_ player: AVAudioPlayer, successfully flag: Bool) {
        onMainQueue = onMainQueue && DispatchQueue.getSpecific(key: Self.mainQueueKey) == true
        results.append(flag)
    }
}

@Suite(.serialized, .requires(TestResource.pulseAudioMissing))
struct PlaybackAVAudioPlayerTests {
    /// A private daemon whose default sink `oat_test` runs at `rate`; the players' engine plays there.
    func withSink(rate: Int = 48000, _ body: (PulseTestDaemon, ScratchDirectory) throws -> Void) throws {
        let scratch = try ScratchDirectory("avplayer-play")
        try withEngineAtPulseSink(rate: rate) { daemon in try body(daemon, scratch) }
    }

    /// Plays `player` to its end while recording the sink; the recording (stereo).
    func record(_ daemon: PulseTestDaemon, _ scratch: ScratchDirectory, timeout: Double, _ start: () -> Bool) throws -> [Float] {
        let recording = try daemon.recordMonitor(to: "\(scratch.path)/monitor-\(UInt32.random(in: 0...UInt32.max)).raw")
        #expect(start(), "play() returned false")
        usleep(UInt32(timeout * 1e6))
        // The monitor's recorder lags the sink on a loaded machine: give it a second to write
        // the end of what was played before it is stopped.
        usleep(1_000_000)
        return recording.stop()
    }

    @Test("A corpus MP3 and the same file's bytes play at the sink as ffmpeg decodes them (aligned SNR)")
    func corpusFileMatchesFFmpeg() throws {
        let path = try TestResource.corpusFile("ffmpeg-generated/mp3/l3_mpeg1_48k_320.mp3")
        let reference = try #require(decodeWithFFmpeg(path), "ffmpeg could not decode \(path)")
        try withSink { daemon, scratch in
            for fromData in [false, true] {
                let player = fromData
                    ? try AVAudioPlayer(data: Data(contentsOf: URL(fileURLWithPath: path)), fileTypeHint: "public.mp3")
                    : try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path))
                #expect(player.prepareToPlay())
                let samples = try record(daemon, scratch, timeout: 0) {
                    let ok = player.play()
                    _ = waitFor(player.duration + 5) { !player.isPlaying }
                    return ok
                }
                #expect(!player.isPlaying, "the player did not finish")
                #expect(player.currentTime == 0, "currentTime is \(player.currentTime) after the end")
                let refFrames = reference.count / 2
                let match = try #require(lossyAlign(recording: samples, reference: reference, channels: 2, segmentFrames: 4800, drift: 4),
                                         "the file is not in the recording")
                let complete = match.offset >= 0 && match.offset + refFrames <= samples.count / 2
                let whole = complete ? segmentSNR(samples, match.offset, reference, 0, frames: refFrames, channels: 2) : -.infinity
                print("AVAudioPlayer corpus (\(fromData ? "data" : "url")): SNR \(dB(whole)) dB, \(match)")
                #expect(complete, "the recording does not hold the whole file: \(match)")
                #expect(whole >= 60, "SNR \(dB(whole)) dB")
                #expect(match.offsetSpread == 0, "the file is not in one piece: \(match)")
            }
        }
    }

    @Test("numberOfLoops = 2 plays the sound exactly three times, back to back")
    func loopsPlayExactlyThreeTimes() throws {
        try withSink { daemon, scratch in
            let frames = 12000
            let path = "\(scratch.path)/chirp.wav"
            try writePlayerFixture(path, rate: 48000, channels: 2, frames: frames) { chirp($0, $1, rate: 48000) }
            var reference = [Float](repeating: 0, count: frames * 2)
            for i in 0..<frames { for c in 0..<2 { reference[i * 2 + c] = chirp(i, c, rate: 48000) } }
            let player = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path))
            player.numberOfLoops = 2
            let samples = try record(daemon, scratch, timeout: 0) {
                let ok = player.play()
                _ = waitFor(5) { !player.isPlaying }
                return ok
            }
            let span = try #require(audibleSpan(samples, channels: 2), "nothing was recorded")
            let heard = span.last - span.first + 1
            print("AVAudioPlayer loops: \(heard) frames heard for \(3 * frames)")
            #expect(heard == 3 * frames, "\(heard) frames heard, not \(3 * frames)")
            for pass in 0..<3 {
                let s = segmentSNR(samples, span.first + pass * frames, reference, 0, frames: frames, channels: 2)
                #expect(s >= 90, "pass \(pass): SNR \(dB(s)) dB")
            }
        }
    }

    @Test("currentTime seeks before play and while playing: the sink hears the sound from there")
    func seekingLandsWhereAsked() throws {
        try withSink { daemon, scratch in
            let rate = 48000.0
            let frames = 3 * 48000
            let path = "\(scratch.path)/chirp3.wav"
            try writePlayerFixture(path, rate: rate, channels: 2, frames: frames) { chirp($0, $1, rate: rate) }
            var reference = [Float](repeating: 0, count: frames * 2)
            for i in 0..<frames { for c in 0..<2 { reference[i * 2 + c] = chirp(i, c, rate: rate) } }
            let player = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path))
            player.currentTime = 1.0
            #expect(player.currentTime == 1.0)
            var during = 0.0
            let samples = try record(daemon, scratch, timeout: 0) {
                let ok = player.play()
                usleep(500_000)
                during = player.currentTime
                _ = waitFor(4) { !player.isPlaying }
                return ok
            }
            print("AVAudioPlayer seek: currentTime \(during) 0.5 s after playing from 1.0")
            #expect(during > 1.3 && during < 1.7, "currentTime \(during) 0.5 s after playing from 1.0")
            let span = try #require(audibleSpan(samples, channels: 2), "nothing was recorded")
            let tail = frames - 48000
            #expect(span.last - span.first + 1 == tail, "heard \(span.last - span.first + 1) frames, not the \(tail) from 1.0 s")
            let s = segmentSNR(samples, span.first, reference, 48000, frames: tail, channels: 2)
            #expect(s >= 90, "from 1.0 s: SNR \(dB(s)) dB")

            // While playing: from 0, at about 0.5 s jump to 2.0 s.
            let player2 = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path))
            let samples2 = try record(daemon, scratch, timeout: 0) {
                let ok = player2.play()
                usleep(500_000)
                player2.currentTime = 2.0
                _ = waitFor(4) { !player2.isPlaying }
                return ok
            }
            let span2 = try #require(audibleSpan(samples2, channels: 2), "nothing was recorded")
            // The last second is the file's last second, whole, ending the recording's audio.
            let last = segmentSNR(samples2, span2.last + 1 - 48000, reference, frames - 48000, frames: 48000, channels: 2)
            #expect(last >= 90, "after the seek to 2.0 s: SNR \(dB(last)) dB (audible \(span2.first)...\(span2.last) of \(samples2.count / 2) recorded frames)")
            let heard = span2.last - span2.first + 1
            #expect(heard > 60000 && heard < 80000, "heard \(heard) frames: about 0.5 s, then the last second")
        }
    }

    @Test("rate 2 with enableRate: half the time, the same pitch")
    func rateTwoHalvesTheTimeKeepsThePitch() throws {
        try withSink { daemon, scratch in
            let path = "\(scratch.path)/tone.wav"
            try writePlayerFixture(path, rate: 48000, channels: 2, frames: 96000) { i, _ in 0.5 * Float(sin(2 * .pi * 1000 * Double(i) / 48000)) }
            let player = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path))
            player.enableRate = true
            player.rate = 2
            let started = Date()
            var elapsed = 0.0
            let samples = try record(daemon, scratch, timeout: 0) {
                let ok = player.play()
                _ = waitFor(5) { !player.isPlaying }
                elapsed = Date().timeIntervalSince(started)
                return ok
            }
            let span = try #require(audibleSpan(samples, channels: 2, threshold: 0.01), "nothing was recorded")
            let seconds = Double(span.last - span.first + 1) / 48000
            let left = channel(samples, 0, of: 2)
            let middle = Array(left[(span.first + 4800)..<(span.last - 4800)])
            let frequency = dominantFrequency(middle, sampleRate: 48000)
            print("AVAudioPlayer rate 2: \(seconds) s heard (finished after \(elapsed) s), \(frequency) Hz")
            #expect(abs(seconds - 1.0) < 0.05, "\(seconds) s heard for a 2 s sound at rate 2")
            #expect(abs(frequency - 1000) < 10, "pitch \(frequency) Hz, not 1000")
            #expect(elapsed < 1.8, "finished after \(elapsed) s")
        }
    }

    @Test("Two players mix at the sink, each at its volume and pan")
    func twoPlayersMixWithVolumeAndPan() throws {
        try withSink { daemon, scratch in
            let a = "\(scratch.path)/a.wav", b = "\(scratch.path)/b.wav"
            try writePlayerFixture(a, rate: 48000, channels: 2, frames: 48000) { i, _ in 0.5 * Float(sin(2 * .pi * 440 * Double(i) / 48000)) }
            try writePlayerFixture(b, rate: 48000, channels: 2, frames: 48000) { i, _ in 0.5 * Float(sin(2 * .pi * 1000 * Double(i) / 48000)) }
            let left = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: a))
            let right = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: b))
            left.pan = -1
            right.pan = 1
            right.volume = 0.5
            let samples = try record(daemon, scratch, timeout: 0) {
                let ok = left.play() && right.play()
                _ = waitFor(4) { !left.isPlaying && !right.isPlaying }
                return ok
            }
            let span = try #require(audibleSpan(samples, channels: 2, threshold: 0.01), "nothing was recorded")
            let l = channel(samples, 0, of: 2), r = channel(samples, 1, of: 2)
            let mid = (span.first + span.last) / 2
            let window = (mid - 9600)..<(mid + 9600)
            let fl = dominantFrequency(Array(l[window]), sampleRate: 48000)
            let fr = dominantFrequency(Array(r[window]), sampleRate: 48000)
            let levelL = rmsDB(l[window]), levelR = rmsDB(r[window])
            print("AVAudioPlayer mix: left \(fl) Hz \(levelL) dB, right \(fr) Hz \(levelR) dB")
            #expect(abs(fl - 440) < 5, "left \(fl) Hz")
            #expect(abs(fr - 1000) < 5, "right \(fr) Hz")
            // 0.5 amplitude sine: -9.03 dBFS; at volume 0.5: -15.05.
            #expect(abs(levelL - -9.03) < 0.2, "left \(levelL) dB")
            #expect(abs(levelR - -15.05) < 0.2, "right \(levelR) dB")
        }
    }

    @Test("Meters of a 0.5 sine: peak -6.02 dB, average -9.03 dB; at volume 0.5, 6 dB less; -160 when stopped")
    func metersOfAKnownTone() throws {
        try withSink { _, scratch in
            let path = "\(scratch.path)/tone.wav"
            try writePlayerFixture(path, rate: 48000, channels: 2, frames: 96000) { i, _ in 0.5 * Float(sin(2 * .pi * 1000 * Double(i) / 48000)) }
            let player = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path))
            player.isMeteringEnabled = true
            #expect(player.play())
            usleep(500_000)
            player.updateMeters()
            let peak = player.peakPower(forChannel: 0), average = player.averagePower(forChannel: 1)
            player.volume = 0.5
            usleep(300_000)
            player.updateMeters()
            let quieter = player.averagePower(forChannel: 0)
            player.stop()
            player.updateMeters()
            let stopped = player.averagePower(forChannel: 0)
            print("AVAudioPlayer meters: peak \(peak) dB, average \(average) dB, at volume 0.5 \(quieter) dB, stopped \(stopped) dB")
            #expect(abs(peak - -6.02) < 0.1, "peak \(peak) dB")
            #expect(abs(average - -9.03) < 0.1, "average \(average) dB")
            #expect(abs(quieter - -15.05) < 0.2, "average at volume 0.5: \(quieter) dB")
            #expect(stopped == -160)
        }
    }

    @Test("Two players started with play(atTime:) at the same device time start on the same frame")
    func playAtTimeStartsInSync() throws {
        try withSink { daemon, scratch in
            let path = "\(scratch.path)/chirp.wav"
            try writePlayerFixture(path, rate: 48000, channels: 2, frames: 24000) { chirp($0, $1, rate: 48000) }
            let a = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path))
            let b = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path))
            a.pan = -1
            b.pan = 1
            var deviceTimes: (Double, Double) = (0, 0)
            let samples = try record(daemon, scratch, timeout: 0) {
                #expect(a.prepareToPlay() && b.prepareToPlay())
                let start = a.deviceCurrentTime + 0.3
                let ok = a.play(atTime: start)
                usleep(100_000)
                let ok2 = b.play(atTime: start)
                usleep(400_000)
                deviceTimes = (a.deviceCurrentTime, b.deviceCurrentTime)
                _ = waitFor(4) { !a.isPlaying && !b.isPlaying }
                return ok && ok2
            }
            let l = channel(samples, 0, of: 2), r = channel(samples, 1, of: 2)
            let fl = try #require(l.firstIndex { abs($0) >= 1e-4 }), fr = try #require(r.firstIndex { abs($0) >= 1e-4 })
            print("AVAudioPlayer play(atTime:): left starts at \(fl), right at \(fr); device times \(deviceTimes)")
            #expect(fl == fr, "the players started \(fr - fl) frames apart")
            #expect(deviceTimes.0 > 0.5 && deviceTimes.0 == deviceTimes.1 || abs(deviceTimes.0 - deviceTimes.1) < 0.05)
            #expect(a.deviceCurrentTime == 0, "no player plays: the device time is 0 again")
        }
    }

    @Test("pause() goes on where it paused, to the frame; stop() keeps currentTime and play() goes on from there")
    func pauseAndStopKeepThePosition() throws {
        try withSink { daemon, scratch in
            let frames = 72000
            let path = "\(scratch.path)/chirp15.wav"
            try writePlayerFixture(path, rate: 48000, channels: 2, frames: frames) { chirp($0, $1, rate: 48000) }
            var reference = [Float](repeating: 0, count: frames * 2)
            for i in 0..<frames { for c in 0..<2 { reference[i * 2 + c] = chirp(i, c, rate: 48000) } }
            let player = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path))
            var times: [Double] = []
            let samples = try record(daemon, scratch, timeout: 0) {
                let ok = player.play()
                usleep(400_000)
                player.pause()
                times.append(player.currentTime)
                usleep(300_000)
                times.append(player.currentTime)
                let ok2 = player.play()
                usleep(400_000)
                player.stop()
                times.append(player.currentTime)
                usleep(300_000)
                let ok3 = player.play()
                _ = waitFor(3) { !player.isPlaying }
                return ok && ok2 && ok3
            }
            // The pieces of audio between silences of 10 ms or more, each found in the file.
            var pieces: [(start: Int, frames: Int)] = []
            var run = 0, begin: Int?
            let total = samples.count / 2
            for f in 0...total {
                let silent = f == total || (abs(samples[f * 2]) < 1e-6 && abs(samples[f * 2 + 1]) < 1e-6)
                if silent { run += 1 } else { if begin == nil { begin = f }; run = 0 }
                if let b = begin, run >= 480 || f == total {
                    let end = f - run + 1
                    if end - b > 2400 {
                        let piece = Array(samples[(b * 2)..<(end * 2)])
                        let match = try #require(lossyAlign(recording: reference, reference: piece, channels: 2, segmentFrames: 2400, drift: 0))
                        pieces.append((match.offset, end - b))
                    }
                    begin = nil
                }
            }
            print("AVAudioPlayer pause/stop: pieces (file frame, frames) \(pieces), currentTime \(times)")
            try #require(pieces.count == 3, "\(pieces.count) pieces of audio, not 3: \(pieces)")
            #expect(pieces[0].start == 0)
            #expect(pieces[1].start == pieces[0].start + pieces[0].frames, "after the pause: from \(pieces[1].start), not \(pieces[0].frames)")
            let afterStop = pieces[2].start - (pieces[1].start + pieces[1].frames)
            #expect(afterStop >= 0 && afterStop <= 4800, "after the stop: \(afterStop) frames skipped")
            #expect(pieces[2].start + pieces[2].frames == frames, "the last piece ends at \(pieces[2].start + pieces[2].frames)")
            #expect(times[0] == times[1], "currentTime moved while paused: \(times)")
            #expect(abs(times[2] * 48000 - Double(pieces[2].start)) < 1, "currentTime after the stop \(times[2]) s")
        }
    }

    @Test("setVolume(_:fadeDuration:) fades the sink's level down over the duration")
    func fadeLowersTheLevelGradually() throws {
        try withSink { daemon, scratch in
            let path = "\(scratch.path)/tone2.wav"
            try writePlayerFixture(path, rate: 48000, channels: 2, frames: 96000) { i, _ in 0.5 * Float(sin(2 * .pi * 1000 * Double(i) / 48000)) }
            let player = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path))
            let samples = try record(daemon, scratch, timeout: 0) {
                let ok = player.play()
                usleep(300_000)
                player.setVolume(0, fadeDuration: 0.5)
                usleep(1_000_000)
                player.stop()
                return ok
            }
            #expect(player.volume == 0)
            let left = channel(samples, 0, of: 2)
            let first = try #require(left.firstIndex { abs($0) > 1e-3 })
            let levels = stride(from: first, to: left.count - 2400, by: 2400).map { rmsDB(left[$0..<($0 + 2400)]) }
            let full = levels.prefix(4).allSatisfy { abs($0 - -9.03) < 0.3 }
            let middle = levels.filter { $0 < -11 && $0 > -30 }.count
            let silentAfter = levels.suffix(4).allSatisfy { $0 < -80 }
            print("AVAudioPlayer fade: levels every 50 ms \(levels.map { Int(max(-200, $0).rounded()) })")
            #expect(full, "the level before the fade: \(levels.prefix(4))")
            #expect(middle >= 4, "\(middle) windows between -11 and -30 dB: not a gradual fade")
            #expect(silentAfter, "not silent after the fade: \(levels.suffix(4))")
        }
    }

    @Test("numberOfLoops = -1 loops until stop()")
    func endlessLoopUntilStop() throws {
        try withSink { daemon, scratch in
            let path = "\(scratch.path)/short.wav"
            try writePlayerFixture(path, rate: 48000, channels: 2, frames: 4800) { chirp($0, $1, rate: 48000) }
            let player = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path))
            player.numberOfLoops = -1
            let samples = try record(daemon, scratch, timeout: 0) {
                let ok = player.play()
                usleep(1_000_000)
                #expect(player.isPlaying)
                player.stop()
                return ok
            }
            let span = try #require(audibleSpan(samples, channels: 2), "nothing was recorded")
            let passes = Double(span.last - span.first + 1) / 4800
            print("AVAudioPlayer endless loop: \(passes) passes of 0.1 s in about 1 s")
            #expect(passes > 8 && passes < 12, "\(passes) passes")
            #expect(!player.isPlaying)
        }
    }

    @Test("The delegate hears audioPlayerDidFinishPlaying(successfully: true) on the main queue")
    @MainActor func delegateFinishesOnTheMainQueue() async throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        let scratch = try ScratchDirectory("avplayer-delegate")
        setenv("PULSE_SERVER", daemon.server, 1)
        setenv("OAT_OUTPUT", "pulse:oat_test", 1)
        defer { unsetenv("PULSE_SERVER"); unsetenv("OAT_OUTPUT"); daemon.stop() }
        let path = "\(scratch.path)/short.wav"
        try writePlayerFixture(path, rate: 48000, channels: 2, frames: 9600) { i, _ in 0.3 * Float(sin(Double(i) * 0.1)) }
        let player = try AVAudioPlayer(contentsOf: URL(fileURLWithPath: path))
        DispatchQueue.main.setSpecific(key: FinishWatcher.mainQueueKey, value: true)
        let watcher = FinishWatcher()
        player.delegate = watcher
        #expect(player.play())
        for _ in 0..<300 where watcher.results.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
        #expect(watcher.results == [true], "delegate calls: \(watcher.results)")
        #expect(watcher.onMainQueue, "the delegate was not called on the main queue")
        #expect(!player.isPlaying)
        // A stop is no finish: no call.
        #expect(player.play())
        try await Task.sleep(for: .milliseconds(50))
        player.stop()
        try await Task.sleep(for: .milliseconds(400))
        #expect(watcher.results == [true], "stop() must not call the delegate: \(watcher.results)")
    }
}
