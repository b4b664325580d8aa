#if canImport(Glibc)
import Glibc
#endif
import OATConversion
import OATFiles
import OATTestSupport
import Testing

/// Decoding the corpus through our parsers and AudioConverter, checked against outside references.
@Suite struct CorpusDecodeTests {
    // MARK: minimp3 conformance vectors: PSNR against the reference PCM

    static let mp3Vectors: [String] = Corpus.audioFiles().filter {
        $0.hasPrefix("minimp3-vectors/") && $0.hasSuffix(".bit")
    }

    /// Vectors where libavcodec itself disagrees with the reference (documented in the
    /// minimp3-vectors MANIFEST), or that carry nothing a stereo decoder outputs, with the reason.
    /// Vectors where libavcodec itself disagrees with the reference (documented in the
    /// minimp3-vectors MANIFEST), or that carry nothing a stereo decoder outputs: the PSNR we
    /// measure (asserted within 1 dB, so a stale exception fails) and the reason.
    static let mp3Exceptions: [String: (psnr: Double, reason: String)] = [
        "minimp3-vectors/l3-test45.bit": (36.9, "libavcodec and the reference disagree even when aligned (MANIFEST: 28-30 dB)"),
        "minimp3-vectors/l3-test46.bit": (32.7, "libavcodec and the reference disagree even when aligned (MANIFEST: 28-30 dB)"),
        "minimp3-vectors/l3-he_mode.bit": (18.5, "mono/stereo switches mid-stream: the reference interleaves each frame at its own channel count; we decode at the first frame's count (ffmpeg CLI: 18.5 dB)"),
        "minimp3-vectors/l3-he_free.bit": (15.8, "free format: libavcodec's MP3 decoder rejects frames with bitrate index 0 (the parser splits them; see the split test)"),
        "minimp3-vectors/l2-nonstandard-free_format.bit": (23.1, "free format Layer II: libavcodec's decoder rejects bitrate index 0"),
        "minimp3-vectors/l2-nonstandard-fl1_fl2_ff.bit": (35.4, "ends in free-format Layer II frames, which libavcodec's decoder rejects"),
        "minimp3-vectors/l2-nonstandard-test32-size.bit": (14.5, "frames with wrong sizes: libavcodec conceals differently from the reference (ffmpeg CLI: 8.9 dB)"),
        "minimp3-vectors/l3-nonstandard-compl-sideinfo-bigvalues.bit": (30.2, "corrupt side info: libavcodec conceals differently (ffmpeg CLI: 30.5 dB)"),
        "minimp3-vectors/l3-nonstandard-compl-sideinfo-blocktype.bit": (22.2, "corrupt side info: libavcodec conceals differently (ffmpeg CLI: 22.2 dB)"),
        "minimp3-vectors/l3-nonstandard-compl-sideinfo-size.bit": (20.7, "corrupt side info: libavcodec conceals differently (ffmpeg CLI: 20.7 dB)"),
        "minimp3-vectors/l3-nonstandard-vbrtag-oob-read.bit": (0.0, "the only frame is a truncated Info tag frame (104 of 417 bytes): we report the tag and no audio; the reference decodes the tag frame as silence"),
    ]

    /// Vectors whose reference PCM is empty: the decoder must output nothing and must not crash
    /// (MANIFEST).
    static let emptyReferences: Set<String> = [
        "minimp3-vectors/ILL2_overalloc2.bit", "minimp3-vectors/l3-nonstandard-id3v2-only.bit",
        "minimp3-vectors/l3-nonstandard-sideinfo-size.bit", "minimp3-vectors/l3-nonstandard-small.bit",
        "minimp3-vectors/l3-nonstandard-vbrtag-corrupted.bit", "minimp3-vectors/l3-nonstandard-vbrtag-empty.bit",
        "minimp3-vectors/l3-nonstandard-vbrtag-noframes.bit", "minimp3-vectors/l3-nonstandard-vbrtag-only.bit",
    ]

    /// Vectors without a reference PCM (MANIFEST: "`l3-nonstandard-big-iscf.bit` has no reference").
    static let withoutReference: Set<String> = ["minimp3-vectors/l3-nonstandard-big-iscf.bit"]

