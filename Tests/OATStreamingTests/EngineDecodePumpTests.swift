import OATCore
import OATNetwork
@testable import OATStreaming
import Testing

/// The parse-and-decode pump's decisions (``DecodePump``) and the bytes it keeps for seeks
/// (``RetainedBytes``), without a thread, a source or a device.
@Suite struct EngineDecodePumpTests {
    /// A chunk is cut where metadata begins inside it, and not for metadata at its start, before
    /// it or after it.
    @Test func cutsChunkAtMetadata() {
        let at = { (offset: Int64) in StreamMetadata(title: "t", audioByteOffset: offset) }
        #expect(DecodePump.cut(1000, at: 5000, before: nil) == 1000)
        #expect(DecodePump.cut(1000, at: 5000, before: at(5300)) == 300)
        #expect(DecodePump.cut(1000, at: 5000, before: at(5000)) == 1000, "applies before the chunk")
        #expect(DecodePump.cut(1000, at: 5000, before: at(4000)) == 1000)
        #expect(DecodePump.cut(1000, at: 5000, before: at(6000)) == 1000, "begins with the next chunk")
        #expect(DecodePump.cut(1000, at: 5000, before: at(5999)) == 999)
    }

    /// A large chunk (a server's 32 KiB burst) is parsed in slices of at most 8 KiB, so the
    /// converter's FIFO holds one slice's PCM, not 2 s of it; metadata inside a slice still cuts
    /// it where the metadata begins.
    @Test func slicesLargeChunks() {
        let at = { (offset: Int64) in StreamMetadata(title: "t", audioByteOffset: offset) }
        #expect(DecodePump.cut(32 << 10, at: 0, before: nil) <= 4 << 10)
        #expect(DecodePump.cut(32 << 10, at: 0, before: nil) >= 4 << 10, "not so small that parse calls multiply")
        #expect(DecodePump.cut(32 << 10, at: 0, before: at(100)) == 100)
        #expect(DecodePump.cut(32 << 10, at: 0, before: at(20_000)) <= 4 << 10, "the slice first, the metadata cut later")
        #expect(DecodePump.cut(32 << 10, at: 0, before: nil, limit: 1000) == 1000)
    }

    /// A new decoder for another codec, rate, channel count, a replaced codec setup or a new
    /// Ogg link; not for the same stream or a cookie that arrives late.
    @Test func newDecoderOnlyForRealFormatChanges() {
        let mp3 = AudioStreamBasicDescription(sampleRate: 44100, formatID: .mpegLayer3, formatFlags: [], bytesPerPacket: 0, framesPerPacket: 1152,
                                              bytesPerFrame: 0, channelsPerFrame: 2, bitsPerChannel: 0)
        var mono = mp3
        mono.channelsPerFrame = 1
        var rate = mp3
        rate.sampleRate = 48000
        #expect(!DecodePump.needsNewDecoder(from: mp3, cookie: nil, to: mp3, cookie: nil, oggLink: false))
        #expect(DecodePump.needsNewDecoder(from: mp3, cookie: nil, to: mono, cookie: nil, oggLink: false))
        #expect(DecodePump.needsNewDecoder(from: mp3, cookie: nil, to: rate, cookie: nil, oggLink: false))
        #expect(!DecodePump.needsNewDecoder(from: mp3, cookie: nil, to: mp3, cookie: [1, 2], oggLink: false), "a late cookie refines")
        #expect(DecodePump.needsNewDecoder(from: mp3, cookie: [1, 2], to: mp3, cookie: [3], oggLink: false), "a new setup")
        #expect(!DecodePump.needsNewDecoder(from: mp3, cookie: [1, 2], to: mp3, cookie: [1, 2], oggLink: false))
        #expect(DecodePump.needsNewDecoder(from: mp3, cookie: [1, 2], to: mp3, cookie: [1, 2], oggLink: true), "a new Ogg link")
        #expect(!DecodePump.needsNewDecoder(from: nil, cookie: nil, to: mp3, cookie: nil, oggLink: false))
    }

