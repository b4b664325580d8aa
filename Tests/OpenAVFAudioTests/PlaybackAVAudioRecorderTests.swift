// AVAudioRecorder at a real private PulseAudio daemon: pacat plays a known tone (1 kHz at 0.25)
// into the null sink `oat_test`, the recorder records its monitor (OAT_INPUT), and the file is
// read back with AVAudioFile and checked by analysis: frequency, level, frame count.
import OATTestSupport
import Foundation
import OpenAVFAudio
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Waits up to `seconds` for `condition`.
private func eventually(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// Marks the main queue, so a block can tell it runs there. (Under the test runner the main
/// thread has called `dispatchMain()`, which on Linux ends it: the main queue is then served by
/// a pool thread, and `Thread.isMainThread` is false on it.)
let mainQueueKey: DispatchSpecificKey<Int> = {
    let key = DispatchSpecificKey<Int>()
    DispatchQueue.main.setSpecific(key: key, value: 1)
    return key
}()

/// The delegate calls a test saw, with whether each came on the main queue.
final class RecorderDelegateLog: NSObject, AVAudioRecorderDelegate, @unchecked Sendable {
    private let calls = Locked<[(flag: Bool, onMain: Bool)]>([])
    private let errors = Locked<[String]>([])
    override init() {
        _ = mainQueueKey
        super.init()
    }
    func audioRecorderDidFinishRecording(_ recorder: AVAudioRecorder, successfully flag: Bool) {
        let main = DispatchQueue.getSpecific(key: mainQueueKey) == 1
        calls.withLock { $0.append((flag, main)) }
    }
    func audioRecorderEncodeErrorDidOccur(_ recorder: AVAudioRecorder, error: (any Error)?) {
        errors.withLock { $0.append("\(error.map { "\($0)" } ?? "nil")") }
    }
    var finishes: [(flag: Bool, onMain: Bool)] { calls.withLock { $0 } }
    var encodeErrors: [String] { errors.withLock { $0 } }
}

/// What a recorded file holds, read with AVAudioFile.
struct RecordedFile {
    var samples: [Float]   // channel 0
    var frames: Int
    var rate: Double
    var channels: Int

    init(_ url: URL) throws {
        let file = try AVAudioFile(forReading: url)
        rate = file.processingFormat.sampleRate
        channels = Int(file.processingFormat.channelCount)
        frames = Int(file.length)
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: file.processingFormat, frameCapacity: AVAudioFrameCount(max(1, file.length))))
        try file.read(into: buffer)
        samples = Array(UnsafeBufferPointer(start: buffer.floatChannelData![0], count: Int(buffer.frameLength)))
        frames = Int(buffer.frameLength)
    }

    /// The median 1 kHz amplitude over ten 100 ms windows after `skip` seconds.
    func level(skip: Double = 0.2) -> Double {
        let start = Int(skip * rate), window = Int(rate / 10)
        let n = min(10, max(0, (samples.count - start) / window))
        guard n > 0 else { return 0 }
        let levels = (0..<n).map { toneAmplitude(samples, freq: 1000, rate: rate, from: start + $0 * window, count: window) }.sorted()
        return levels[n / 2]
    }

    var frequency: Double {
        let start = min(samples.count, Int(0.2 * rate))
        return dominantFrequency(Array(samples[start..<min(samples.count, start + Int(rate / 2))]), sampleRate: rate)
    }
}

@Suite(.serialized, .requires(TestResource.pulseAudioMissing))
struct PlaybackAVAudioRecorderTests {
    static let amplitude: Float = 0.25

