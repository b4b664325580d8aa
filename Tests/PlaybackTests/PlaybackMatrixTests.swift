#if canImport(Glibc)
import Glibc
#endif
import OATTestSupport
import OpenAudioToolbox
import Synchronization
import Testing

/// One cell of the playback matrix: a 2 s clip at `rate` with `channels` in `format`, played by
/// an ``AudioFilePlayer`` through `device` (a PulseAudio null sink at 44.1 or 48 kHz, directly or
/// through ALSA's pulse plugin), afplay's settings (0.4 s PulseAudio latency, ALSA's default
/// period in time).
struct MatrixCase: Sendable, CustomTestStringConvertible {
    enum Device: String, Sendable {
        case pulse44, pulse48, alsa44, alsa48
        var sinkRate: Int { self == .pulse44 || self == .alsa44 ? 44100 : 48000 }
        var isALSA: Bool { self == .alsa44 || self == .alsa48 }
    }
    var format: String
    var rate: Int
    var channels: Int
    var device: Device
    var ext: String
    var arguments: [String]
    static let seconds = 2

    var testDescription: String { "\(format) \(rate) Hz \(channels) ch, \(device)" }

    /// Clip frames at the file's rate.
    var frames: Int { rate * Self.seconds }

    /// ffmpeg's `aevalsrc`: a rising chirp (300 Hz to 3.3 kHz) on the first channel and a tone per
    /// other channel (441 Hz up in 373 Hz steps, all below 4 kHz so 8 kHz files carry them),
    /// each starting at a non-zero sample.
    var source: String {
        var exprs = ["0.45*sin(2*PI*(300+750*t)*t+0.3)"]
        for k in 1..<channels { exprs.append("0.3*sin(2*PI*\(441 + 373 * (k - 1))*t+\(k))") }
        let layout = [1: "mono", 2: "stereo", 6: "5.1", 8: "7.1"][channels]!
        return "aevalsrc=\(exprs.joined(separator: "|")):s=\(rate):d=\(Self.seconds):c=\(layout)"
    }

    static func pcm(_ bits: Int, _ rate: Int, _ channels: Int, _ device: Device) -> MatrixCase {
        let codec = bits == 0 ? "pcm_f32le" : "pcm_s\(bits)le"
        return MatrixCase(format: bits == 0 ? "PCM float" : "PCM \(bits)-bit", rate: rate, channels: channels, device: device,
                          ext: "wav", arguments: ["-c:a", codec])
    }
    static func codec(_ name: String, _ rate: Int, _ channels: Int, _ device: Device, ext: String, _ arguments: [String]) -> MatrixCase {
        MatrixCase(format: name, rate: rate, channels: channels, device: device, ext: ext, arguments: arguments)
    }
    static func flac(_ bits: Int, _ rate: Int, _ channels: Int, _ device: Device) -> MatrixCase {
        codec("FLAC \(bits)-bit", rate, channels, device, ext: "flac",
              ["-c:a", "flac", "-sample_fmt", bits == 16 ? "s16" : "s32"] + (bits == 24 ? ["-bits_per_raw_sample", "24"] : []))
    }
    static func mp3(_ rate: Int, _ channels: Int, _ device: Device) -> MatrixCase {
        codec("MP3", rate, channels, device, ext: "mp3", ["-c:a", "libmp3lame", "-b:a", rate < 32000 ? "64k" : "192k"])
    }
    static func aac(_ rate: Int, _ channels: Int, _ device: Device) -> MatrixCase {
        codec("AAC", rate, channels, device, ext: "m4a", ["-c:a", "aac", "-b:a", "\(96 * channels)k"])
    }
    static func opus(_ channels: Int, _ device: Device) -> MatrixCase {
        codec("Opus", 48000, channels, device, ext: "opus", ["-c:a", "libopus", "-b:a", "\(64 * channels)k"])
    }
    static func vorbis(_ rate: Int, _ channels: Int, _ device: Device) -> MatrixCase {
        codec("Vorbis", rate, channels, device, ext: "ogg", ["-c:a", "libvorbis", "-q:a", "6"])
    }
    static func alac(_ rate: Int, _ channels: Int, _ device: Device) -> MatrixCase {
        codec("ALAC", rate, channels, device, ext: "m4a", ["-c:a", "alac"])
    }
}

