#if canImport(Glibc)
import Glibc
#endif
import OATTestSupport
import OpenAudioToolbox
import Testing

/// The player's buffer size: seek, pause and stop may land up to one buffer away.
let playerBufferFrames = 4096

extension PlaybackTests {
    /// Done-when 3: after `seek(to: 1.0)` the audio continues at frame 44100 (+-1 buffer); the
    /// audio before it is the start of the file.
    @Test func seekLandsAtTheRequestedFrame() throws {
        let scratch = try ScratchDirectory("seek")
        defer { scratch.remove() }
        let path = try Fixture.flac(44100, 2).with(seconds: 2.0).make(in: scratch.path)
        let reference = try referenceDecode(path)
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let run = try playAndRecord([path], daemon: daemon) { player, _ in
            sleep(seconds: 0.35)
            player.seek(to: 1.0)
        }
        let ended = run.ended
        #expect(ended)
        let alignment = alignSegments(recording: run.samples, reference: reference.samples, channels: 2)
        print("seek to 1.0 s: \(alignment)")
        #expect(alignment.segments.count == 2)
        #expect(alignment.unmatchedFrames == 0)
        let before = try #require(alignment.segments.first)
        let after = try #require(alignment.segments.last)
        #expect(before.referenceFrame == 0)
        #expect(abs(after.referenceFrame - 44100) <= playerBufferFrames, "resumed at \(after.referenceFrame)")
        #expect(after.referenceEnd == reference.frames)
        print("seek: landed at frame \(after.referenceFrame) (asked 44100, error \(after.referenceFrame - 44100) frames); "
              + "played \(before.frames) frames before it")
    }

    /// Done-when 3: a 0.3 s pause leaves a silent gap and playback resumes at the frame where it
    /// stopped: no frame lost or repeated.
    @Test func pauseResumesAtTheFrameWhereItPaused() throws {
        let scratch = try ScratchDirectory("pause")
        defer { scratch.remove() }
        let path = try Fixture.flac(48000, 2).with(seconds: 1.5).make(in: scratch.path)
        let reference = try referenceDecode(path)
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        var positionAtPause = 0.0
        let run = try playAndRecord([path], daemon: daemon) { player, _ in
            sleep(seconds: 0.5)
            try player.pause()
            sleep(seconds: 0.05)
            positionAtPause = player.position().seconds
            sleep(seconds: 0.25)
            #expect(player.currentState == .paused)
            try player.resume()
        }
        let ended = run.ended
        #expect(ended)
        let alignment = alignSegments(recording: run.samples, reference: reference.samples, channels: 2)
        print("pause 0.3 s: \(alignment)")
        #expect(alignment.segments.count == 2)
        #expect(alignment.unmatchedFrames == 0)
        let first = try #require(alignment.segments.first)
        let second = try #require(alignment.segments.last)
        #expect(first.referenceFrame == 0)
        #expect(second.referenceFrame == first.referenceEnd, "paused after frame \(first.referenceEnd), resumed at \(second.referenceFrame)")
        #expect(second.referenceEnd == reference.frames)
        let gap = Double(second.recordingFrame - first.recordingEnd) / 48000
        #expect(gap > 0.2 && gap < 0.6)
        let reported = Int(positionAtPause * 48000)
        print("pause: stopped after frame \(first.referenceEnd), resumed at \(second.referenceFrame) (lost/repeated "
              + "\(second.referenceFrame - first.referenceEnd)); silent gap \(Int(gap * 1000)) ms; position() while paused "
              + "\(reported) (\(reported - first.referenceEnd) frames from what was heard)")
        #expect(abs(reported - first.referenceEnd) <= playerBufferFrames)
        let states = run.events.events.compactMap { if case .state(let s) = $0 { s } else { nil } }
        #expect(states == [.playing, .paused, .playing, .ended])
    }

    /// Done-when 3: `play(duration: 1.5)` (afplay's `-t 1.5`) plays the first 1.5 s and ends.
    @Test func durationLimitStopsAfterExactlyThatMuchAudio() throws {
        let scratch = try ScratchDirectory("limit")
        defer { scratch.remove() }
        let path = try Fixture.mp3(44100, 2).with(seconds: 2.5).make(in: scratch.path)
        let reference = try referenceDecode(path)
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let run = try playAndRecord([path], daemon: daemon, duration: 1.5)
        let ended = run.ended
        #expect(ended)
        let alignment = alignSegments(recording: run.samples, reference: reference.samples, channels: 2)
        print("duration 1.5 s: \(alignment)")
        #expect(alignment.segments.count == 1)
        let segment = try #require(alignment.segments.first)
        #expect(segment.referenceFrame == 0)
        #expect(abs(segment.frames - 66150) <= playerBufferFrames)
        print("duration 1.5 s: played \(segment.frames) frames (asked 66150, error \(segment.frames - 66150))")
    }

    /// Done-when 1 and 3 through the real tool: `afplay --output pulse:SINK --no-ui --json-events
    /// -t 1.5` against the private daemon reports item, output, playing, ended, end, exits 0,
    /// and the monitor heard the first 1.5 s of the file.
    @Test func afplayPlaysThroughPulseAudioAndReportsEvents() throws {
        let afplay = try #require(builtProduct("afplay"), "afplay is not built (swift build)")
        let scratch = try ScratchDirectory("afplay")
        defer { scratch.remove() }
        let path = try Fixture.aac(48000, 2).with(seconds: 2.0).make(in: scratch.path)
        let reference = try referenceDecode(path)
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: "\(scratch.path)/monitor.raw")
        let tool = try ToolProcess(afplay, ["--output", "pulse:\(daemon.sinkName)", "--no-ui", "--json-events", "-t", "1.5", path],
                                   environment: daemon.environment, outputPath: "\(scratch.path)/afplay.out")
        let status = tool.wait(timeout: 15)
        tool.stop()
        sleep(seconds: 0.3)
        let samples = recording.stop()
        let output = tool.output
        #expect(status == 0, "afplay: \(output)")
        let lines = output.split(separator: "\n").map(String.init)
        func index(_ needle: String) -> Int? { lines.firstIndex { $0.contains(needle) } }
        let item = index(#""event": "item""#), out = index(#""event": "output""#)
        let playing = index(#""state": "playing""#), ended = index(#""state": "ended""#), end = index(#""event": "end""#)
        print("afplay events:\n\(output)")
        #expect(item != nil && out != nil && playing != nil && ended != nil && end != nil)
        if let item, let out, let playing, let ended, let end {
            #expect(lines[item].contains(#""sample_rate": 48000"#) && lines[item].contains(#""channels": 2"#))
            #expect(lines[out].contains(#""device": "pulse:\#(daemon.sinkName)""#))
            #expect(out < playing && playing < ended && ended < end)
        }
        #expect(!output.contains(#""event": "error""#) && !output.contains("underrun"))
        let alignment = alignSegments(recording: samples, reference: reference.samples, channels: 2)
        print("afplay -t 1.5: \(alignment)")
        #expect(alignment.segments.count == 1)
        let segment = try #require(alignment.segments.first)
        #expect(segment.referenceFrame == 0)
        #expect(abs(segment.frames - 72000) <= playerBufferFrames)
        #expect(alignment.unmatchedFrames == 0)
    }
}

extension Fixture {
    func with(seconds: Double) -> Fixture {
        var f = self
        f.seconds = seconds
        return f
    }
}
