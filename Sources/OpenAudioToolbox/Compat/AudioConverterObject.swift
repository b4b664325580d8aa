// The object behind an AudioConverterRef (CompatConverter) and the big-endian PCM helpers
// shared with ExtAudioFile.

import OATCore
import OATConversion
#if canImport(Glibc)
import Glibc
#endif

// MARK: - The object behind an AudioConverterRef

final class CompatConverter {
    /// The formats the Swift converter works in: the client's, native-endian.
    let source: AudioStreamBasicDescription
    let destination: AudioStreamBasicDescription
    /// The formats as the client gave them (big-endian PCM keeps its flag).
    let clientSource: AudioStreamBasicDescription
    let clientDestination: AudioStreamBasicDescription
    /// Bytes per sample to reverse on the way in (big-endian PCM source) and out (big-endian PCM
    /// destination); 0 when the side is native-endian.
    let sourceSwap: Int
    let destinationSwap: Int
    var cookie: [UInt8]?
    var converter: AudioConverter?
    var primeInfo = AudioConverterPrimeInfo()
    var quality = SampleRateConverterQuality.medium
    /// `kAudioConverterSampleRateConverterComplexity` and `kAudioConverterPropertyDithering`.
    var complexity = SampleRateConverterComplexity.normal
    var dither = DitherAlgorithm.none
    /// `kAudioCodecPropertyBitRateControlMode` (nil: the encoder's default).
    var bitRateControlMode: UInt32?
    var output: AudioPCMBuffer?
    /// Encoding (PCM to a compressed format): the encoder, the PCM converter in front of it when
    /// the client's PCM is not the encoder's, packets encoded but not yet handed out, and whether
    /// the input has ended.
    var encoder: AudioEncoder?
    var encoderInput: AudioConverter?
    var encoderBuffer: AudioPCMBuffer?
    var pendingPackets: [(bytes: ArraySlice<UInt8>, frames: UInt32)] = []
    var inputEnded = false
    var encodeBitRate: UInt32?
    /// `kAudioConverterChannelMap`: the input channel for each output channel (-1 silence).
    var channelMap: [Int]?
    /// The converter ``AudioConverterConvertComplexBuffer(_:_:_:_:)`` uses for planar buffers.
    var planar: AudioConverter?

    /// True when this converter encodes.
    var isEncoder: Bool { !destination.isPCM && source.isPCM }

    init(source: AudioStreamBasicDescription, destination: AudioStreamBasicDescription) {
        clientSource = source
        clientDestination = destination
        (self.source, sourceSwap) = normalised(source)
        (self.destination, destinationSwap) = normalised(destination)
    }

    /// The encoder, created on first use with the bit rate set so far.
    func makeEncoder() throws(AudioError) -> AudioEncoder {
        if let encoder { return encoder }
        var settings = AudioEncoderSettings()
        if let encodeBitRate, encodeBitRate > 0 { settings.bitRate = Int(encodeBitRate) }
        if let mode = bitRateControlMode { settings.strategy = BitRateStrategy(controlMode: mode) }
        let depth = source.isFloat ? 24 : Int(min(max(source.bitsPerChannel, 16), 24))
        let e = try AudioEncoder(to: destination, sourceBitDepth: depth, settings: settings)
        if !e.inputFormat.isSameLayout(as: source) || channelMap != nil {
            // Planar client buffers are interleaved before this converter (see fillEncoded).
            var from = source
            if !source.isInterleaved && source.channelsPerFrame > 1 {
                from.formatFlags.remove(.isNonInterleaved)
                from.bytesPerFrame = source.bytesPerFrame * source.channelsPerFrame
                from.bytesPerPacket = from.bytesPerFrame * max(1, source.framesPerPacket)
            }
            let input = try AudioConverter(from: from, to: e.inputFormat)
            input.channelMap = channelMap
            configure(input)
            encoderInput = input
        }
        encoderBuffer = try AudioPCMBuffer(format: e.inputFormat, frameCapacity: 4096)
        encoder = e
        return e
    }

    /// Gives a Swift converter this one's resampler and dither settings.
    func configure(_ c: AudioConverter) {
        c.sampleRateConverterQuality = quality
        c.sampleRateConverterComplexity = complexity
        c.dither = dither
    }

    /// Hands the resampler and dither settings to the converters made so far (the decoder or
    /// PCM converter, and the encoder's input converter) after one of them changed.
    func applySettings() {
        converter.map(configure)
        encoderInput.map(configure)
    }