/// The playback matrix (issue 19): every rate from 8 to 192 kHz, 1, 2, 6 and 8 channels, PCM of
/// each width and every codec, through PulseAudio sinks at 44.1 and 48 kHz and through ALSA's
/// pulse plugin, recorded at the sink and compared with ffmpeg's decode resampled as the server
/// resamples (SpeexDSP, quality 10, leading zeros skipped): SNR >= 60 dB over the whole clip and
/// over its last 50 ms (played to the end), no silence inside, no lead-in silence rendered
/// before the first frame, no underrun.
///
/// A covering set rather than the cross product (11 x 4 x 15 x 4 cells): each rate, channel
/// count, format and device at least once, in 32 two-second cases; one daemon serves every
/// case (eight null sinks: 44.1/48 kHz x 1/2/6/8 channels), the cases one after another.
@Suite(.serialized, .requires(playbackUnavailable))
struct PlaybackMatrixTests {
    static let cases: [MatrixCase] = [
        .pcm(16, 8000, 1, .pulse44),
        .codec("mu-law", 8000, 1, .pulse48, ext: "wav", ["-c:a", "pcm_mulaw"]),
        .codec("A-law", 8000, 1, .alsa44, ext: "wav", ["-c:a", "pcm_alaw"]),
        .mp3(11025, 2, .pulse44),
        .codec("IMA ADPCM", 11025, 1, .pulse48, ext: "wav", ["-c:a", "adpcm_ima_wav"]),
        .mp3(16000, 1, .pulse48),
        .vorbis(16000, 2, .alsa48),
        .aac(22050, 2, .pulse44),
        .codec("MS ADPCM", 22050, 1, .pulse48, ext: "wav", ["-c:a", "adpcm_ms"]),
        .codec("IMA4", 22050, 2, .pulse44, ext: "caf", ["-c:a", "adpcm_ima_qt"]),
        .codec("MP2", 32000, 2, .pulse48, ext: "mp2", ["-c:a", "mp2", "-b:a", "192k"]),
        .mp3(32000, 1, .alsa44),
        .flac(16, 44100, 2, .pulse48),
        .aac(44100, 6, .pulse44),
        .flac(24, 44100, 8, .pulse48),
        .mp3(44100, 2, .alsa48),
        .pcm(0, 44100, 8, .pulse48),
        .opus(2, .pulse44),
        .opus(6, .pulse48),
        .vorbis(48000, 8, .pulse44),
        .alac(48000, 2, .alsa44),
        .pcm(24, 88200, 2, .pulse44),
        .alac(88200, 1, .pulse48),
        .flac(24, 96000, 2, .pulse44),
        .pcm(0, 96000, 1, .pulse48),
        .pcm(32, 96000, 6, .pulse44),
        .aac(96000, 2, .alsa48),
        .pcm(24, 176400, 2, .pulse44),
        .flac(24, 176400, 1, .pulse48),
        .flac(24, 192000, 2, .pulse44),
        .pcm(0, 192000, 1, .alsa44),
        .pcm(16, 192000, 2, .pulse48),
    ]