    /// PSNR in dB of `test` against the 16-bit `reference`, full scale 32767.
    static func psnr(_ reference: [Int16], _ test: [Float], offset: Int) -> Double {
        var se = 0.0
        var n = 0
        for i in 0..<reference.count {
            let j = i + offset
            guard j >= 0, j < test.count else { continue }
            // The reference is 16-bit: clip our float output the same way before comparing.
            let v = max(-32768, min(32767, (Double(test[j]) * 32768).rounded()))
            let d = v - Double(reference[i])
            se += d * d
            n += 1
        }
        guard n > 0 else { return 0 }
        if se == 0 { return 200 }
        return 10 * log10(32767.0 * 32767.0 / (se / Double(n)))
    }

    @Test(arguments: mp3Vectors)
    func mp3VectorsMatchReference(_ vector: String) throws {
        let root = try #require(Corpus.root)
        let refPath = root + "/" + vector.dropLast(4) + ".pcm"
        guard let refBytes = Corpus.read(refPath) else {
            // No reference (documented): decoding must not crash; nothing to compare.
            #expect(Self.withoutReference.contains(vector), "\(vector): no reference PCM, and not listed in withoutReference")
            let outcome = (try? decodeWithToolbox(root + "/" + vector)).map { "\($0.samples.count) samples" } ?? "an error"
            print("\(vector): no reference (documented); our decode gives \(outcome)")
            return
        }
        #expect(!Self.withoutReference.contains(vector), "\(vector): listed in withoutReference but has a reference")
        let reference: [Int16] = refBytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        #expect(reference.isEmpty == Self.emptyReferences.contains(vector),
                "\(vector): the reference has \(reference.count) samples; listed as empty: \(Self.emptyReferences.contains(vector))")
        let decoded: (samples: [Float], channels: Int, rate: Double)
        do {
            decoded = try decodeWithToolbox(root + "/" + vector)
        } catch {
            #expect(reference.isEmpty, "\(vector): \(error)")
            return
        }
        if reference.isEmpty {
            // The reference decoder outputs nothing: neither do we, or only silence
            // (l3-nonstandard-sideinfo-size: libavcodec conceals its broken frames as silence).
            let sounding = decoded.samples.contains { $0 != 0 }
            #expect(!sounding, "\(vector): the reference is empty, we decode \(decoded.samples.count) samples, not all silent")
            if !decoded.samples.isEmpty { print("\(vector): empty reference; we decode \(decoded.samples.count) samples of silence") }
            return
        }
        let channels = decoded.channels
        var best = -1.0
        var bestOffset = 0
        for frames in [0, 384, -384, 576, -576, 1152, -1152, 2304, -2304] {
            let p = Self.psnr(reference, decoded.samples, offset: frames * channels)
            if p > best { best = p; bestOffset = frames }
        }
        if let exception = Self.mp3Exceptions[vector] {
            print("\(vector): \(format1(best)) dB (exception, listed at \(format1(exception.psnr)) dB: \(exception.reason))")
            #expect(best < 96, "\(vector): \(format1(best)) dB: it passes now, remove the exception")
            #expect(abs(best - exception.psnr) <= 1, "\(vector): \(format1(best)) dB, the exception says \(format1(exception.psnr)) dB: stale")
            return
        }
        #expect(best >= 96, "\(vector): PSNR \(format1(best)) dB at offset \(bestOffset) frames; \(decoded.samples.count / channels) vs \(reference.count / channels) frames")
    }

    // MARK: FLAC: decoded samples match the STREAMINFO MD5

    static let flacRows: [(file: String, bps: Int, md5: String)] = {
        guard let root = Corpus.root, let bytes = Corpus.read(root + "/flac-test-files/streaminfo_md5_check.tsv") else { return [] }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").dropFirst()
        return lines.compactMap { line in
            let c = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard c.count >= 7, c[6] == "MATCH", let bps = Int(c[1]) else { return nil }
            let file = "flac-test-files/" + c[0]
            return Corpus.audioFiles().contains(file) ? (file, bps, c[5]) : nil
        }
    }()

    @Test(arguments: flacRows.map(\.file))
    func flacDecodesToStreamInfoMD5(_ file: String) throws {
        let row = try #require(Self.flacRows.first { $0.file == file })
        let path = Corpus.root! + "/" + file
        let audio = try AudioFile(path: path)
        let channels = audio.dataFormat.channelsPerFrame
        let out = AudioStreamBasicDescription.linearPCM(sampleRate: audio.dataFormat.sampleRate, channels: channels, bitsPerChannel: 32)
        let converter = try AudioConverter(from: audio.dataFormat, to: out, magicCookie: audio.magicCookie)
        let buffer = try AudioPCMBuffer(format: out, frameCapacity: 16384)
        var md5 = MD5()
        var next: Int64 = 0
        let bytesPerSample = (row.bps + 7) / 8
        let shift = Int32(32 - row.bps)
        var chunk: [UInt8] = []
        while true {
            let n = try converter.fillComplexBuffer(buffer) { (wanted: Int) throws(AudioError) -> AudioPacketBatch? in
                guard next < audio.packetCount else { return nil }
                let batch = try audio.readPackets(next..<(next + Int64(max(wanted, 4))))
                next += Int64(batch.packetCount)
                return batch
            }
            if n == 0 { break }
            let samples = buffer.mutableBytes(0).bindMemory(to: Int32.self)
            chunk.removeAll(keepingCapacity: true)
            for i in 0..<(n * Int(channels)) {
                let v = samples[i] >> shift
                for b in 0..<bytesPerSample { chunk.append(UInt8(truncatingIfNeeded: v >> Int32(8 * b))) }
            }
            md5.update(chunk)
        }
        #expect(md5.hexDigest() == row.md5, "\(file)")
    }

    /// Float32 output (libavcodec's 16/32-bit integers scaled without libswresample): every
    /// sample of up to 24 bits is exact in Float32, so scaling back gives the STREAMINFO MD5.
    /// Interleaved and non-interleaved output alternate between files; every depth up to 24
    /// bits, and half of the 16-bit files (to keep the debug-build test short).
    @Test(arguments: flacRows.enumerated().filter { $0.element.bps <= 24 && ($0.element.bps != 16 || $0.offset % 4 < 2) }.map(\.element.file))
    func flacFloatDecodeGivesStreamInfoMD5(_ file: String) throws {
        let row = try #require(Self.flacRows.first { $0.file == file })
        let interleaved = (Self.flacRows.firstIndex { $0.file == file } ?? 0) % 2 == 0
        let audio = try AudioFile(path: Corpus.root! + "/" + file)
        let channels = Int(audio.dataFormat.channelsPerFrame)
        let out = AudioStreamBasicDescription.linearPCM(sampleRate: audio.dataFormat.sampleRate, channels: UInt32(channels),
                                                        bitsPerChannel: 32, isFloat: true, isInterleaved: interleaved)
        let converter = try AudioConverter(from: audio.dataFormat, to: out, magicCookie: audio.magicCookie)
        let buffer = try AudioPCMBuffer(format: out, frameCapacity: 3000)
        var md5 = MD5()
        var next: Int64 = 0
        var frames: Int64 = 0
        let bytesPerSample = (row.bps + 7) / 8
        let shift = Int32(32 - row.bps)
        var chunk: [UInt8] = []
        while true {
            let n = try converter.fillComplexBuffer(buffer) { (wanted: Int) throws(AudioError) -> AudioPacketBatch? in
                guard next < audio.packetCount else { return nil }
                let batch = try audio.readPackets(next..<(next + Int64(max(wanted, 1))))
                next += Int64(batch.packetCount)
                return batch
            }
            if n == 0 { break }
            frames += Int64(n)
            let planes = (0..<(interleaved ? 1 : channels)).map { buffer.mutableBytes($0).bindMemory(to: Float.self) }
            chunk.removeAll(keepingCapacity: true)
            for f in 0..<n {
                for c in 0..<channels {
                    let x = interleaved ? planes[0][f * channels + c] : planes[c][f]
                    let v = Int32(Double(x) * 2_147_483_648.0) >> shift
                    for b in 0..<bytesPerSample { chunk.append(UInt8(truncatingIfNeeded: v >> Int32(8 * b))) }
                }
            }
            md5.update(chunk)
        }
        #expect(frames == audio.packetTableInfo.map { $0.numberValidFrames } ?? frames)
        #expect(md5.hexDigest() == row.md5, "\(file) (\(interleaved ? "interleaved" : "non-interleaved"))")
    }
}

