#if canImport(Glibc)
import Glibc
#endif
import OATTestSupport
import OpenAudioToolbox
import Testing

/// How one signal is split into two gapless-encoded files.
struct GaplessCase: Sendable, CustomTestStringConvertible {
    var codec: String
    var ext: String
    var arguments: [String]
    var testDescription: String { codec }
}

extension PlaybackTests {
    static let gaplessCases: [GaplessCase] = [
        GaplessCase(codec: "MP3 (LAME tag)", ext: "mp3", arguments: ["-c:a", "libmp3lame", "-b:a", "256k"]),
        // The edit list's duration is in the movie timescale; FFmpeg's default (1000) cannot say
        // 50000 frames at 44.1 kHz exactly (it rounds to 1134 ms = 50009 frames).
        GaplessCase(codec: "AAC (M4A edit list)", ext: "m4a", arguments: ["-c:a", "aac", "-b:a", "192k", "-movie_timescale", "44100"]),
    ]

    /// Done-when 4: two halves of one sweep, each encoded with its own priming/padding, played as
    /// a queue, join with no gap and no overlap: the recording is both decodes back to back in
    /// one piece, and against the original signal the join is in place to the frame.
    @Test(arguments: gaplessCases)
    func consecutiveGaplessFilesJoinWithoutGapOrOverlap(_ c: GaplessCase) throws {
        let scratch = try ScratchDirectory("gapless")
        defer { scratch.remove() }
        let rate = 44100, total = 88_200, split = 50_000
        let source = "\(scratch.path)/source.wav"
        try #require(makeFixture(source, rate: rate, channels: 2, seconds: Double(total) / Double(rate), codec: ["-c:a", "pcm_f32le"]))
        let first = "\(scratch.path)/first.\(c.ext)", second = "\(scratch.path)/second.\(c.ext)"
        try #require(runFFmpeg(["-i", source, "-af", "atrim=end_sample=\(split)"] + c.arguments + [first]))
        try #require(runFFmpeg(["-i", source, "-af", "atrim=start_sample=\(split),asetpts=PTS-STARTPTS"] + c.arguments + [second]))
        let original = try referenceDecode(source)
        let a = try referenceDecode(first), b = try referenceDecode(second)
        #expect(original.frames == total)
        #expect(a.frames == split && b.frames == total - split, "halves decode to \(a.frames) + \(b.frames) frames")
        let joined = a.samples + b.samples

        let daemon = try PulseTestDaemon(sampleRate: rate, channels: 2)
        defer { daemon.stop() }
        let run = try playAndRecord([first, second], daemon: daemon)
        let ended = run.ended
        #expect(ended)
        let items = run.events.events.compactMap { if case .itemStarted(let i, _) = $0 { i } else { nil } }
        #expect(items == [0, 1])
        let alignment = alignSegments(recording: run.samples, reference: joined, channels: 2)
        print("gapless \(c.codec): \(alignment)")
        #expect(alignment.segments.count == 1)
        #expect(alignment.unmatchedFrames == 0)
        let segment = try #require(alignment.segments.first)
        #expect(segment.referenceFrame == 0 && segment.frames == total)
        // Against the original: the codec's noise everywhere, and the second file's audio
        // starts exactly at frame `split` (the best lag at the join is 0).
        let start = segment.recordingFrame
        let whole = segmentSNR(run.samples, start, original.samples, 0, frames: total, channels: 2)
        let window = 2048
        let atJoin = segmentSNR(run.samples, start + split - window / 2, original.samples, split - window / 2, frames: window, channels: 2)
        var bestLag = 0, bestSNR = -Double.infinity
        for lag in -16...16 {
            let s = segmentSNR(run.samples, start + split, original.samples, split + lag, frames: window, channels: 2)
            if s > bestSNR { bestSNR = s; bestLag = lag }
        }
        let joinZeros = longestSilentRun(run.samples, channels: 2, from: start + split - window, to: start + split + window)
        print("gapless \(c.codec): recorded \(segment.frames) frames (\(a.frames) + \(b.frames)); vs original \(dB(whole)) dB overall, "
              + "\(dB(atJoin)) dB over \(window) frames around the join; best lag after the join \(bestLag) (\(dB(bestSNR)) dB); "
              + "zero run at join \(joinZeros)")
        #expect(bestLag == 0)
        #expect(whole > 20 && atJoin > 20)
        #expect(joinZeros == 0)
    }

