import OATTestSupport
import Foundation
import Testing

/// The AVFAudio porting programs (PortingSuite/AVAudio*), written as Apple-platform code is and
/// built with only the import changed, checked against ffmpeg.
@Suite(.requires(TestResource.first(TestResource.corpusMissing, TestResource.ffmpegMissing)))
struct AVFAudioPortingTests {
    @Test("AVAudioFile + AVAudioConverter convert to 48 kHz",
          arguments: [("ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3", "wav"), ("flac-test-files/subset/01 - blocksize 4096.flac", "caf"),
                      ("ffmpeg-generated/caf/alac_st.caf", "m4a")])
    func avAudioFileConvert(_ relative: String, _ type: String) throws {
        let input = try TestResource.corpusFile(relative)
        let output = scratchPath("avf.\(type)")
        defer { unlink(output) }
        let result = try run(try portingProgram("porting-avaudiofile-convert"), [input, output])
        #expect(result.status == 0, "\(relative) -> \(type): \(result.output)")
        print("porting-avaudiofile-convert \(relative) -> \(type): \(result.output)")
        let source = try ffmpegDecode(input)
        // The reference: ffmpeg's decode resampled to 48 kHz by ffmpeg (soxr is not assumed:
        // its default resampler at a high filter size).
        let resampledPath = scratchPath("ref.f32")
        defer { unlink(resampledPath) }
        #expect(runFFmpeg(["-i", input, "-map", "0:a:0", "-af", "aresample=48000:filter_size=64:cutoff=0.97", "-f", "f32le", "-c:a", "pcm_f32le", resampledPath]))
        let reference = try #require(Corpus.read(resampledPath)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let produced = try ffmpegDecode(output)
        #expect(produced.channels == source.channels)
        let c = try #require(check(produced.samples, against: reference, channels: source.channels), "\(relative): no alignment")
        print("porting-avaudiofile-convert \(relative) -> \(type): \(c)")
        let floor: Double = type == "m4a" ? 20 : 40
        #expect(c.snr >= floor, "\(relative) -> \(type): \(c)")
        let expectedFrames = Double(source.samples.count / source.channels) * 48000 / (try probeRate(input))
        // ffmpeg keeps an AAC file's end padding (up to one packet) where it reads PCM exactly.
        let slack: ClosedRange<Double> = type == "m4a" ? -64...1088 : -64...64
        #expect(slack.contains(Double(c.producedFrames) - expectedFrames), "\(relative) -> \(type): \(c.producedFrames) frames for \(expectedFrames)")
    }