func format1(_ v: Double) -> String {
    let r = (v * 10).rounded() / 10
    return String(r)
}

/// Gapless trimming lands on the right samples: our trimmed decode lines up with FFmpeg's own
/// decode (which applies the container's gapless information) sample for sample.
@Suite struct GaplessAlignmentTests {
    static let files = [
        "ffmpeg-generated/m4a/aac_faststart.m4a", "ffmpeg-generated/m4a/opus_in_mp4.mp4",
        "ffmpeg-generated/m4a/mp3_in_mp4.mp4", "ffmpeg-generated/mp3/l3_vbr_q2_44k_st_xing.mp3",
        "ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3", "ffmpeg-generated/m4a/alac_st.m4a",
    ]

    @Test(.requires(TestResource.corpusMissing), arguments: files)
    func trimmedDecodeMatchesFFmpeg(_ file: String) throws {
        let root = try TestResource.corpusRoot()
        let path = root + "/" + file
        let ours = try decodeWithToolbox(path)
        let theirs = try #require(decodeWithFFmpeg(path))
        // FFmpeg 5.1 trims only the start from MP4 edit lists; compare what both have.
        let n = min(ours.samples.count, theirs.count)
        #expect(n > 0)
        let value = snr(Array(theirs[0..<n]), Array(ours.samples[0..<n]))
        #expect(value > 60, "\(file): SNR \(value) dB over \(n / ours.channels) frames")
    }
}