    /// Done-when 5: the PulseAudio server is killed mid-play and restarted on the same socket;
    /// the player reports `.device(.lost)` then `.device(.restored)`, continues where the device
    /// stopped rendering, and ends normally.
    @Test func playbackSurvivesAServerRestart() throws {
        let scratch = try ScratchDirectory("restart")
        defer { scratch.remove() }
        let path = try Fixture.flac(44100, 2).with(seconds: 3.0).make(in: scratch.path)
        let reference = try referenceDecode(path)
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let player = try AudioFilePlayer(paths: [path], output: pulseOutput(daemon))
        defer { player.stop() }
        let events = PlayerEvents()
        player.eventHandler = events.handler
        try player.play()
        sleep(seconds: 0.6)
        daemon.kill()
        #expect(events.waitFor(5, isLost))
        sleep(seconds: 0.3)
        let restart = HostTime.now()
        try daemon.start()
        let recording = try daemon.recordMonitor(to: "\(scratch.path)/monitor.raw")
        let restored = events.waitFor(8) { $0 == .queue(.device(.restored)) }
        #expect(restored)
        let recovery = events.first { $0 == .queue(.device(.restored)) }.map { HostTime.seconds(ticks: $0.time - restart) }
        let ended = waitUntil(10) { player.currentState == .ended }
        #expect(ended)
        sleep(seconds: 0.3)
        let samples = recording.stop()
        let alignment = alignSegments(recording: samples, reference: reference.samples, channels: 2)
        let lost = events.first(where: isLost), back = events.first { $0 == .queue(.device(.restored)) }
        let end = events.first(where: isState(.ended))
        print("server restart: recovery \(recovery.map { "\(Int($0 * 1000)) ms" } ?? "never") after the daemon came back; "
              + "\(alignment); events \(events.events.compactMap(summary))")
        #expect(lost != nil && back != nil && end != nil)
        if let lost, let back, let end { #expect(lost.index < back.index && back.index < end.index) }
        // After the restart the monitor hears the rest of the file to its end: every frame once,
        // in order (pieces separated by silence would be underruns, reported below).
        #expect(alignment.unmatchedFrames == 0)
        let first = try #require(alignment.segments.first)
        let last = try #require(alignment.segments.last)
        #expect(first.referenceFrame > 0)
        #expect(last.referenceEnd == reference.frames)
        for (a, b) in zip(alignment.segments, alignment.segments.dropFirst()) {
            #expect(b.referenceFrame == a.referenceEnd, "frames lost or repeated after the restart: \(a) then \(b)")
        }
        let silence = zip(alignment.segments, alignment.segments.dropFirst()).map { $1.recordingFrame - $0.recordingEnd }
        print("server restart: resumed at frame \(first.referenceFrame); silent gaps after the restart \(silence) frames; "
              + "underruns \(player.underrunCount)")
        // A freshly restarted daemon on two busy cores occasionally starves the new stream once
        // (a PulseAudio underflow while the queue's ring is full: seen 2 times in ~10 runs, 37 ms);
        // that is reported as `.device(.underrun)`, and no frame is lost, so it is bounded here
        // rather than forbidden.
        #expect(silence.reduce(0, +) < 44100 / 10, "dropouts after the restart: \(silence) frames of silence")
    }
}

/// Done-when 2: the ALSA backend, through a `file` PCM (ALSA configuration given to the device,
/// no card needed), writes exactly the reference frames when AudioFilePlayer plays a file.
@Suite struct ALSAPlaybackTests {
    @Test(arguments: [Fixture.mp3(44100, 2), Fixture.flac(48000, 1)])
    func filePCMReceivesExactlyTheDecodedFrames(_ fixture: Fixture) throws {
        try #require(ChildProcess.which("ffmpeg") != nil, "ffmpeg is not installed")
        let scratch = try ScratchDirectory("alsaplay")
        defer { scratch.remove() }
        let path = try fixture.make(in: scratch.path)
        let reference = try referenceDecode(path)
        let raw = "\(scratch.path)/alsa.raw"
        let config = "pcm.oatplay { type file slave.pcm null file \"\(raw)\" format raw }\n"
        let player = try AudioFilePlayer(paths: [path]) { format throws(AudioError) in
            try ALSAOutputDevice(device: "oatplay", format: format, periodFrames: 1024, configText: config)
        }
        let events = PlayerEvents()
        player.eventHandler = events.handler
        try player.play()
        let ended = waitUntil(10) { player.currentState == .ended }
        player.stop()
        #expect(ended)
        let bytes = try #require(Corpus.read(raw))
        let samples: [Float] = bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let alignment = alignSegments(recording: samples, reference: reference.samples, channels: fixture.channels)
        let written = samples.count / fixture.channels
        print("alsa file PCM \(fixture.testDescription): wrote \(written) frames for \(reference.frames); \(alignment)")
        #expect(alignment.segments.count == 1)
        #expect(alignment.unmatchedFrames == 0)
        let segment = try #require(alignment.segments.first)
        #expect(segment.recordingFrame == 0 && segment.referenceFrame == 0 && segment.frames == reference.frames)
        #expect(written == reference.frames)
    }
}

/// A short name for the events a report lists (nil for property changes).
func summary(_ e: AudioFilePlayer.Event) -> String? {
    switch e {
    case .itemStarted(let i, _): "item \(i)"
    case .state(let s): s.rawValue
    case .itemFailed(let i, let error): "item \(i) failed: \(error)"
    case .queue(.device(let d)): "device \(d)"
    case .queue(.underrun(let n)): "underrun \(n)"
    case .queue(.ended): "queue ended"
    case .queue(.converterError(let error)): "converter error \(error)"
    case .queue(.timePitchError(let error)): "time-pitch error \(error)"
    case .queue(.propertyChanged): nil
    }
}
