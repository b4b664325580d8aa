#if canImport(Glibc)
import Glibc
#endif
import OATTestSupport
import OpenAudioToolbox
import Testing

/// A short clip generated with ffmpeg for one codec, rate and channel count.
struct Fixture: Sendable, CustomTestStringConvertible {
    var codec: String
    var ext: String
    var rate: Int
    var channels: Int
    var arguments: [String]
    var seconds = 1.0

    var testDescription: String { "\(codec) \(rate) Hz \(channels == 1 ? "mono" : "stereo")" }

    static func mp3(_ rate: Int, _ channels: Int) -> Fixture {
        Fixture(codec: "MP3", ext: "mp3", rate: rate, channels: channels, arguments: ["-c:a", "libmp3lame", "-b:a", "192k"])
    }
    static func aac(_ rate: Int, _ channels: Int) -> Fixture {
        Fixture(codec: "AAC", ext: "m4a", rate: rate, channels: channels, arguments: ["-c:a", "aac", "-b:a", "160k"])
    }
    static func flac(_ rate: Int, _ channels: Int) -> Fixture {
        Fixture(codec: "FLAC", ext: "flac", rate: rate, channels: channels, arguments: ["-c:a", "flac"])
    }
    static func opus(_ channels: Int) -> Fixture {
        Fixture(codec: "Opus", ext: "opus", rate: 48000, channels: channels, arguments: ["-c:a", "libopus", "-b:a", "128k"])
    }
    static func pcm(_ rate: Int, _ channels: Int) -> Fixture {
        Fixture(codec: "PCM", ext: "wav", rate: rate, channels: channels, arguments: ["-c:a", "pcm_s16le"])
    }

    /// Encodes the clip into `directory`.
    func make(in directory: String) throws -> String {
        let path = "\(directory)/clip-\(codec)-\(rate)-\(channels).\(ext)"
        try #require(makeFixture(path, rate: rate, channels: channels, seconds: seconds, codec: arguments), "ffmpeg could not encode \(testDescription)")
        return path
    }
}

/// Every test here plays in real time through its own private PulseAudio daemon; they run one
/// after another so they do not compete for the two cores.
@Suite(.serialized, .requires(playbackUnavailable))
struct PlaybackTests {
    static let matrix: [Fixture] = [
        .mp3(44100, 2), .mp3(48000, 1),
        .aac(44100, 1), .aac(48000, 2),
        .flac(44100, 2), .flac(48000, 1),
        .opus(2), .opus(1),
        .pcm(44100, 1), .pcm(48000, 2),
    ]

    /// Done-when 1: AudioFilePlayer through PulseAudio (`.pulse(sink:)`, the daemon given by the
    /// options' `pulseServer`), recorded from the null sink's monitor, is every frame of the
    /// reference decode, bit-exact, in one piece.
    @Test(arguments: matrix)
    func playsEveryFrameThroughPulseAudio(_ fixture: Fixture) throws {
        let scratch = try ScratchDirectory("play")
        defer { scratch.remove() }
        let path = try fixture.make(in: scratch.path)
        let reference = try referenceDecode(path)
        #expect(reference.rate == Double(fixture.rate))
        #expect(reference.channels == fixture.channels)
        let expectedFrames = Int((Double(fixture.rate) * fixture.seconds).rounded())
        #expect(reference.frames == expectedFrames, "our trimmed decode has \(reference.frames) frames, the clip \(expectedFrames)")
        // Cross-check the reference with ffmpeg's own decode (its trimming, its decoder).
        let ffmpeg = try #require(decodeWithFFmpeg(path))
        let ffmpegFrames = ffmpeg.count / fixture.channels
        let referenceVsFFmpeg = snr(ffmpeg, reference.samples)
        if fixture.codec == "AAC" {
            // FFmpeg trims the M4A edit list's priming but plays the encoder's end padding
            // (up to one 1024-frame packet); ours ends at the edit list's duration.
            #expect(ffmpegFrames >= reference.frames && ffmpegFrames - reference.frames < 1024 + 1024)
        } else {
            #expect(ffmpegFrames == reference.frames)
        }
        #expect(referenceVsFFmpeg >= 90)

        let daemon = try PulseTestDaemon(sampleRate: fixture.rate, channels: fixture.channels)
        defer { daemon.stop() }
        let run = try playAndRecord([path], daemon: daemon)
        let ended = run.ended
        #expect(ended)
        let alignment = alignSegments(recording: run.samples, reference: reference.samples, channels: fixture.channels)
        let segment = try #require(alignment.segments.first, "the recording does not contain the clip: \(alignment)")
        let recorded = segmentSNR(run.samples, segment.recordingFrame, reference.samples, 0, frames: reference.frames, channels: fixture.channels)
        let recordedVsFFmpeg = segmentSNR(run.samples, segment.recordingFrame, ffmpeg, 0, frames: min(ffmpegFrames, reference.frames),
                                          channels: fixture.channels)
        let zeroRun = longestSilentRun(run.samples, channels: fixture.channels, from: segment.recordingFrame,
                                       to: segment.recordingFrame + reference.frames)
        let referenceZeroRun = longestSilentRun(reference.samples, channels: fixture.channels, from: 0, to: reference.frames)
        print("playback \(fixture.testDescription): \(reference.frames) frames; recorded vs ours \(dB(recorded)) dB, "
              + "vs ffmpeg \(dB(recordedVsFFmpeg)) dB (ours vs ffmpeg \(dB(referenceVsFFmpeg)) dB, ffmpeg \(ffmpegFrames) frames); "
              + "\(alignment); zero run \(zeroRun); underruns \(run.underruns)")
        #expect(alignment.segments.count == 1)
        #expect(segment.referenceFrame == 0)
        #expect(segment.frames == reference.frames)
        #expect(alignment.unmatchedFrames == 0)
        #expect(recorded >= 90)
        #expect(recordedVsFFmpeg >= 90)
        #expect(zeroRun <= referenceZeroRun)
        let states = run.events.events.compactMap { if case .state(let s) = $0 { s } else { nil } }
        #expect(states == [.playing, .ended])
    }
}