    /// A daemon whose sink `oat_test` plays 1 kHz at 0.25 (pacat, `seconds` long) while `body`
    /// runs; the recorder's input is the sink's monitor.
    func withTone(seconds: Double = 12, _ body: (PulseTestDaemon, ScratchDirectory) throws -> Void) throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        let dir = try ScratchDirectory("avrec")
        setenv("PULSE_SERVER", daemon.server, 1)
        setenv("OAT_INPUT", "pulse:oat_test.monitor", 1)
        defer {
            unsetenv("PULSE_SERVER"); unsetenv("OAT_INPUT")
            daemon.stop()
            dir.remove()
        }
        let frames = Int(seconds * 48000)
        var samples = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let v = Self.amplitude * Float(sin(2 * Double.pi * 1000 * Double(i) / 48000))
            samples[2 * i] = v
            samples[2 * i + 1] = v
        }
        let tonePath = "\(dir.path)/tone.raw"
        #expect(FileManager.default.createFile(atPath: tonePath, contents: samples.withUnsafeBytes { Data($0) }))
        let pacat = try #require(ChildProcess.which("pacat"), "pacat is not installed (pulseaudio-utils)")
        let player = try ChildProcess.spawn(pacat, ["--playback", "-d", "oat_test", "--raw", "--format=float32le", "--rate=48000", "--channels=2",
                                                    "--latency-msec=20", tonePath], environment: daemon.environment, outputPath: "\(dir.path)/pacat.log")
        defer { player.terminate(grace: 0.5) }
        usleep(500_000) // the tone is in the monitor before recording starts
        try body(daemon, dir)
    }

    /// Checks a recording of the tone: frequency within 5 Hz, level within 1 dB of 0.25.
    func expectTone(_ file: RecordedFile, _ what: String, levelTolerance: Double = 1) {
        let level = file.level()
        let db = 20 * log10(level / Double(Self.amplitude))
        print("\(what): \(file.frames) frames at \(file.rate) Hz, \(file.channels) ch, 1 kHz at \(level) (\(db) dB), dominant \(file.frequency) Hz")
        #expect(abs(file.frequency - 1000) < 5, "\(what): frequency \(file.frequency)")
        #expect(abs(db) < levelTolerance, "\(what): level \(db) dB re 0.25")
    }

    @Test("LPCM WAV and CAF: record(), stop() after about 1.5 s; the file holds the tone for about that long")
    func recordsPCMToWAVAndCAF() throws {
        try withTone { _, dir in
            let cases: [(ext: String, settings: [String: Any])] = [
                ("wav", [AVFormatIDKey: Int(kAudioFormatLinearPCM), AVSampleRateKey: 48000, AVNumberOfChannelsKey: 2, AVLinearPCMBitDepthKey: 16]),
                ("caf", [AVFormatIDKey: Int(kAudioFormatLinearPCM), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1,
                         AVLinearPCMBitDepthKey: 32, AVLinearPCMIsFloatKey: true]),
            ]
            for c in cases {
                let url = URL(fileURLWithPath: "\(dir.path)/pcm.\(c.ext)")
                let recorder = try AVAudioRecorder(url: url, settings: c.settings)
                #expect(recorder.prepareToRecord())
                #expect(FileManager.default.fileExists(atPath: url.path), "prepareToRecord creates the file")
                let started = Date()
                #expect(recorder.record())
                #expect(recorder.isRecording)
                usleep(1_500_000)
                let elapsed = Date().timeIntervalSince(started)
                let current = recorder.currentTime
                recorder.stop()
                #expect(!recorder.isRecording)
                #expect(recorder.currentTime == 0, "currentTime is 0 once stopped")
                let file = try RecordedFile(url)
                let rate = c.settings[AVSampleRateKey] as! Int
                #expect(file.rate == Double(rate))
                #expect(file.channels == c.settings[AVNumberOfChannelsKey] as! Int)
                // What was captured between record() and stop(): within 0.25 s of the wall clock.
                let seconds = Double(file.frames) / file.rate
                print("\(c.ext): \(seconds) s recorded in \(elapsed) s (currentTime before stop \(current))")
                #expect(abs(seconds - elapsed) < 0.25, "\(c.ext): \(seconds) s of audio for \(elapsed) s of recording")
                #expect(abs(current - elapsed) < 0.25, "\(c.ext): currentTime \(current) after \(elapsed) s")
                expectTone(file, "pcm.\(c.ext)")
            }
        }
    }

    @Test("record(forDuration:) stops by itself with the exact frame count and tells the delegate on the main queue (LPCM CAF, AAC .m4a)")
    func recordForDurationStopsAndCallsTheDelegate() throws {
        try withTone { _, dir in
            let cases: [(ext: String, settings: [String: Any], levelTolerance: Double)] = [
                ("caf", [AVFormatIDKey: Int(kAudioFormatLinearPCM), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1, AVLinearPCMBitDepthKey: 24], 1),
                ("m4a", [AVFormatIDKey: Int(kAudioFormatMPEG4AAC), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1,
                         AVEncoderAudioQualityKey: AVAudioQuality.high.rawValue], 1.5),
            ]
            for c in cases {
                let url = URL(fileURLWithPath: "\(dir.path)/timed.\(c.ext)")
                let recorder = try AVAudioRecorder(url: url, settings: c.settings)
                let log = RecorderDelegateLog()
                recorder.delegate = log
                #expect(recorder.record(forDuration: 1.0))
                #expect(eventually(6) { !log.finishes.isEmpty }, "\(c.ext): the delegate was not called")
                let finishes = log.finishes
                #expect(finishes.count == 1, "\(c.ext): \(finishes)")
                #expect(finishes.first?.flag == true)
                #expect(finishes.first?.onMain == true, "\(c.ext): the delegate ran off the main queue")
                #expect(!recorder.isRecording)
                #expect(log.encodeErrors.isEmpty, "\(log.encodeErrors)")
                let file = try RecordedFile(url)
                print("\(c.ext): record(forDuration: 1.0) -> \(file.frames) frames")
                #expect(file.frames == 44100, "\(c.ext): \(file.frames) frames, expected exactly 44100")
                expectTone(file, "timed.\(c.ext)", levelTolerance: c.levelTolerance)
            }
        }
    }

    @Test("pause() holds currentTime and the file; record() resumes appending: 2 s recorded over 2.8 s")
    func pauseAndResume() throws {
        try withTone { _, dir in
            let url = URL(fileURLWithPath: "\(dir.path)/paused.wav")
            let recorder = try AVAudioRecorder(url: url, settings: [AVFormatIDKey: Int(kAudioFormatLinearPCM), AVSampleRateKey: 48000, AVNumberOfChannelsKey: 1])
            #expect(recorder.record())
            usleep(1_000_000)
            recorder.pause()
            #expect(!recorder.isRecording)
            usleep(200_000) // what was captured before the pause is delivered
            let atPause = recorder.currentTime
            usleep(800_000)
            let afterWait = recorder.currentTime
            #expect(recorder.record())
            #expect(recorder.isRecording)
            usleep(1_000_000)
            let resumed = recorder.currentTime
            recorder.stop()
            let file = try RecordedFile(url)
            let seconds = Double(file.frames) / file.rate
            print("pause: currentTime \(atPause) at the pause, \(afterWait) 0.8 s later, \(resumed) after 1 s more; file \(seconds) s")
            #expect(abs(atPause - 1.0) < 0.25, "currentTime at the pause \(atPause)")
            #expect(abs(afterWait - atPause) < 0.01, "currentTime moved while paused: \(atPause) -> \(afterWait)")
            #expect(abs(resumed - atPause - 1.0) < 0.25, "currentTime after resuming: \(resumed)")
            #expect(abs(seconds - 2.0) < 0.3, "the file holds \(seconds) s; the pause is not recorded")
            expectTone(file, "paused.wav")
        }
    }

    @Test("Metering: updateMeters reads the 1 kHz tone at 0.25 as about -15 dB average (RMS) and -12 dB peak")
    func meteringOfTheTone() throws {
        try withTone { _, dir in
            let recorder = try AVAudioRecorder(url: URL(fileURLWithPath: "\(dir.path)/meter.caf"),
                                               settings: [AVFormatIDKey: Int(kAudioFormatLinearPCM), AVSampleRateKey: 48000, AVNumberOfChannelsKey: 2])
            recorder.isMeteringEnabled = true
            #expect(recorder.record())
            usleep(600_000)
            var averages: [Float] = [], peaks: [Float] = []
            for _ in 0..<5 {
                recorder.updateMeters()
                averages.append(recorder.averagePower(forChannel: 0))
                peaks.append(recorder.peakPower(forChannel: 1))
                usleep(100_000)
            }
            recorder.isMeteringEnabled = false
            recorder.updateMeters()
            let off = recorder.averagePower(forChannel: 0)
            recorder.stop()
            let rms = 20 * log10(0.25 / 2.0.squareRoot()), peak = 20 * log10(0.25)
            print("metering: average \(averages) (expected \(rms)), peak \(peaks) (expected \(peak)), off \(off)")
            for a in averages { #expect(abs(Double(a) - rms) < 1, "average \(a) dB, expected \(rms)") }
            for p in peaks { #expect(abs(Double(p) - peak) < 1, "peak \(p) dB, expected \(peak)") }
            #expect(off == -160, "metering off reads -160 dB")
        }
    }

    @Test("deleteRecording is refused while recording and removes the finished file")
    func deleteRecordingAfterStop() throws {
        try withTone { _, dir in
            let url = URL(fileURLWithPath: "\(dir.path)/delete.m4a")
            let recorder = try AVAudioRecorder(url: url, settings: [AVFormatIDKey: Int(kAudioFormatMPEG4AAC), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1])
            #expect(recorder.record())
            usleep(300_000)
            #expect(!recorder.deleteRecording(), "deleted while recording")
            #expect(FileManager.default.fileExists(atPath: url.path))
            recorder.stop()
            #expect(try RecordedFile(url).frames > 4410)
            #expect(recorder.deleteRecording())
            #expect(!FileManager.default.fileExists(atPath: url.path))
            // Recording again creates the file anew.
            #expect(recorder.record(forDuration: 0.3))
            #expect(eventually(5) { !recorder.isRecording })
            #expect(try RecordedFile(url).frames == 13230)
        }
    }

    @Test("record(atTime:forDuration:) waits for the time, then records exactly the duration and tells the delegate")
    func recordAtTimeForDuration() throws {
        try withTone { _, dir in
            let url = URL(fileURLWithPath: "\(dir.path)/scheduled.wav")
            let recorder = try AVAudioRecorder(url: url, settings: [AVFormatIDKey: Int(kAudioFormatLinearPCM), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1])
            let log = RecorderDelegateLog()
            recorder.delegate = log
            let start = recorder.deviceCurrentTime + 0.6
            #expect(recorder.record(atTime: start, forDuration: 0.5))
            #expect(recorder.isRecording, "a scheduled recording counts as recording")
            usleep(300_000)
            #expect(recorder.currentTime == 0, "nothing recorded before the time: \(recorder.currentTime)")
            var finishedAt = 0.0
            #expect(eventually(6) {
                if log.finishes.isEmpty { return false }
                finishedAt = recorder.deviceCurrentTime
                return true
            }, "the delegate was not called")
            #expect(log.finishes.first?.flag == true)
            let file = try RecordedFile(url)
            print("record(atTime: now + 0.6, forDuration: 0.5): finished \(finishedAt - start) s after the start time, \(file.frames) frames")
            #expect(file.frames == 22050, "\(file.frames) frames, expected exactly 22050")
            // Started at the time, not at the call: done no earlier than start + duration.
            #expect(finishedAt >= start + 0.5, "finished \(finishedAt - start) s after the start time")
            #expect(finishedAt < start + 1.5, "finished \(finishedAt - start) s after the start time")
            expectTone(file, "scheduled.wav")
        }
    }

    @Test("A recorder released while recording finishes its file")
    func releasedRecorderFinishesTheFile() throws {
        try withTone { _, dir in
            let url = URL(fileURLWithPath: "\(dir.path)/released.m4a")
            do {
                let recorder = try AVAudioRecorder(url: url, settings: [AVFormatIDKey: Int(kAudioFormatMPEG4AAC), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1])
                #expect(recorder.record())
                usleep(800_000)
            }
            let file = try RecordedFile(url)
            let seconds = Double(file.frames) / file.rate
            #expect(seconds > 0.6 && seconds < 1.1, "\(seconds) s in the file")
            expectTone(file, "released.m4a", levelTolerance: 1.5)
        }
    }

    @Test("The sound server going away mid-recording ends the recording: the file is finished, the delegate hears successfully false")
    func serverLossFinishesTheFile() throws {
        try withTone { daemon, dir in
            let url = URL(fileURLWithPath: "\(dir.path)/lost.caf")
            let recorder = try AVAudioRecorder(url: url, settings: [AVFormatIDKey: Int(kAudioFormatAppleLossless), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1])
            let log = RecorderDelegateLog()
            recorder.delegate = log
            #expect(recorder.record())
            usleep(1_200_000)
            daemon.kill()
            #expect(eventually(10) { !log.finishes.isEmpty }, "the delegate was not called after the server went away")
            #expect(log.finishes.first?.flag == false, "\(log.finishes)")
            #expect(!recorder.isRecording)
            let file = try RecordedFile(url)
            let seconds = Double(file.frames) / file.rate
            print("server lost after 1.2 s: \(seconds) s in the file")
            #expect(seconds > 0.9 && seconds < 1.6, "\(seconds) s in the file")
            expectTone(file, "lost.caf")
        }
    }

    @Test("A recorder killed with SIGKILL mid-recording leaves a readable WAV, M4A and ALAC CAF holding the tone up to about the kill")
    func killedRecorderLeavesReadableFiles() throws {
        let program = try #require(portingRecorder(), "porting-avaudiorecorder is not built (swift build)")
        try withTone(seconds: 15) { daemon, dir in
            var children: [(path: String, process: ChildProcess, log: String)] = []
            for (ext, codec) in [("wav", "pcm"), ("m4a", "aac"), ("caf", "alac")] {
                let path = "\(dir.path)/killed.\(ext)", log = "\(dir.path)/killed-\(ext).log"
                let env = daemon.environment.merging(["OAT_INPUT": "pulse:oat_test.monitor"]) { $1 }
                children.append((path, try ChildProcess.spawn(program, [path, "0", codec], environment: env, outputPath: log), log))
            }
            defer { for c in children { c.process.killNow() } }
            for c in children {
                #expect(eventually(10) { (Corpus.read(c.log).map { String(decoding: $0, as: UTF8.self) } ?? "").contains("recording to") },
                        "\(c.path): the recorder did not start: \(Corpus.read(c.log).map { String(decoding: $0, as: UTF8.self) } ?? "")")
            }
            usleep(2_500_000)
            for c in children { c.process.killNow() }
            for c in children {
                let output = Corpus.read(c.log).map { String(decoding: $0, as: UTF8.self) } ?? ""
                #expect(output.contains("dB"), "\(c.path): no meter lines: \(output)")
                let file = try RecordedFile(URL(fileURLWithPath: c.path))
                let seconds = Double(file.frames) / file.rate
                print("killed \(c.path): \(seconds) s readable")
                // 2.5 s recorded; at most the last half second (plus a buffer) may be missing.
                #expect(seconds > 1.7 && seconds < 3.2, "\(c.path): \(seconds) s readable after a kill at 2.5 s")
                expectTone(file, "killed \(c.path)", levelTolerance: 1.5)
            }
        }
    }

    /// The porting program (PortingSuite/AVAudioRecorder), built beside the test bundle.
    func portingRecorder() -> String? {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
        for d in [exe, Corpus.packageRoot + "/.build/debug"] where FileManager.default.isExecutableFile(atPath: d + "/porting-avaudiorecorder") {
            return d + "/porting-avaudiorecorder"
        }
        return nil
    }
}