    /// The covering set covers what it says.
    @Test func coversEveryRateChannelCountFormatAndDevice() {
        let rates = Set(Self.cases.map(\.rate))
        #expect(rates == [8000, 11025, 16000, 22050, 32000, 44100, 48000, 88200, 96000, 176400, 192000])
        #expect(Set(Self.cases.map(\.channels)) == [1, 2, 6, 8])
        #expect(Set(Self.cases.map(\.format)).isSuperset(of: ["PCM 16-bit", "PCM 24-bit", "PCM 32-bit", "PCM float", "MP3", "MP2", "AAC",
                                                               "FLAC 16-bit", "FLAC 24-bit", "ALAC", "Opus", "Vorbis", "mu-law", "A-law",
                                                               "IMA ADPCM", "MS ADPCM", "IMA4"]))
        #expect(Set(Self.cases.map(\.device)) == [.pulse44, .pulse48, .alsa44, .alsa48])
        // Both sinks see resampling up and down; some cases play at the sink's own rate.
        #expect(Self.cases.contains { $0.rate == $0.device.sinkRate })
    }

    @Test(arguments: cases)
    func playsCleanly(_ c: MatrixCase) throws {
        let scratch = try ScratchDirectory("matrix")
        defer { scratch.remove() }
        let path = "\(scratch.path)/clip.\(c.ext)"
        try #require(runFFmpeg(["-f", "lavfi", "-i", c.source, "-map_metadata", "-1"] + c.arguments + [path]), "ffmpeg could not make \(c)")
        // ffmpeg's decode, cut to the clip (it keeps AAC's end padding and ADPCM's last block),
        // resampled as the server does.
        let decoded = try #require(decodeWithFFmpeg(path), "ffmpeg could not decode \(c)")
        try #require(decoded.count / c.channels >= c.frames, "ffmpeg decoded \(decoded.count / c.channels) of \(c.frames) frames")
        let clip = Array(decoded[0..<(c.frames * c.channels)])
        let sinkRate = c.device.sinkRate
        let reference = try #require(resampleLikePulseAudio(clip, channels: c.channels, from: c.rate, to: sinkRate),
                                     "libspeexdsp.so.1 is missing (it comes with PulseAudio)")
        let refFrames = reference.count / c.channels
        let clipLeadIn = firstNonSilentFrame(clip, channels: c.channels) ?? 0

        let daemon = try MatrixDaemon.acquire()
        let sink = MatrixDaemon.sink(rate: sinkRate, channels: c.channels)
        let recording = try daemon.recordMonitor(of: sink, to: "\(scratch.path)/monitor.raw")
        let probe = OpenedProbe()
        let player = try AudioFilePlayer(paths: [path], output: Self.output(c.device, daemon: daemon, sink: sink, probe: probe))
        try player.play()
        let ended = waitUntil(Double(MatrixCase.seconds) + 8) { player.currentState == .ended }
        sleep(seconds: 0.3) // the monitor lags the sink by its own latency (20 ms asked)
        let samples = recording.stop()
        let underruns = player.underrunCount
        player.stop()
        let device = try #require(probe.device.withLock { $0 }, "the player opened no device")

        let match = try #require(lossyAlign(recording: samples, reference: reference, channels: c.channels,
                                            segmentFrames: sinkRate / 10, drift: 4), "the clip is not in the recording")
        let recFrames = samples.count / c.channels
        let offset = match.offset
        let complete = offset >= 0 && offset + refFrames <= recFrames
        let whole = complete ? segmentSNR(samples, offset, reference, 0, frames: refFrames, channels: c.channels) : -.infinity
        let tailFrames = sinkRate / 20
        let tail = complete ? segmentSNR(samples, offset + refFrames - tailFrames, reference, refFrames - tailFrames,
                                         frames: tailFrames, channels: c.channels) : -.infinity
        let silentRun = complete ? longestSilentRun(samples, channels: c.channels, from: offset, to: offset + refFrames) : -1
        let referenceSilentRun = longestSilentRun(reference, channels: c.channels, from: 0, to: refFrames)
        let leadIn = device.leadInFrames - clipLeadIn
        let padded = device.paddedFrames.load(ordering: .acquiring)
        let row = "matrix | \(c.format) | \(c.rate) | \(c.channels) | \(c.device) | SNR \(dB(whole)) dB | end \(dB(tail)) dB | "
            + "silent run \(silentRun) | lead-in \(leadIn) frames | padded \(padded) | underruns \(underruns) | ended \(ended) | \(match)"
        print(row)
        #expect(ended, "\(c): the player did not end")
        #expect(complete, "\(c): the recording does not hold the whole clip (offset \(offset), \(recFrames) frames for \(refFrames))")
        #expect(whole >= 60, "\(c): SNR \(dB(whole)) dB")
        #expect(tail >= 60, "\(c): the last 50 ms: SNR \(dB(tail)) dB")
        #expect(match.offsetSpread == 0, "\(c): the clip is not in one piece: \(match)")
        #expect(silentRun <= referenceSilentRun, "\(c): \(silentRun) silent frames inside the clip")
        // Negative when ffmpeg's decode starts with silent frames that ours does not have (MP2).
        #expect(leadIn <= 0, "\(c): \(leadIn) frames of silence rendered before the first frame")
        #expect(padded == 0, "\(c): \(padded) frames padded with silence by the device")
        #expect(underruns == 0, "\(c): \(underruns) underruns")
    }

    /// afplay's outputs for a file: PulseAudio with a 0.4 s latency, or ALSA through the pulse
    /// plugin with the default period (in time), on the daemon's sink for the case.
    static func output(_ device: MatrixCase.Device, daemon: PulseTestDaemon, sink: PulseTestDaemon.Sink,
                       probe: OpenedProbe) -> AudioOutputDeviceFactory {
        let server = daemon.server
        return { format throws(AudioError) in
            var options = AudioOutput.Options(pulseServer: server)
            options.pulseLatency = 0.4
            let inner: any AudioOutputDevice
            if device.isALSA {
                let config = "pcm.oatpulse { type pulse server \"\(server)\" device \"\(sink.name)\" }\n"
                inner = try ALSAOutputDevice(device: "oatpulse", format: format, periodFrames: options.alsaPeriod(at: format.sampleRate),
                                             configText: config)
            } else {
                inner = try AudioOutput.open(.pulse(sink: sink.name), format: format, options: options).device
            }
            let probed = ProbedOutputDevice(inner)
            probe.device.withLock { $0 = probed }
            return probed
        }
    }
}

