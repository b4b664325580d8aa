import OATTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `afplay --output SPEC,rate=HZ`: the output runs at that rate, the file resampled to it (the
/// engine honoured the option; afplay's queue path took it as part of the path, or opened the
/// device at the file's rate).
@Suite struct AfplayOutputRateTests {
    /// A mono 16-bit WAV of `seconds` of `frequency` Hz at `rate`.
    static func tone(_ path: String, rate: Int, frequency: Double, seconds: Double) -> Bool {
        let frames = Int(Double(rate) * seconds)
        var bytes = [UInt8]()
        func le32(_ v: UInt32) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
        func le16(_ v: UInt16) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8)] }
        bytes += Array("RIFF".utf8); le32(UInt32(36 + frames * 2)); bytes += Array("WAVEfmt ".utf8)
        le32(16); le16(1); le16(1); le32(UInt32(rate)); le32(UInt32(rate * 2)); le16(2); le16(16)
        bytes += Array("data".utf8); le32(UInt32(frames * 2))
        for i in 0..<frames { le16(UInt16(bitPattern: Int16(12000 * sin(2 * .pi * frequency * Double(i) / Double(rate))))) }
        return writeFile(path, bytes)
    }

    /// A WAV's rate, channels, bits and first channel as Float (PCM 16 or float 32).
    static func readWAV(_ bytes: [UInt8]) -> (rate: Int, channels: Int, samples: [Float])? {
        func u32(_ i: Int) -> Int { Int(bytes[i]) | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2]) << 16 | Int(bytes[i + 3]) << 24 }
        func u16(_ i: Int) -> Int { Int(bytes[i]) | Int(bytes[i + 1]) << 8 }
        var i = 12
        var rate = 0, channels = 0, bits = 0
        while i + 8 <= bytes.count {
            let id = String(decoding: bytes[i..<(i + 4)], as: UTF8.self)
            let size = u32(i + 4)
            if id == "fmt " { channels = u16(i + 10); rate = u32(i + 12); bits = u16(i + 22) }
            if id == "data", channels > 0 {
                let end = min(bytes.count, i + 8 + size)
                let step = channels * bits / 8
                var samples: [Float] = []
                var p = i + 8
                while p + step <= end {
                    if bits == 32 { samples.append(Float(bitPattern: UInt32(u32(p)))) } else { samples.append(Float(Int16(bitPattern: UInt16(u16(p)))) / 32768) }
                    p += step
                }
                return (rate, channels, samples)
            }
            i += 8 + size + (size & 1)
        }
        return nil
    }

    @Test(.enabled(if: builtProduct("afplay") != nil || getenv("CI").map { String(cString: $0) } == "true"),
          arguments: ["", "--eq"])
    func afplayWritesAWAVAtTheAskedRate(mode: String) throws {
        let afplay = try #require(builtProduct("afplay"))
        let dir = try ScratchDirectory("afplay-rate")
        defer { dir.remove() }
        let input = dir.path + "/tone.wav"
        #expect(Self.tone(input, rate: 48000, frequency: 1000, seconds: 1))
        let out = dir.path + "/out.wav"
        // --eq flat: the graph path, else the queue path (AudioFilePlayer).
        let extra = mode.isEmpty ? [] : [mode, "flat"]
        let p = try ToolProcess(afplay, extra + ["--output", "wav:\(out),rate=22050", input], outputPath: dir.path + "/log.txt")
        #expect(p.wait(timeout: 30) == 0, "afplay \(mode): \(p.output)")
        let wav = try #require(Corpus.read(out).flatMap(Self.readWAV), "no WAV at \(out) (\(mode))")
        #expect(wav.rate == 22050, "\(mode): the file is at \(wav.rate) Hz")
        // The file holds the 1 s tone and nothing more, on both paths: a file output has no
        // clock, so it ends where the audio ends (issue 27).
        #expect(wav.samples.count == 22050, "\(mode): \(wav.samples.count) frames for the 1 s tone at 22050 Hz")
        let sounding = wav.samples.indices.filter { abs(wav.samples[$0]) > 0.01 }
        let first = try #require(sounding.first, "\(mode): the file is silent")
        let seconds = Double(sounding.last! - first + 1) / 22050
        #expect(abs(seconds - 1) < 0.01, "\(mode): \(seconds) s of the 1 s tone")
        // The tone's frequency, from the zero crossings of its steady middle.
        let middle = Array(wav.samples[(wav.samples.count / 4)..<(wav.samples.count * 3 / 4)])
        let crossings = zip(middle, middle.dropFirst()).filter { $0 < 0 && $1 >= 0 }.count
        let frequency = Double(crossings) / (Double(middle.count) / 22050)
        #expect(abs(frequency - 1000) < 10, "\(mode): the tone is at \(frequency) Hz")
    }
}