    /// Makes the encoder again after a setting changed (`change` applies it, `undo` reverts it
    /// when the encoder refuses). Only before any input: an encoder holding frames cannot change.
    func remakeEncoder(_ change: () -> Void, undo: () -> Void) -> OSStatus {
        guard pendingPackets.isEmpty, (encoder?.inputFrameCount ?? 0) == 0 else { return kAudioConverterErr_OperationNotSupported }
        let oldEncoder = encoder, oldInput = encoderInput
        change()
        encoder = nil
        encoderInput = nil
        do throws(AudioError) {
            _ = try makeEncoder()
        } catch {
            undo()
            encoder = oldEncoder
            encoderInput = oldInput
            return kAudioConverterErr_FormatNotSupported
        }
        return noErr
    }

    /// Queues the packets of an encoded batch for hand-out.
    func queue(_ batch: AudioPacketBatch) {
        let fpp = encoder?.outputFormat.framesPerPacket ?? destination.framesPerPacket
        if batch.packetDescriptions.isEmpty {
            let size = batch.packetCount > 0 ? batch.data.count / batch.packetCount : 0
            for i in 0..<batch.packetCount {
                pendingPackets.append((batch.data[(i * size)..<((i + 1) * size)], fpp))
            }
        } else {
            for d in batch.packetDescriptions {
                let start = Int(d.mStartOffset), end = start + Int(d.mDataByteSize)
                guard start >= 0, end <= batch.data.count else { continue }
                pendingPackets.append((batch.data[start..<end], d.mVariableFramesInPacket > 0 ? d.mVariableFramesInPacket : fpp))
            }
        }
    }

    static func from(_ ref: AudioConverterRef?) -> CompatConverter? {
        CompatHandles.object(ref, as: CompatConverter.self)
    }

    /// The handle naming this converter (set by ``register()``).
    var ref: AudioConverterRef { handle! }
    private var handle: AudioConverterRef?

    /// Gives this converter its handle.
    func register() -> AudioConverterRef {
        handle = CompatHandles.make(self)
        return ref
    }

    /// True when the client hands in one buffer per channel (deinterleaved PCM): the decode
    /// path interleaves them for the Swift converter, which takes interleaved PCM.
    var planarSource: Bool { source.isPCM && !source.isInterleaved && source.channelsPerFrame > 1 }

    /// `source` as the Swift converter sees it: interleaved when the client's is planar.
    var converterSource: AudioStreamBasicDescription {
        planarSource ? interleavedTwin(source) : source
    }

    /// The Swift converter, created on first use with the cookie set so far.
    func make() throws(AudioError) -> AudioConverter {
        if let converter { return converter }
        let c = try AudioConverter(from: converterSource, to: destination, magicCookie: cookie)
        c.primeInfo = primeInfo
        configure(c)
        c.channelMap = channelMap
        converter = c
        return c
    }
}

/// The format the Swift converter works in: native-endian PCM, with the packed flag implied when
/// the sample bits fill their bytes (Apple accepts it missing); and the bytes per sample to
/// reverse between the two when `f` is big-endian PCM wider than a byte (else 0).
func normalised(_ f: AudioStreamBasicDescription) -> (format: AudioStreamBasicDescription, swap: Int) {
    var f = f
    var swap = 0
    if f.isPCM, f.channelsPerFrame > 0 {
        let perSample = f.isInterleaved ? f.bytesPerFrame / f.channelsPerFrame : f.bytesPerFrame
        if perSample * 8 == f.bitsPerChannel { f.formatFlags.insert(.isPacked) }
        if f.formatFlags.contains(.isBigEndian) {
            f.formatFlags.remove(.isBigEndian)
            if perSample > 1 { swap = Int(perSample) }
        }
    }
    return (f, swap)
}

/// Reverses the bytes of each `width`-byte sample in `bytes` bytes at `p` (big-endian PCM to
/// native and back).
func reverseSamples(_ p: UnsafeMutableRawPointer, bytes: Int, width: Int) {
    guard width > 1 else { return }
    let b = p.assumingMemoryBound(to: UInt8.self)
    var i = 0
    while i + width <= bytes {
        var lo = i, hi = i + width - 1
        while lo < hi {
            let t = b[lo]; b[lo] = b[hi]; b[hi] = t
            lo += 1; hi -= 1
        }
        i += width
    }
}
