import OATCore
import COATFFmpeg

/// How a stream description maps onto a libavcodec decoder.
struct CodecChoice {
    var id: AVCodecID
    /// Bytes per coded block for block-based codecs (ADPCM), else 0.
    var blockAlign: Int32 = 0
    /// Bits per coded sample where the decoder needs it (ADPCM, PCM).
    var bitsPerCodedSample: Int32 = 0
}

enum CodecMapping {
    /// The libavcodec decoder for `format`, or nil when none fits.
    static func decoder(for format: AudioStreamBasicDescription) -> CodecChoice? {
        switch format.formatID {
        case .mpegLayer1: return CodecChoice(id: AV_CODEC_ID_MP1)
        case .mpegLayer2: return CodecChoice(id: AV_CODEC_ID_MP2)
        case .mpegLayer3: return CodecChoice(id: AV_CODEC_ID_MP3)
        case .mpeg4AAC, .mpeg4AAC_HE, .mpeg4AAC_HE_V2: return CodecChoice(id: AV_CODEC_ID_AAC)
        case .appleLossless: return CodecChoice(id: AV_CODEC_ID_ALAC)
        case .flac: return CodecChoice(id: AV_CODEC_ID_FLAC)
        case .opus: return CodecChoice(id: AV_CODEC_ID_OPUS)
        case .vorbis: return CodecChoice(id: AV_CODEC_ID_VORBIS)
        case .ulaw: return CodecChoice(id: AV_CODEC_ID_PCM_MULAW, bitsPerCodedSample: 8)
        case .alaw: return CodecChoice(id: AV_CODEC_ID_PCM_ALAW, bitsPerCodedSample: 8)
        case .appleIMA4:
            return CodecChoice(id: AV_CODEC_ID_ADPCM_IMA_QT, blockAlign: Int32(34 * format.channelsPerFrame), bitsPerCodedSample: 4)
        case .dviIntelIMA:
            return CodecChoice(id: AV_CODEC_ID_ADPCM_IMA_WAV, blockAlign: Int32(format.bytesPerPacket), bitsPerCodedSample: 4)
        case .microsoftADPCM:
            return CodecChoice(id: AV_CODEC_ID_ADPCM_MS, blockAlign: Int32(format.bytesPerPacket), bitsPerCodedSample: 4)
        case .linearPCM: return pcmDecoder(for: format)
        default: return nil
        }
    }

    /// libavcodec's PCM decoder for interleaved linear PCM, when its sample container is one
    /// libavcodec knows (1, 2, 3, 4 or 8 bytes; 20-bit in 3 bytes decodes as 24-bit).
    static func pcmDecoder(for f: AudioStreamBasicDescription) -> CodecChoice? {
        guard f.isInterleaved, f.channelsPerFrame > 0 else { return nil }
        let bytes = Int(f.bytesPerFrame / f.channelsPerFrame)
        let be = f.isBigEndian
        let id: AVCodecID
        if f.isFloat {
            switch bytes {
            case 4: id = be ? AV_CODEC_ID_PCM_F32BE : AV_CODEC_ID_PCM_F32LE
            case 8: id = be ? AV_CODEC_ID_PCM_F64BE : AV_CODEC_ID_PCM_F64LE
            default: return nil
            }
        } else if f.isSignedInteger {
            switch bytes {
            case 1: id = AV_CODEC_ID_PCM_S8
            case 2: id = be ? AV_CODEC_ID_PCM_S16BE : AV_CODEC_ID_PCM_S16LE
            case 3: id = be ? AV_CODEC_ID_PCM_S24BE : AV_CODEC_ID_PCM_S24LE
            case 4: id = be ? AV_CODEC_ID_PCM_S32BE : AV_CODEC_ID_PCM_S32LE
            case 8: id = be ? AV_CODEC_ID_PCM_S64BE : AV_CODEC_ID_PCM_S64LE
            default: return nil
            }
        } else {
            switch bytes {
            case 1: id = AV_CODEC_ID_PCM_U8
            case 2: id = be ? AV_CODEC_ID_PCM_U16BE : AV_CODEC_ID_PCM_U16LE
            case 3: id = be ? AV_CODEC_ID_PCM_U24BE : AV_CODEC_ID_PCM_U24LE
            case 4: id = be ? AV_CODEC_ID_PCM_U32BE : AV_CODEC_ID_PCM_U32LE
            default: return nil
            }
        }
        return CodecChoice(id: id, blockAlign: Int32(f.bytesPerFrame), bitsPerCodedSample: Int32(bytes * 8))
    }

    /// The libavutil sample format of a PCM destination description.
    static func sampleFormat(for f: AudioStreamBasicDescription) -> AVSampleFormat? {
        guard f.isPCM, !f.isBigEndian || f.bitsPerChannel == 8 else { return nil }
        let planar = !f.isInterleaved
        let bytes = f.isInterleaved ? f.bytesPerFrame / max(1, f.channelsPerFrame) : f.bytesPerFrame
        guard bytes * 8 == f.bitsPerChannel else { return nil }
        if f.isFloat {
            switch f.bitsPerChannel {
            case 32: return planar ? AV_SAMPLE_FMT_FLTP : AV_SAMPLE_FMT_FLT
            case 64: return planar ? AV_SAMPLE_FMT_DBLP : AV_SAMPLE_FMT_DBL
            default: return nil
            }
        }
        switch (f.bitsPerChannel, f.isSignedInteger) {
        case (8, false): return planar ? AV_SAMPLE_FMT_U8P : AV_SAMPLE_FMT_U8
        case (16, true): return planar ? AV_SAMPLE_FMT_S16P : AV_SAMPLE_FMT_S16
        case (32, true): return planar ? AV_SAMPLE_FMT_S32P : AV_SAMPLE_FMT_S32
        case (64, true): return planar ? AV_SAMPLE_FMT_S64P : AV_SAMPLE_FMT_S64
        default: return nil
        }
    }

    /// libavutil's text for an error code.
    static func errorText(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        av_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
