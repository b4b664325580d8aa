import OATCore
@testable import OATFiles
import OATTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// MP3 files with an ID3v2.2 tag built by hand (three-letter frames, 6-byte frame headers), in
/// the variants writers produce: padding, unsynchronisation, the compression flag (tag unreadable:
/// skipped whole), the footer flag with and without a footer. The picture is a JPEG whose COM
/// marker `FF FE 00 10` reads as an MPEG-1 Layer I free-format 44.1 kHz stereo header: a parser
/// that ends the tag too early or searches for sync inside it reports Layer I instead of the
/// file's 22.05 kHz mono Layer III (issue 19).
@Suite struct ID3v22Tests {
    struct Variant: CustomTestStringConvertible, Sendable {
        var name: String
        var flags: UInt8
        var footer = false
        var readable = true
        var testDescription: String { name }
    }

    static func frame(_ id: String, _ body: [UInt8]) -> [UInt8] {
        Array(id.utf8) + [UInt8((body.count >> 16) & 0xFF), UInt8((body.count >> 8) & 0xFF), UInt8(body.count & 0xFF)] + body
    }

    static func syncsafe(_ n: Int) -> [UInt8] { [UInt8((n >> 21) & 0x7F), UInt8((n >> 14) & 0x7F), UInt8((n >> 7) & 0x7F), UInt8(n & 0x7F)] }

    /// ID3 unsynchronisation: a 0x00 after every 0xFF followed by 0xE0+ or 0x00 (or at the end).
    static func unsynchronise(_ b: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        for (i, x) in b.enumerated() {
            out.append(x)
            if x == 0xFF && (i + 1 == b.count || b[i + 1] & 0xE0 == 0xE0 || b[i + 1] == 0) { out.append(0) }
        }
        return out
    }

    static func tag(_ v: Variant) -> [UInt8] {
        var jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0]
        for _ in 0..<64 { jpeg += [0xFF, 0xFE, 0x00, 0x10] + Array("a comment here".utf8) } // COM markers
        jpeg += [0xFF, 0xD9]
        var frames = frame("TT2", [0] + Array("Twenty-two".utf8)) + frame("TP1", [0] + Array("Tagger".utf8))
        frames += frame("PIC", [0] + Array("JPG".utf8) + [3, 0] + jpeg)
        frames += frame("COM", [0] + Array("eng".utf8) + [0] + Array("note".utf8))
        var body = v.flags & 0x80 != 0 ? unsynchronise(frames) : frames
        body += [UInt8](repeating: 0, count: 256) // padding
        var out: [UInt8] = Array("ID3".utf8) + [2, 0, v.flags] + syncsafe(body.count) + body
        if v.footer { out += Array("3DI".utf8) + [2, 0, v.flags] + syncsafe(body.count) }
        return out
    }

    static let variants: [Variant] = [
        Variant(name: "plain with padding", flags: 0),
        Variant(name: "unsynchronised", flags: 0x80),
        Variant(name: "compression flag (unreadable, skipped)", flags: 0x40, readable: false),
        Variant(name: "footer flag and a footer", flags: 0x10, footer: true),
        Variant(name: "footer flag without a footer", flags: 0x10),
    ]

    @Test(arguments: variants)
    func layerIIIAfterAnID3v22Tag(_ v: Variant) throws {
        let base = "/tmp/oat-id322-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let plain = base + "-plain.mp3", path = base + "-tagged.mp3"
        defer { unlink(plain); unlink(path) }
        try #require(runFFmpeg(["-f", "lavfi", "-i", "aevalsrc=\(fixtureSignalExpression(channels: 1, seconds: 2)):s=22050:d=2",
                                "-c:a", "libmp3lame", "-b:a", "64k", "-id3v2_version", "0", plain]))
        let audio = try #require(Corpus.read(plain))
        let bytes = Self.tag(v) + audio
        #expect(writeFile(path, bytes))
        let reference = try AudioFile(path: plain)

        let file = try AudioFile(path: path)
        #expect(file.dataFormat.formatID == .mpegLayer3)
        #expect(file.dataFormat.sampleRate == 22050)
        #expect(file.dataFormat.channelsPerFrame == 1)
        #expect(file.packetCount == reference.packetCount)
        #expect(file.totalFrames == reference.totalFrames)
        if v.readable {
            #expect(file.infoDictionary[InfoKey.title] == "Twenty-two")
            #expect(file.infoDictionary[InfoKey.artist] == "Tagger")
        }
        // Every split of the input gives the same format and packets.
        for chunk in [1, 7, 4096] {
            let stream = AudioFileStream()
            var packets: Int64 = 0
            var i = 0
            let handler: (AudioFileStreamEvent) -> Void = { if case .packets(let b) = $0 { packets += Int64(b.packetCount) } }
            while i < bytes.count {
                try stream.parse(Array(bytes[i..<min(bytes.count, i + chunk)]), handler)
                i += chunk
            }
            try stream.finish(handler)
            #expect(stream.dataFormat?.formatID == .mpegLayer3, "split \(chunk)")
            #expect(stream.dataFormat?.sampleRate == 22050, "split \(chunk)")
            #expect(packets == reference.packetCount, "split \(chunk)")
        }
    }
}

