import OATConversion
import OATFiles
import OATTestSupport
import Testing

/// MPEG audio decoded to Float32 at the file's own rate and channel count goes through libmpg123;
/// the same packets through libavcodec (an identity channel map sends the converter there) give
/// the same frame count and, sample for sample, the same audio; a reset (seek) lands on the same
/// frames in both. Integer PCM converted without FFmpeg matches FFmpeg's conversion exactly.
@Suite struct MPG123BackendTests {
    static let files = [
        "ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3", "ffmpeg-generated/mp3/l3_vbr_q2_44k_st_xing.mp3",
        "ffmpeg-generated/mp3/l3_mpeg2_22k_mono.mp3", "ffmpeg-generated/mp3/l3_mpeg25_11k_st_vbr.mp3",
        "ffmpeg-generated/mp3/l2_44k_st_192k.mp2", "ffmpeg-generated/mp3/l2_48k_mono_96k.mp2",
    ]

    /// Decodes `path` from packet `from` on (after a reset dropping `discard` frames when `from` > 0).
    static func decode(_ path: String, viaFFmpeg: Bool, from: Int64 = 0, discard: Int64 = 0) throws -> [Float] {
        let file = try AudioFile(path: path)
        let channels = file.dataFormat.channelsPerFrame
        let out = AudioStreamBasicDescription.linearPCM(sampleRate: file.dataFormat.sampleRate, channels: channels, bitsPerChannel: 32, isFloat: true)
        let converter = try AudioConverter(from: file.dataFormat, to: out, magicCookie: file.magicCookie)
        if viaFFmpeg { converter.channelMap = Array(0..<Int(channels)) }
        if let info = file.packetTableInfo {
            converter.primeInfo = AudioConverterPrimeInfo(leadingFrames: UInt32(max(0, info.primingFrames)), trailingFrames: UInt32(max(0, info.remainderFrames)))
            converter.validFrameCount = info.numberValidFrames
        }
        if from > 0 {
            // Decode one packet first so the reset below happens on a decoder that ran.
            try converter.decode(file.readPackets(0..<1))
            converter.reset(discardingFrames: discard)
            converter.limitRemainingFrames(nil)
        }
        let buffer = try AudioPCMBuffer(format: out, frameCapacity: 4096)
        var samples: [Float] = []
        var next = from
        while true {
            let n = try converter.fillComplexBuffer(buffer) { (wanted: Int) throws(AudioError) -> AudioPacketBatch? in
                guard next < file.packetCount else { return nil }
                let batch = try file.readPackets(next..<(next + Int64(max(wanted, 8))))
                next += Int64(batch.packetCount)
                return batch
            }
            if n == 0 { break }
            samples.append(contentsOf: buffer.floatChannel(0)![0..<(n * Int(channels))])
        }
        #expect(converter.skippedPacketCount == 0, "\(path): \(String(describing: converter.lastDecodeError))")
        return samples
    }

    @Test(.requires(TestResource.corpusMissing), arguments: files)
    func matchesLibavcodec(_ file: String) throws {
        let root = try TestResource.corpusRoot()
        let path = root + "/" + file
        let mpg123 = try Self.decode(path, viaFFmpeg: false)
        let ffmpeg = try Self.decode(path, viaFFmpeg: true)
        #expect(mpg123.count == ffmpeg.count, "\(file): \(mpg123.count) vs \(ffmpeg.count) samples")
        #expect(!mpg123.isEmpty)
        let value = snr(ffmpeg, mpg123)
        print("\(file): libmpg123 vs libavcodec \(value) dB over \(mpg123.count) samples")
        // Layer III: both decode in floating point (measured 117-124 dB). Layer II: libavcodec's
        // `mp2` decoder outputs 16-bit integers, whose rounding bounds the comparison (81-85 dB).
        #expect(value > (file.hasSuffix(".mp2") ? 75 : 110), "\(file): \(value) dB")
    }

