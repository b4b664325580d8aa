import OATTestSupport
import OpenAudioToolbox
#if canImport(Glibc)
import Glibc
#endif

/// A scratch folder for one test, removed by `cleanup()`.
struct Scratch {
    let dir: String
    init(_ name: String) {
        dir = "/tmp/oat-writing-\(getpid())-\(name)-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(dir, 0o755)
    }
    func path(_ file: String) -> String { dir + "/" + file }
    func cleanup() { _ = system("rm -rf '\(dir)'") }
}

/// Runs a shell command; returns its exit status and standard output.
func shell(_ command: String) -> (status: Int32, output: String) {
    guard let pipe = popen(command, "r") else { return (-1, "") }
    var out = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&chunk, 1, chunk.count, pipe)
        if n <= 0 { break }
        out += chunk[0..<n]
    }
    let status = pclose(pipe)
    return ((status >> 8) & 0xFF, String(decoding: out, as: UTF8.self))
}

/// True when ffprobe and ffmpeg are on the PATH.
let haveFFmpeg: Bool = shell("command -v ffprobe >/dev/null && command -v ffmpeg >/dev/null").status == 0

/// ffprobe's facts on the first audio stream: codec, rate, channels, packets read, duration_ts.
struct ProbeFacts {
    var codec: String
    var sampleRate: Int
    var channels: Int
    var packets: Int
    var durationTS: Int?
}

func ffprobe(_ path: String) -> ProbeFacts? {
    let r = shell("ffprobe -v error -count_packets -select_streams a:0 -show_entries stream=codec_name,sample_rate,channels,nb_read_packets,duration_ts -of default=nw=1 '\(path)' 2>/dev/null")
    guard r.status == 0 else { return nil }
    var d: [String: String] = [:]
    for line in r.output.split(separator: "\n") {
        let kv = line.split(separator: "=", maxSplits: 1).map(String.init)
        if kv.count == 2 { d[kv[0]] = kv[1] }
    }
    guard let codec = d["codec_name"], let rate = d["sample_rate"].flatMap({ Int($0) }), let ch = d["channels"].flatMap({ Int($0) }),
          let packets = d["nb_read_packets"].flatMap({ Int($0) }) else { return nil }
    return ProbeFacts(codec: codec, sampleRate: rate, channels: ch, packets: packets, durationTS: d["duration_ts"].flatMap { Int($0) })
}

/// Frames ffmpeg decodes from a file (its own trimming), or nil.
func ffmpegFrameCount(_ path: String, channels: Int) -> Int? {
    let r = shell("ffmpeg -v error -nostdin -i '\(path)' -map 0:a:0 -f s16le -c:a pcm_s16le - 2>/dev/null | wc -c")
    guard r.status == 0, let bytes = Int(r.output.trimmingCharacters()) else { return nil }
    return bytes / (2 * channels)
}

extension String {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while let c = s.first, c.isWhitespace { s.removeFirst() }
        while let c = s.last, c.isWhitespace { s.removeLast() }
        return String(s)
    }
}

/// Writes a stereo test signal (a 100 Hz -> 8 kHz chirp on the left, a 997 Hz sine on the
/// right, at half scale) as little-endian PCM WAV with `bits` 16 or 24.
func writeTestSignal(_ path: String, frames: Int, rate: Double = 44100, bits: UInt32 = 16, channels: UInt32 = 2) throws {
    let format = AudioStreamBasicDescription.linearPCM(sampleRate: rate, channels: channels, bitsPerChannel: bits)
    let writer = try AudioFileWriter(path: path, fileType: .wave, dataFormat: format)
    let bytes = Int(bits / 8)
    var data = [UInt8]()
    data.reserveCapacity(frames * Int(channels) * bytes)
    let scale = Double((1 << (bits - 1)) - 1) * 0.5
    let duration = Double(frames) / rate
    for i in 0..<frames {
        let t = Double(i) / rate
        let chirpPhase = 2 * Double.pi * (100 * t + (8000 - 100) * t * t / (2 * duration))
        for ch in 0..<Int(channels) {
            let v = ch == 0 ? sin(chirpPhase) : sin(2 * Double.pi * 997 * t + Double(ch))
            let s = Int32((v * scale).rounded())
            for b in 0..<bytes { data.append(UInt8(truncatingIfNeeded: s >> (8 * b))) }
        }
    }
    try writer.writePackets(AudioPacketBatch(data: data, packetCount: frames))
    try writer.close()
}

/// Decodes a file with our reader to interleaved Int32 (full scale), trimmed.
func decodeInt32(_ path: String) throws -> [Int32] {
    let file = try AudioFile(path: path)
    let client = AudioStreamBasicDescription.linearPCM(sampleRate: file.dataFormat.sampleRate, channels: file.dataFormat.channelsPerFrame, bitsPerChannel: 32)
    let reader = try ExtendedAudioFile(path: path, clientFormat: client)
    let buffer = try AudioPCMBuffer(format: client, frameCapacity: 4096)
    var out: [Int32] = []
    while true {
        let n = try reader.read(into: buffer)
        if n == 0 { break }
        let raw = buffer.mutableBytes(0)
        out += UnsafeBufferPointer(start: raw.baseAddress!.assumingMemoryBound(to: Int32.self), count: n * Int(client.channelsPerFrame))
    }
    return out
}

/// Decodes `path` with our reader to interleaved Float32 at `rate`.
func decodeFloat(_ path: String, rate: Double? = nil) throws -> [Float] {
    let file = try AudioFile(path: path)
    let client = AudioStreamBasicDescription.linearPCM(sampleRate: rate ?? file.dataFormat.sampleRate, channels: file.dataFormat.channelsPerFrame,
                                                       bitsPerChannel: 32, isFloat: true)
    let reader = try ExtendedAudioFile(path: path, clientFormat: client)
    reader.sampleRateConverterQuality = .high
    let buffer = try AudioPCMBuffer(format: client, frameCapacity: 4096)
    var out: [Float] = []
    while true {
        let n = try reader.read(into: buffer)
        if n == 0 { break }
        out += buffer.floatChannel(0)![0..<(n * Int(client.channelsPerFrame))]
    }
    return out
}

/// Why tests of the afconvert executable cannot run (it is not built next to the tests), or nil.
let afconvertMissing: String? = afconvertPath == nil ? "afconvert is not built next to the tests (swift build)" : nil

/// The afconvert executable built next to the test bundle, or nil.
let afconvertPath: String? = {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { return nil }
    var exe = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    while let slash = exe.lastIndex(of: "/") {
        exe = String(exe[..<slash])
        let candidate = exe + "/afconvert"
        if access(candidate, X_OK) == 0 { return candidate }
        if exe.hasSuffix("/.build") || exe.isEmpty { break }
    }
    return nil
}()

/// Starts a child process with stdout/stderr to /dev/null; returns its pid.
func spawn(_ args: [String]) -> pid_t? {
    var pid: pid_t = 0
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
    defer { for p in argv { free(p) } }
    let status = posix_spawn(&pid, args[0], &actions, nil, &argv, environ)
    return status == 0 ? pid : nil
}

/// Size of a file, or -1.
func fileSize(_ path: String) -> Int64 {
    var st = stat()
    return stat(path, &st) == 0 ? Int64(st.st_size) : -1
}
