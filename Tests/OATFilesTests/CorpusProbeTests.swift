import OATCore
import OATFiles
import OATTestSupport
import Testing

/// `afinfo --json` facts must agree with FFmpeg's `ffprobe.tsv` on format, sample rate, channels
/// and packet count, except where listed below with the reason.
@Suite struct CorpusProbeTests {
    static let rows = Corpus.probeRows().filter { ($0.int("n_audio_streams") ?? 0) > 0 }

    /// Files where we knowingly differ from ffprobe, with why. A listed file must really differ
    /// (the test fails on a stale entry).
    /// Files in containers or codecs outside what the parsers read: they must fail with a clear
    /// error saying so.
    static let foreignExceptions: [String: String] = [
        "tinytag-samples/bitrate_present.spx": "Speex in Ogg: codec not supported (clear error)",
        "tinytag-samples/no_bitrate.spx": "Speex in Ogg: codec not supported (clear error)",
        "tinytag-samples/grouping.wma": "ASF/WMA container not supported (clear error)",
        "tinytag-samples/lossless.wma": "ASF/WMA container not supported (clear error)",
        "tinytag-samples/mp3_audio.asf": "ASF container not supported (clear error)",
        "tinytag-samples/multiple_values_images.wma": "ASF/WMA container not supported (clear error)",
        "tinytag-samples/silence.wma": "ASF/WMA container not supported (clear error)",
        "tinytag-samples/test2.wma": "ASF/WMA container not supported (clear error)",
        "tinytag-samples/wma_invalid_track_number.wma": "ASF/WMA container not supported (clear error)",
        "tinytag-samples/xmp_data.wma": "ASF/WMA container not supported (clear error)",
    ]

    static let exceptions: [String: String] = foreignExceptions
        .merging(mpegExceptions) { a, _ in a }
        .merging(pcmContainerExceptions) { a, _ in a }
        .merging(flacOggExceptions) { a, _ in a }
        .merging(mp4Exceptions) { a, _ in a }

    /// The format ID we report for an ffprobe codec name.
    static func expectedFormat(_ codec: String, profile: String) -> String? {
        switch codec {
        case "pcm_mulaw": return "ulaw"
        case "pcm_alaw": return "alaw"
        case _ where codec.hasPrefix("pcm_"): return "lpcm"
        case "mp3", "mp3float": return ".mp3"
        case "mp2", "mp2float": return ".mp2"
        case "mp1", "mp1float": return ".mp1"
        case "aac": return profile.contains("HE-AACv2") ? "aacp" : (profile.contains("HE") ? "aach" : "aac ")
        case "flac": return "flac"
        case "alac": return "alac"
        case "opus": return "opus"
        case "vorbis": return "vorb"
        case "adpcm_ima_qt": return "ima4"
        case "adpcm_ima_wav": return "ms\\x00\\x11"
        case "adpcm_ms": return "ms\\x00\\x02"
        default: return nil
        }
    }

    /// True for codecs whose ffprobe "packets" are blocks of frames chosen by the demuxer, not
    /// codec packets: compare frames instead.
    static func isBlockPCM(_ codec: String) -> Bool { codec.hasPrefix("pcm_") }

    /// The argument list comes from the corpus: it must not be empty where the corpus is.
    @Test(.requires(TestResource.corpusMissing)) func corpusListIsNotEmpty() throws {
        _ = try TestResource.corpusRoot()
        #expect(!Self.rows.isEmpty, "no ffprobe rows with audio")
    }

    @Test(arguments: rows.map(\.file))
    func agreesWithFFprobe(_ file: String) throws {
        let row = try #require(Self.rows.first { $0.file == file })
        let c = row.columns
        var problems: [String] = []
        do {
            let audio = try AudioFile(path: Corpus.root! + "/" + file)
            let s = AudioFileSummary(audio)
            let codec = c["codec_name"] ?? ""
            if let want = Self.expectedFormat(codec, profile: c["profile"] ?? ""), want != s.format.formatID.description {
                problems.append("format \(s.format.formatID) vs ffprobe \(codec) (\(want))")
            }
            if let rate = row.int("sample_rate"), Double(rate) != s.format.sampleRate {
                problems.append("sample rate \(s.format.sampleRate) vs \(rate)")
            }
            if let ch = row.int("channels"), UInt32(ch) != s.format.channelsPerFrame {
                problems.append("channels \(s.format.channelsPerFrame) vs \(ch)")
            }
            if Self.isBlockPCM(codec) {
                if let frames = row.int("decoded_frames"), Int64(frames) != s.totalFrames {
                    problems.append("frames \(s.totalFrames) vs decoded \(frames)")
                }
            } else if let packets = row.int("nb_read_packets"), Int64(packets) != s.packetCount {
                problems.append("packets \(s.packetCount) vs \(packets)")
            }
        } catch {
            problems.append("cannot open: \(error)")
        }
        if let reason = Self.exceptions[file] {
            #expect(!problems.isEmpty, "\(file) is listed as an exception (\(reason)) but agrees with ffprobe")
            if Self.foreignExceptions[file] != nil {
                #expect(problems.first?.contains("not supported") == true, "\(file): \(problems)")
            }
        } else {
            #expect(problems.isEmpty, "\(file): \(problems.joined(separator: "; "))")
        }
    }
}