    /// fillComplexBuffer decodes straight into an interleaved caller's buffer (what the FIFO holds
    /// first, then the decoder's frames, only the overflow through the FIFO): at every buffer size,
    /// including ones smaller than a packet and ones no packet count fills exactly, the frames are
    /// the ones the push side (decode every packet, then read) gives, in order, none lost or doubled.
    @Test(.requires(TestResource.corpusMissing), arguments: [1, 577, 1152, 4096, 16_385, 100_000])
    func fillingTheCallersBufferDirectlyKeepsEveryFrame(_ capacity: Int) throws {
        let root = try TestResource.corpusRoot()
        for name in ["ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3", "ffmpeg-generated/mp3/l3_mpeg2_22k_mono.mp3"] {
            let file = try AudioFile(path: root + "/" + name)
            let channels = Int(file.dataFormat.channelsPerFrame)
            let out = AudioStreamBasicDescription.linearPCM(sampleRate: file.dataFormat.sampleRate, channels: UInt32(channels), bitsPerChannel: 32, isFloat: true)
            func converter() throws -> AudioConverter {
                let c = try AudioConverter(from: file.dataFormat, to: out, magicCookie: file.magicCookie)
                if let info = file.packetTableInfo {
                    c.primeInfo = AudioConverterPrimeInfo(leadingFrames: UInt32(max(0, info.primingFrames)), trailingFrames: UInt32(max(0, info.remainderFrames)))
                    c.validFrameCount = info.numberValidFrames
                }
                return c
            }
            // Push side: every packet decoded, then everything read through the FIFO.
            let push = try converter()
            try push.decode(file.readPackets(0..<file.packetCount))
            try push.endOfInput()
            let all = try AudioPCMBuffer(format: out, frameCapacity: push.bufferedFrameCount + 1)
            let total = push.read(into: all)
            let expected = Array(all.floatChannel(0)![0..<(total * channels)])
            // Pull side, directly into buffers of `capacity` frames.
            let pull = try converter()
            let buffer = try AudioPCMBuffer(format: out, frameCapacity: capacity)
            var got: [Float] = []
            var next: Int64 = 0
            var calls = 0
            while true {
                let n = try pull.fillComplexBuffer(buffer) { (wanted: Int) throws(AudioError) -> AudioPacketBatch? in
                    guard next < file.packetCount else { return nil }
                    let batch = try file.readPackets(next..<(next + Int64(max(wanted, 1))))
                    next += Int64(batch.packetCount)
                    return batch
                }
                #expect(n <= capacity && buffer.frameLength == n)
                if n == 0 { break }
                calls += 1
                got.append(contentsOf: buffer.floatChannel(0)![0..<(n * channels)])
            }
            #expect(total > 10_000, "\(name): \(total) frames")
            #expect(got.count == expected.count, "\(name) at \(capacity): \(got.count / channels) frames, push side \(total)")
            let worst = zip(got, expected).reduce(Float(0)) { max($0, abs($1.0 - $1.1)) }
            #expect(worst == 0, "\(name) at \(capacity): largest difference \(worst)")
            #expect(calls >= total / capacity, "\(name) at \(capacity): \(calls) reads for \(total) frames")
        }
    }

    @Test(.requires(TestResource.corpusMissing)) func resetLandsOnTheSameFrames() throws {
        let root = try TestResource.corpusRoot()
        let path = root + "/" + "ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3"
        // Restart 20 packets in, dropping the first 3 frames' worth (the bit reservoir and the
        // filter bank refill there), and compare what follows.
        let mpg123 = try Self.decode(path, viaFFmpeg: false, from: 20, discard: 3 * 1152)
        let ffmpeg = try Self.decode(path, viaFFmpeg: true, from: 20, discard: 3 * 1152)
        #expect(mpg123.count == ffmpeg.count, "\(mpg123.count) vs \(ffmpeg.count) samples")
        #expect(mpg123.count > 100_000)
        let value = snr(ffmpeg, mpg123)
        #expect(value > 110, "after a reset: \(value) dB")
    }

    /// Native-endian 16- and 32-bit PCM to Float32 is scaled in Swift: the same samples, bit for
    /// bit, as libavcodec's PCM decoder and libswresample.
    @Test(.requires(TestResource.corpusMissing), arguments: ["pluck-pcm16.wav", "pluck-pcm32.wav"])
    func integerPCMMatchesLibswresample(_ name: String) throws {
        let root = try TestResource.corpusRoot()
        let path = root + "/python-stdlib-audiodata/" + name
        let direct = try Self.decode(path, viaFFmpeg: false)
        let ffmpeg = try Self.decode(path, viaFFmpeg: true)
        #expect(direct.count == ffmpeg.count && !direct.isEmpty, "\(name): \(direct.count) vs \(ffmpeg.count) samples")
        #expect(direct == ffmpeg, "\(name): SNR \(snr(ffmpeg, direct)) dB")
    }
}
