#if canImport(Glibc)
import Glibc
#endif
import OATConversion
import OATFiles
import OATTestSupport
import Testing

@Suite struct AudioConverterTests {
    static var stdlib: String? { Corpus.root.map { $0 + "/python-stdlib-audiodata" } }

    @Test(.requires(TestResource.corpusMissing)) func pcmAndG711DecodeLikeFFmpeg() throws {
        let dir = try TestResource.corpusRoot() + "/python-stdlib-audiodata"
        for name in ["pluck-pcm8.au", "pluck-pcm16.au", "pluck-pcm24.au", "pluck-pcm32.au", "pluck-ulaw.au"] {
            let ours = try decodeWithToolbox(dir + "/" + name)
            let reference = try #require(decodeWithFFmpeg(dir + "/" + name))
            #expect(ours.samples.count == reference.count, "\(name)")
            #expect(snr(reference, ours.samples) > 140, "\(name): \(snr(reference, ours.samples)) dB")
        }
    }

    @Test(.requires(TestResource.corpusMissing)) func resamplesAndRemixes() throws {
        let dir = try TestResource.corpusRoot() + "/python-stdlib-audiodata"
        let file = try AudioFile(path: dir + "/pluck-pcm16.au")
        let out = AudioStreamBasicDescription.canonicalFloat(sampleRate: 48000, channels: 1)
        let converter = try AudioConverter(from: file.dataFormat, to: out)
        converter.sampleRateConverterQuality = .high
        try converter.decode(file.readPackets(0..<file.packetCount))
        try converter.endOfInput()
        let frames = converter.bufferedFrameCount
        // 3307 frames at 11025 Hz -> 48000 Hz.
        #expect(abs(frames - 14398) <= 2, "got \(frames)")
        let buffer = try AudioPCMBuffer(format: out, frameCapacity: 20000)
        #expect(converter.read(into: buffer) == frames)
        // The signal, not only the count: the pluck keeps its level (RMS within 0.5 dB: the
        // filter's transition band takes a little of what lies just under 5.5 kHz). Level,
        // frequency and image rejection on pure tones: ResamplingSignalTests.
        let original = try decodeWithToolbox(dir + "/pluck-pcm16.au").samples
        let resampled = Array(buffer.floatChannel(0)![0..<frames])
        func rms(_ x: [Float]) -> Double { (x.reduce(0) { $0 + Double($1) * Double($1) } / Double(max(1, x.count))).squareRoot() }
        let levelChange = 20 * log10(rms(resampled) / rms(original))
        #expect(abs(levelChange) < 0.5, "the level changed by \(levelChange) dB")
    }

    @Test(.requires(TestResource.corpusMissing)) func trimsPrimingAndRemainder() throws {
        let dir = try TestResource.corpusRoot() + "/python-stdlib-audiodata"
        let file = try AudioFile(path: dir + "/pluck-pcm16.au")
        let out = AudioStreamBasicDescription.linearPCM(sampleRate: file.dataFormat.sampleRate, channels: 2, bitsPerChannel: 16)
        let full = try AudioConverter(from: file.dataFormat, to: out)
        try full.decode(file.readPackets(0..<file.packetCount))
        try full.endOfInput()
        let trimmed = try AudioConverter(from: file.dataFormat, to: out)
        trimmed.primeInfo = AudioConverterPrimeInfo(leadingFrames: 100, trailingFrames: 7)
        var next: Int64 = 0
        let buffer = try AudioPCMBuffer(format: out, frameCapacity: 1000)
        var total = 0
        var first: [UInt8] = []
        while true {
            let n = try trimmed.fillComplexBuffer(buffer) { (_: Int) throws(AudioError) -> AudioPacketBatch? in
                guard next < file.packetCount else { return nil }
                defer { next += 256 }
                return try file.readPackets(next..<(next + 256))
            }
            if n == 0 { break }
            if first.isEmpty { first = Array(buffer.mutableBytes(0)[0..<8]) }
            total += n
        }
        #expect(total == 3307 - 107)
        let fullBuffer = try AudioPCMBuffer(format: out, frameCapacity: 4000)
        _ = full.read(into: fullBuffer)
        #expect(Array(fullBuffer.mutableBytes(0)[400..<408]) == first)
    }

    @Test func rejectsWhatItCannotDo() {
        let mp3 = AudioStreamBasicDescription.compressed(.mpegLayer3, sampleRate: 44100, channels: 2, framesPerPacket: 1152)
        let bigEndian = AudioStreamBasicDescription.linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 16, isBigEndian: true)
        #expect(throws: AudioError.self) { try AudioConverter(from: mp3, to: bigEndian) }
        let unknown = AudioStreamBasicDescription.compressed(AudioFormatCode("zzzz"), sampleRate: 44100, channels: 2, framesPerPacket: 1)
        #expect(throws: AudioError.self) { try AudioConverter(from: unknown, to: .canonicalFloat(sampleRate: 44100, channels: 2)) }
    }
}

@Suite struct MD5Tests {
    @Test func knownDigests() {
        var a = MD5()
        #expect(a.hexDigest() == "d41d8cd98f00b204e9800998ecf8427e")
        var b = MD5()
        b.update(Array("The quick brown fox jumps over the lazy dog".utf8))
        #expect(b.hexDigest() == "9e107d9d372bb6826bd81d3542a419d6")
        var c = MD5()
        c.update([UInt8](repeating: 0x61, count: 1000))
        #expect(c.hexDigest() == "cabe45dcc9ae5b66ba86600cca6b8ba8")
    }
}

@Suite struct ChannelMapTests {
    @Test(.requires(TestResource.corpusMissing)) func mapsSwapsAndMutesChannels() throws {
        let root = try TestResource.corpusRoot()
        let file = try AudioFile(path: root + "/python-stdlib-audiodata/pluck-pcm16.au")
        let stereo = AudioStreamBasicDescription.linearPCM(sampleRate: file.dataFormat.sampleRate, channels: 2, bitsPerChannel: 32, isFloat: true)
        func convert(_ map: [Int]?, to format: AudioStreamBasicDescription) throws -> [Float] {
            let c = try AudioConverter(from: file.dataFormat, to: format)
            c.channelMap = map
            try c.decode(file.readPackets(0..<file.packetCount))
            try c.endOfInput()
            let b = try AudioPCMBuffer(format: format, frameCapacity: 4000)
            let n = c.read(into: b)
            return Array(b.floatChannel(0)![0..<(n * Int(format.channelsPerFrame))])
        }
        let plain = try convert(nil, to: stereo)
        let swapped = try convert([1, 0], to: stereo)
        #expect(swapped.count == plain.count)
        var ok = true
        for i in stride(from: 0, to: plain.count, by: 2) where swapped[i] != plain[i + 1] || swapped[i + 1] != plain[i] { ok = false }
        #expect(ok, "left and right swapped")
        let three = AudioStreamBasicDescription.linearPCM(sampleRate: file.dataFormat.sampleRate, channels: 3, bitsPerChannel: 32, isFloat: true)
        let widened = try convert([0, -1, 1], to: three)
        #expect(widened.count == plain.count / 2 * 3)
        var ok3 = true
        for f in 0..<(plain.count / 2) where widened[3 * f] != plain[2 * f] || widened[3 * f + 1] != 0 || widened[3 * f + 2] != plain[2 * f + 1] { ok3 = false }
        #expect(ok3, "L, silence, R: \(Array(widened[300..<306])) from \(Array(plain[200..<204]))")
        #expect(throws: AudioError.self) { _ = try convert([0, 5], to: stereo) }
    }
}
