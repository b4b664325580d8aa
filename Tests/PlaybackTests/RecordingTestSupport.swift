#if canImport(Glibc)
import Glibc
#endif
import OATTestSupport
import OpenAudioToolbox
import Synchronization
import Testing

/// The recording tests' known signal, interleaved stereo, every sample a multiple of 1/32768 so
/// a 16-bit recording can be bit-exact: a rising chirp (300 Hz to 3.3 kHz) on the left, two
/// tones (441 Hz and 1234 Hz) on the right, starting at non-zero samples.
func recordingReference(rate: Int, seconds: Double) -> [Float] {
    let frames = Int(Double(rate) * seconds)
    var out = [Float](repeating: 0, count: frames * 2)
    let r = Double(rate)
    for i in 0..<frames {
        let t = Double(i) / r
        let chirp = 0.45 * sin(2 * Double.pi * (300 + 1500 / seconds * t) * t + 0.3)
        let tones = 0.2 * sin(2 * Double.pi * 441 * t + 1) + 0.15 * sin(2 * Double.pi * 1234 * t + 0.5)
        out[2 * i] = Float((chirp * 32768).rounded()) / 32768
        out[2 * i + 1] = Float((tones * 32768).rounded()) / 32768
    }
    return out
}

/// Plays interleaved stereo `samples` into the daemon's null sink through our PulseAudio output
/// device, returning once they have been played out.
func playIntoSink(_ samples: [Float], daemon: PulseTestDaemon) throws {
    final class Source: @unchecked Sendable {
        let samples: [Float]
        let position = Atomic<Int>(0)
        init(_ samples: [Float]) { self.samples = samples }
    }
    let source = Source(samples)
    let format = AudioDeviceFormat(sampleRate: Double(daemon.sampleRate), channels: 2)
    let device = try PulseAudioOutputDevice(format: format, sink: daemon.sinkName, server: daemon.server)
    defer { device.close() }
    try device.start { buffers, frameCount, _ in
        let total = source.samples.count / 2
        let at = source.position.load(ordering: .relaxed)
        let n = min(frameCount, total - at)
        source.samples.withUnsafeBufferPointer { s in
            for i in 0..<max(0, n) {
                buffers[0][i] = s[2 * (at + i)]
                buffers[1][i] = s[2 * (at + i) + 1]
            }
        }
        source.position.store(at + max(0, n), ordering: .relaxed)
        return AudioRenderResult(frames: max(0, n), isEndOfStream: at + n >= total)
    }
    let seconds = Double(samples.count / 2) / Double(daemon.sampleRate)
    #expect(waitUntil(seconds + 5) { device.hasDrained }, "the reference did not play out")
    device.stop(drain: false)
}

/// Where a lossy recording holds the reference and how well: cross-correlation over the whole
/// recording, then per-segment offsets (see ``lossyAlign(recording:reference:channels:segmentFrames:drift:)``),
/// so neither the onset nor a gap early in the recording decides the figure.
func lossyMatch(_ decoded: [Float], _ reference: [Float], channels: Int) -> LossyMatch? {
    lossyAlign(recording: decoded, reference: reference, channels: channels)
}

/// The same reference encoded by the `ffmpeg` command with `codec` at `bitRate` into a
/// `.extension_` file in `directory`, decoded by our decoder and aligned the same way as a
/// recording: the yardstick for what a lossy codec can keep of the signal. The reference starts
/// after `leadingFrames` of silence, as in the recording it is compared with: a transform codec's
/// result depends on where the signal falls on its frame grid (AAC at 128 kb/s: 36.6 to 40.3 dB
/// for this signal), so both encoders must see it at the same place. Nil when ffmpeg is missing
/// or fails.
func ffmpegLossyMatch(_ reference: [Float], rate: Int, channels: Int, codec: String, bitRate: Int,
                      extension ext: String, directory: String, leadingFrames: Int) -> LossyMatch? {
    let raw = "\(directory)/reference-\(codec).f32"
    let encoded = "\(directory)/ffmpeg-\(codec)-\(bitRate)-\(leadingFrames).\(ext)"
    defer { unlink(raw) }
    let lead = [Float](repeating: 0, count: max(0, leadingFrames) * channels)
    let pad = [Float](repeating: 0, count: rate / 4 * channels)
    let bytes = (lead + reference + pad).withUnsafeBytes { Array($0) }
    guard writeFile(raw, bytes),
          runFFmpeg(["-f", "f32le", "-ar", String(rate), "-ac", String(channels), "-i", raw,
                     "-c:a", codec, "-b:a", String(bitRate), encoded]),
          let decoded = try? decodeWithToolbox(encoded) else { return nil }
    return lossyMatch(decoded.samples, reference, channels: channels)
}

/// The duration ffprobe reports for `path`, or nil when it cannot read it.
func ffprobeDuration(_ path: String) -> Double? {
    guard ChildProcess.which("ffprobe") != nil else { return nil }
    let out = "/tmp/oat-ffprobe-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).txt"
    defer { unlink(out) }
    let command = "ffprobe -v error -show_entries format=duration -of csv=p=0 '\(path)' > '\(out)' 2>/dev/null"
    guard system(command) == 0, let bytes = Corpus.read(out) else { return nil }
    return Double(String(String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }))
}

/// Starts afrecord recording the daemon's monitor into `path` with `arguments` before it.
func startRecorder(_ afrecord: String, _ arguments: [String], _ path: String, daemon: PulseTestDaemon) throws -> ToolProcess {
    try ToolProcess(afrecord, arguments + ["--input", "pulse:\(daemon.monitorSource)", path],
                    environment: daemon.environment, outputPath: path + ".log")
}

/// True once afrecord has printed its first meter line (it is recording).
func isRecording(_ p: ToolProcess) -> Bool { p.output.contains("00:00") }