    func probeRate(_ path: String) throws -> Double {
        let out = scratchPath("rate.txt")
        defer { unlink(out) }
        #expect(system("ffprobe -v error -select_streams a:0 -show_entries stream=sample_rate -of csv=p=0 '\(path)' > '\(out)'") == 0)
        let text = String(decoding: try #require(Corpus.read(out)), as: UTF8.self)
        return try #require(Double(text.trimmingCharacters(in: .whitespacesAndNewlines)))
    }
}

/// The AVAudioEngine porting programs with the engine's output going to a WAV file
/// (`OAT_OUTPUT=wav:PATH`, a device no clock paces): they end as at a sound server.
@Suite(.requires(TestResource.ffmpegMissing))
struct AVFAudioEngineWAVOutputTests {
    @Test("With OAT_OUTPUT=wav:PATH the player's .dataPlayedBack comes once the file holds the whole input",
          arguments: ["plain", "fx"])
    func enginePlayerToAWAVFile(_ mode: String) throws {
        let dir = try ScratchDirectory("avf-engine-wav")
        defer { dir.remove() }
        let input = dir.path + "/a.wav"
        let output = dir.path + "/out.wav"
        try #require(makeFixture(input, rate: 48000, channels: 2, seconds: 2, codec: ["-c:a", "pcm_s16le"]))
        // Before the fix the program waited for ever: the graph stopped rendering with the
        // file's last partial slice in the player (a non-real-time device waits for a player
        // whose ring runs low), so the completion never came.
        let result = try run(try portingProgram("porting-avaudioengine-player"), [input, mode], environment: ["OAT_OUTPUT": "wav:\(output)"], timeout: 60)
        #expect(result.status == 0, "\(mode): \(result.output)")
        let written = readOutputWAV(output)
        #expect(written.channels == 2)
        let reference = try ffmpegDecode(input)
        let frames = written.samples.count / 2
        print("porting-avaudioengine-player \(mode) to a WAV file: \(frames) frames for \(reference.samples.count / 2)")
        // The whole input was written before the completion, and the file ends by the audio
        // (issue 27): exactly the input without effects; with "fx" the reverb's tail follows,
        // ended below -90 dBFS (a few seconds for the medium hall), and nothing after it (the
        // file does not grow while the players are idle).
        if mode == "plain" {
            #expect(frames == reference.samples.count / 2, "\(mode): \(frames) frames for \(reference.samples.count / 2)")
        } else {
            #expect(frames > reference.samples.count / 2 + 48000 / 2, "\(mode): \(frames) frames: no reverb tail")
            #expect(frames <= reference.samples.count / 2 + 5 * 48000, "\(mode): \(frames) frames")
            // The end rule: the file ends on the tail's last sample at or above -90 dBFS (256
            // quieter frames follow it, unwritten), so its last 256 frames are in the tail's
            // last few dB: below -80 dBFS.
            let end = written.samples.suffix(256 * written.channels).map { abs($0) }.max() ?? 1
            #expect(end < 1e-4, "\(mode): the file ends at \(end), not at the quiet end of the tail")
        }
        if mode == "plain" {
            let c = try #require(check(written.samples, against: reference.samples, channels: 2), "no alignment: \(result.output)")
            print("porting-avaudioengine-player plain to a WAV file: \(c)")
            #expect(c.snr >= 60, "\(c)")
            #expect(c.offset == 0, "the file starts with the player's first frame: \(c)")
        }
    }

    /// `OAT_OUTPUT=wav:PATH,rate=HZ`: the engine renders at the rate chosen for the file, which
    /// its header carries; a 22,050 Hz input then goes through unconverted, bit for bit.
    /// (Before: the option was taken as part of the path and the file came out at 48 kHz,
    /// the input resampled to it.)
    @Test("OAT_OUTPUT=wav:PATH,rate=22050: the engine renders at 22,050 Hz, the file's header says so and holds the input exactly")
    func enginePlayerToAWAVFileAtAChosenRate() throws {
        let dir = try ScratchDirectory("avf-engine-wav-rate")
        defer { dir.remove() }
        let input = dir.path + "/a.wav"
        let output = dir.path + "/out.wav"
        try #require(makeFixture(input, rate: 22050, channels: 2, seconds: 2, codec: ["-c:a", "pcm_f32le"]))
        let result = try run(try portingProgram("porting-avaudioengine-player"), [input, "plain"],
                             environment: ["OAT_OUTPUT": "wav:\(output),rate=22050"], timeout: 60)
        #expect(result.status == 0, "\(result.output)")
        let header = try #require(Corpus.read(output), "no file at \(output): \(result.output)")
        #expect(header.count > 44)
        let rate = header.count > 28 ? Int(header[24]) | Int(header[25]) << 8 | Int(header[26]) << 16 | Int(header[27]) << 24 : 0
        #expect(rate == 22050, "the WAV header's rate: \(rate)")
        let written = readOutputWAV(output)
        #expect(written.channels == 2)
        let reference = try ffmpegDecode(input)
        let c = try #require(check(written.samples, against: reference.samples, channels: 2), "no alignment: \(result.output)")
        print("porting-avaudioengine-player to a WAV file at 22,050 Hz: \(c)")
        #expect(c.snr >= 90, "\(c)")
        #expect(c.offset == 0, "\(c)")
        #expect(written.samples.count / 2 >= reference.samples.count / 2)
    }
}
