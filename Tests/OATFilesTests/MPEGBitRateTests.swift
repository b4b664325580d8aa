import Foundation
import OATCore
import OATFiles
import OATTestSupport
import Testing

/// `BitRate` of CBR MP3 from a real encoder (LAME through ffmpeg writes an Info tag) is the
/// header's rate, as Apple's: 192000, never 191999.
@Suite struct MPEGBitRateTests {
    @Test(arguments: [128, 192, 320])
    func cbrBitRateIsTheHeaders(_ kbps: Int) throws {
        let scratch = try ScratchDirectory("cbr-bitrate")
        defer { scratch.remove() }
        let path = scratch.path + "/cbr\(kbps).mp3"
        try #require(runFFmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=3.3",
                                "-c:a", "libmp3lame", "-b:a", "\(kbps)k", path]), "ffmpeg encodes the CBR file")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let stream = AudioFileStream(fileTypeHint: .mp3)
        _ = try stream.parse(bytes)
        #expect(stream.bitRate == UInt32(kbps * 1000), "\(kbps)k: \(stream.bitRate)")
    }
}