/// The device a factory opened.
final class OpenedProbe: Sendable {
    let device = Locked<ProbedOutputDevice?>(nil)
}

/// One PulseAudio daemon for the whole matrix, with a null sink per rate and channel count.
/// It exits by itself 20 s after its last client left (and at process exit), and comes back
/// when a case needs it again.
enum MatrixDaemon {
    static let sinks: [PulseTestDaemon.Sink] = [44100, 48000].flatMap { rate in
        [1, 2, 6, 8].map { PulseTestDaemon.Sink(name: "oat_\(rate)_\($0)", rate: rate, channels: $0) }
    }
    private static let shared = Locked<PulseTestDaemon?>(nil)

    static func sink(rate: Int, channels: Int) -> PulseTestDaemon.Sink {
        sinks.first { $0.rate == rate && $0.channels == channels }!
    }

    static func acquire() throws(AudioError) -> PulseTestDaemon {
        try shared.withLock { (d: inout PulseTestDaemon?) throws(AudioError) -> PulseTestDaemon in
            if let d {
                try d.ensureRunning()
                return d
            }
            let started = try PulseTestDaemon(sinks: sinks, exitIdleSeconds: 20)
            d = started
            atexit { MatrixDaemon.shutdown() }
            return started
        }
    }

    static func shutdown() {
        shared.withLock { d in
            d?.stop()
            d = nil
        }
    }
}

/// An output device that passes everything to `inner` and watches what the render callback
/// gives it, on the render thread (atomics only): the frames rendered before the first sound
/// (lead-in) and the frames a short render left the device to pad with silence mid-stream.
final class ProbedOutputDevice: AudioOutputDevice, @unchecked Sendable {
    let inner: any AudioOutputDevice
    /// Frames the device took before the first non-zero sample (-1: none yet).
    private let firstSound = Atomic<Int64>(-1)
    private let taken = Atomic<Int64>(0)
    /// Frames the device padded with silence after a short render, before the end of stream.
    let paddedFrames = Atomic<Int64>(0)

    init(_ inner: any AudioOutputDevice) { self.inner = inner }

    /// Frames rendered before the first sound (all of them when nothing sounded).
    var leadInFrames: Int {
        let f = firstSound.load(ordering: .acquiring)
        return Int(f >= 0 ? f : taken.load(ordering: .acquiring))
    }

    var name: String { inner.name }
    var format: AudioDeviceFormat { inner.format }
    var framesPerRender: Int { inner.framesPerRender }
    var isRealTime: Bool { inner.isRealTime }
    var latency: Double { inner.latency }
    var playedFrames: Int64 { inner.playedFrames }
    var renderedFrames: Int64 { inner.renderedFrames }
    var droppedEventCount: Int { inner.droppedEventCount }

    func start(_ render: @escaping AudioRenderCallback) throws(AudioError) {
        try inner.start { [self] buffers, frames, time in
            let result = render(buffers, frames, time)
            observe(buffers, frames, result)
            return result
        }
    }

    private func observe(_ buffers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, _ frames: Int, _ result: AudioRenderResult) {
        let before = taken.load(ordering: .relaxed)
        if firstSound.load(ordering: .relaxed) < 0 {
            frameLoop: for i in 0..<result.frames {
                for c in 0..<buffers.count where buffers[c][i] != 0 {
                    firstSound.store(before + Int64(i), ordering: .releasing)
                    break frameLoop
                }
            }
        }
        let short = result.isEndOfStream ? 0 : frames - result.frames
        if short > 0 && isRealTime { paddedFrames.add(Int64(short), ordering: .relaxed) }
        taken.store(before + Int64(result.isEndOfStream ? result.frames : frames), ordering: .releasing)
    }

    func pause() throws(AudioError) { try inner.pause() }
    func resume() throws(AudioError) { try inner.resume() }
    func stop(drain: Bool) { inner.stop(drain: drain) }
    func flush(_ resume: () -> Void) { inner.flush(resume) }
    func close() { inner.close() }
    func takeEvents() -> [AudioDeviceEvent] { inner.takeEvents() }
    func setTargetLatency(_ seconds: Double) { inner.setTargetLatency(seconds) }
}