    /// The duration comes from the packet table, else the packet count, else size and bit rate.
    @Test func durationFromTheBestEvidence() {
        let mp3 = AudioStreamBasicDescription(sampleRate: 44100, formatID: .mpegLayer3, formatFlags: [], bytesPerPacket: 0, framesPerPacket: 1152,
                                              bytesPerFrame: 0, channelsPerFrame: 2, bitsPerChannel: 0)
        #expect(DecodePump.duration(format: mp3, validFrames: 441000, packets: 1, totalBytes: 1, dataOffset: 0, bitRate: 1) == 10)
        #expect(DecodePump.duration(format: mp3, validFrames: nil, packets: 3828, totalBytes: 1, dataOffset: 0, bitRate: 1)
                == 3828.0 * 1152 / 44100)
        #expect(DecodePump.duration(format: mp3, validFrames: nil, packets: nil, totalBytes: 160_400, dataOffset: 400, bitRate: 128_000) == 10)
        var vbr = mp3
        vbr.framesPerPacket = 0
        #expect(DecodePump.duration(format: vbr, validFrames: nil, packets: 100, totalBytes: nil, dataOffset: nil, bitRate: 128_000) == nil)
    }

    /// Bytes without audio fail an item past the limit (at least 64 KiB), or after 16 skip
    /// requests; the message names the item, the bytes and where they began.
    @Test func bytesWithoutAudioFailPastTheLimit() throws {
        var policy = BufferingPolicy()
        policy.maximumBytesWithoutAudio = 1000
        let pump = DecodePump(policy: policy)
        #expect(pump.maximumBytesWithoutAudio == 64 << 10, "at least 64 KiB")
        #expect(pump.noAudioError(url: "u", bytes: 64 << 10, skipRequests: 16, fedOffset: 70_000, parserReady: true) == nil)
        let e = try #require(pump.noAudioError(url: "http://x/a.mp3", bytes: (64 << 10) + 1, skipRequests: 0, fedOffset: 100_000, parserReady: false))
        #expect(e.code == .invalidData)
        #expect(e.message.contains("http://x/a.mp3"))
        #expect(e.message.contains("from byte \(100_000 - (64 << 10) - 1)"))
        #expect(e.message.contains("no audio data was found"))
        #expect(pump.noAudioError(url: "u", bytes: 0, skipRequests: 17, fedOffset: 0, parserReady: true) != nil)
    }

    /// Parsed bytes are kept while they follow each other, restarted on a gap, trimmed once
    /// more than 1 MiB beyond the limit, and not kept at all with a limit of 0.
    @Test func retainsContiguousBytesWithinTheLimit() {
        var r = RetainedBytes(at: 100)
        r.append([1, 2, 3], at: 100, limit: 16)
        r.append([4, 5], at: 103, limit: 16)
        #expect(r.bytes == [1, 2, 3, 4, 5])
        #expect(r.start == 100 && r.end == 105)
        r.append([9], at: 200, limit: 16)
        #expect(r.bytes == [9] && r.start == 200, "a gap starts again")
        var big = RetainedBytes(at: 0)
        big.append([UInt8](repeating: 1, count: (1 << 20) + 10), at: 0, limit: 5)
        #expect(big.bytes.count == 5, "trimmed to the limit")
        #expect(big.start == Int64((1 << 20) + 5))
        #expect(big.end == Int64((1 << 20) + 10))
        var none = RetainedBytes(at: 0)
        none.append([1], at: 0, limit: 0)
        #expect(none.bytes.isEmpty)
        r.reset(at: 7)
        #expect(r.bytes.isEmpty && r.start == 7)
    }

    /// A seek inside the kept bytes replays them from its offset, followed by the unparsed rest
    /// of the chunk being fed when that continues them; outside them, nothing.
    @Test func replaysFromSeekOffset() {
        var r = RetainedBytes(at: 10)
        r.append([10, 11, 12, 13], at: 10, limit: 100)
        #expect(r.replay(from: 12, unfed: nil) == [12, 13])
        #expect(r.replay(from: 10, unfed: ([14, 15], 14)) == [10, 11, 12, 13, 14, 15])
        #expect(r.replay(from: 15, unfed: ([14, 15], 14)) == [15])
        #expect(r.replay(from: 12, unfed: ([20], 20)) == [12, 13], "an unfed rest elsewhere is not ours")
        #expect(r.replay(from: 14, unfed: nil) == nil)
        #expect(r.replay(from: 9, unfed: nil) == nil)
    }
}