/// Files that hold the same PCM in different containers (equal MD5 of FFmpeg's float decode in
/// ffprobe.tsv) decode to identical samples with our parsers and converter.
@Suite struct SamePCMAcrossContainersTests {
    static let groups: [[String]] = {
        var byMD5: [String: [String]] = [:]
        for row in Corpus.probeRows() where row.file.hasPrefix("ffmpeg-generated/") {
            guard let md5 = row.columns["md5_f32le"], !md5.isEmpty else { continue }
            byMD5[md5, default: []].append(row.file)
        }
        return byMD5.values.filter { $0.count > 1 }.map { $0.sorted() }.sorted { $0[0] < $1[0] }
    }()

    @Test(.requires(TestResource.corpusMissing)) func thereAreGroupsToCompare() throws {
        _ = try TestResource.corpusRoot()
        #expect(Self.groups.count >= 2)
    }

    /// The argument lists come from the corpus: none may be empty where the corpus is.
    @Test(.requires(TestResource.corpusMissing)) func corpusListsAreNotEmpty() throws {
        _ = try TestResource.corpusRoot()
        #expect(!CorpusDecodeTests.mp3Vectors.isEmpty, "no minimp3 vectors")
        #expect(!CorpusDecodeTests.flacRows.isEmpty, "no FLAC rows with a matching STREAMINFO MD5")
    }

    @Test(arguments: groups)
    func decodeIdentically(_ group: [String]) throws {
        let root = try #require(Corpus.root)
        let first = try decodeWithToolbox(root + "/" + group[0])
        for other in group.dropFirst() {
            let decoded = try decodeWithToolbox(root + "/" + other)
            #expect(decoded.channels == first.channels && decoded.rate == first.rate, "\(other) vs \(group[0])")
            #expect(decoded.samples.count == first.samples.count, "\(other): \(decoded.samples.count) vs \(first.samples.count) samples in \(group[0])")
            #expect(decoded.samples == first.samples, "\(other) differs from \(group[0]) (SNR \(snr(first.samples, decoded.samples)) dB)")
        }
    }
}