/// The file behind issue 19's ID3v2.2 report, rebuilt: the tag's declared size ends inside its
/// attached picture, a real JPEG (ffmpeg's) carrying two COM markers (`FF FE 00 xx`, as a
/// picture with the encoder's and an editor's comment has). Each marker reads as an MPEG-1 Layer
/// I free-format 44.1 kHz stereo header; the first found the second within 8 KiB, which was all
/// a free-format candidate needed, so the file was read as Layer I and its 22.05 kHz mono Layer
/// III frames skipped as another stream. FFmpeg (and now this parser) wants three frames in a row.
@Suite(.requires(TestResource.ffmpegMissing)) struct ID3v22ShortTagTests {
    /// ffmpeg's JPEG of a test picture with a second COM segment before its frame header.
    static func jpegWithTwoComments(_ dir: String) throws -> [UInt8] {
        let path = dir + "/picture.jpg"
        try #require(runFFmpeg(["-f", "lavfi", "-i", "testsrc=s=96x64", "-frames:v", "1", "-c:v", "mjpeg", "-f", "image2", path]))
        var jpeg = try #require(Corpus.read(path))
        // ffmpeg writes its own COM ("Lavc...") after APP0; an editor's goes before SOF0.
        #expect(jpeg.indices.dropLast().contains { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xFE }, "ffmpeg's JPEG has no COM marker")
        let sof = try #require(jpeg.indices.dropLast().first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 })
        let text = Array("Edited with a photo editor".utf8)
        jpeg.insert(contentsOf: [0xFF, 0xFE, 0x00, UInt8(text.count + 2)] + text, at: sof)
        return jpeg
    }

    /// What ffprobe says of `path`: codec name, sample rate, channels.
    static func ffprobe(_ path: String) throws -> String {
        let out = path + ".probe"
        defer { unlink(out) }
        let p = try ToolProcess(try #require(ChildProcess.which("ffprobe")),
                                ["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=codec_name,sample_rate,channels",
                                 "-of", "csv=p=0", path], outputPath: out)
        try #require(p.wait(timeout: 30) == 0)
        return String(p.output.filter { !$0.isNewline })
    }

    @Test(arguments: [0, 5, 40])
    func tagSizeEndingInsideItsPicture(_ intoPicture: Int) throws {
        let dir = try ScratchDirectory("id3v22-short")
        let plain = dir.path + "/plain.mp3", path = dir.path + "/tagged.mp3"
        try #require(runFFmpeg(["-f", "lavfi", "-i", "aevalsrc=\(fixtureSignalExpression(channels: 1, seconds: 2)):s=22050:d=2",
                                "-c:a", "libmp3lame", "-b:a", "64k", "-id3v2_version", "0", plain]))
        let audio = try #require(Corpus.read(plain))
        let jpeg = try Self.jpegWithTwoComments(dir.path)
        let head = ID3v22Tests.frame("TT2", [0] + Array("Twenty-two".utf8))
        let pic = ID3v22Tests.frame("PIC", [0] + Array("JPG".utf8) + [3, 0] + jpeg)
        let frames = head + pic + ID3v22Tests.frame("COM", [0] + Array("eng".utf8) + [0] + Array("note".utf8))
        // Declared: up to `intoPicture` bytes into the JPEG (its SOI and APP0 at most).
        let declared = head.count + 6 + 6 + intoPicture
        let bytes: [UInt8] = Array("ID3".utf8) + [2, 0, 0] + ID3v22Tests.syncsafe(declared) + frames + audio
        #expect(writeFile(path, bytes))
        if intoPicture > 0 {
            // (At 0 the tag ends where the JPEG starts: FFmpeg's probe then reads a JPEG file.)
            #expect(try Self.ffprobe(path) == "mp3,22050,1", "ffprobe reads it as Layer III 22.05 kHz mono")
        }

        let reference = try AudioFile(path: plain)
        let file = try AudioFile(path: path)
        #expect(file.dataFormat.formatID == .mpegLayer3, "\(file.dataFormat)")
        #expect(file.dataFormat.sampleRate == 22050)
        #expect(file.dataFormat.channelsPerFrame == 1)
        #expect(file.packetCount == reference.packetCount)
        #expect(file.totalFrames == reference.totalFrames)
        for chunk in [1, 7, 4096] {
            let stream = AudioFileStream()
            var packets: Int64 = 0
            var i = 0
            let handler: (AudioFileStreamEvent) -> Void = { if case .packets(let b) = $0 { packets += Int64(b.packetCount) } }
            while i < bytes.count {
                try stream.parse(Array(bytes[i..<min(bytes.count, i + chunk)]), handler)
                i += chunk
            }
            try stream.finish(handler)
            #expect(stream.dataFormat?.formatID == .mpegLayer3, "split \(chunk)")
            #expect(stream.dataFormat?.sampleRate == 22050, "split \(chunk)")
            #expect(packets == reference.packetCount, "split \(chunk)")
        }
    }
}
