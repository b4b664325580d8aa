// Audio Toolbox–compatible AudioConverter API (decoding and PCM conversion), built on the
// Swift ``AudioConverter``.

import OATCore
import OATConversion
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Types

/// A converter (Apple's `AudioConverterRef`, an opaque pointer).
public typealias AudioConverterRef = OpaquePointer
/// A converter property identifier (Apple's `AudioConverterPropertyID`).
public typealias AudioConverterPropertyID = UInt32

/// Supplies input packets to ``AudioConverterFillComplexBuffer(_:_:_:_:_:_:)`` (Apple's
/// `AudioConverterComplexInputDataProc`, a C function type as on Apple: pass a global function or a
/// closure that captures nothing, and reach your state through the user data). Set `*ioNumberDataPackets` to the packets supplied (0 at the
/// end), point `ioData`'s buffers at them and, for variable-size packets, `*outDataPacketDescription`
/// at their descriptions. The data must stay valid until the next call.
public typealias AudioConverterComplexInputDataProc = @convention(c) (AudioConverterRef, UnsafeMutablePointer<UInt32>, UnsafeMutablePointer<AudioBufferList>,
                                                       UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                                                       UnsafeMutableRawPointer?) -> OSStatus

// MARK: - Constants

/// `UInt32` (`'mibs'`).
public let kAudioConverterPropertyMinimumInputBufferSize: AudioConverterPropertyID = fourCC("mibs")
/// `UInt32` (`'mobs'`).
public let kAudioConverterPropertyMinimumOutputBufferSize: AudioConverterPropertyID = fourCC("mobs")
/// `UInt32` (`'xips'`).
public let kAudioConverterPropertyMaximumInputPacketSize: AudioConverterPropertyID = fourCC("xips")
/// `UInt32` (`'xops'`).
public let kAudioConverterPropertyMaximumOutputPacketSize: AudioConverterPropertyID = fourCC("xops")
/// `UInt32` sample-rate converter quality (`'srcq'`).
public let kAudioConverterSampleRateConverterQuality: AudioConverterPropertyID = fourCC("srcq")
/// `UInt32` sample-rate converter complexity (`'srca'`): accepted and ignored.
public let kAudioConverterSampleRateConverterComplexity: AudioConverterPropertyID = fourCC("srca")
/// `UInt32` prime method (`'prmm'`): accepted and ignored.
public let kAudioConverterPrimeMethod: AudioConverterPropertyID = fourCC("prmm")
/// `AudioConverterPrimeInfo` (`'prim'`).
public let kAudioConverterPrimeInfo: AudioConverterPropertyID = fourCC("prim")
/// Magic cookie bytes for the decoder (`'dmgc'`).
public let kAudioConverterDecompressionMagicCookie: AudioConverterPropertyID = fourCC("dmgc")
/// Encoder cookie (`'cmgc'`): not supported (no encoders).
public let kAudioConverterCompressionMagicCookie: AudioConverterPropertyID = fourCC("cmgc")
/// `AudioStreamBasicDescription` (`'acid'`).
public let kAudioConverterCurrentInputStreamDescription: AudioConverterPropertyID = fourCC("acid")
/// `AudioStreamBasicDescription` (`'acod'`).
public let kAudioConverterCurrentOutputStreamDescription: AudioConverterPropertyID = fourCC("acod")
/// Encode bit rate (`'brat'`): not supported (no encoders).
public let kAudioConverterEncodeBitRate: AudioConverterPropertyID = fourCC("brat")

/// Quality: max.
public let kAudioConverterQuality_Max: UInt32 = 0x7F
/// Quality: high.
public let kAudioConverterQuality_High: UInt32 = 0x60
/// Quality: medium.
public let kAudioConverterQuality_Medium: UInt32 = 0x40
/// Quality: low.
public let kAudioConverterQuality_Low: UInt32 = 0x20
/// Quality: min.
public let kAudioConverterQuality_Min: UInt32 = 0

/// Format not supported (`'fmt?'`).
public let kAudioConverterErr_FormatNotSupported = OSStatus(bitPattern: fourCC("fmt?"))
/// Operation not supported (`'op??'`).
public let kAudioConverterErr_OperationNotSupported: OSStatus = 0x6F70_3F3F
/// Property not supported (`'prop'`).
public let kAudioConverterErr_PropertyNotSupported = OSStatus(bitPattern: fourCC("prop"))
/// Invalid input size (`'insz'`).
public let kAudioConverterErr_InvalidInputSize = OSStatus(bitPattern: fourCC("insz"))
/// Invalid output size (`'otsz'`).
public let kAudioConverterErr_InvalidOutputSize = OSStatus(bitPattern: fourCC("otsz"))
/// Unspecified (`'what'`).
public let kAudioConverterErr_UnspecifiedError = OSStatus(bitPattern: fourCC("what"))
/// Bad property size (`'!siz'`).
public let kAudioConverterErr_BadPropertySizeError = OSStatus(bitPattern: fourCC("!siz"))
/// Packet descriptions needed (`'!pkd'`).
public let kAudioConverterErr_RequiresPacketDescriptionsError = OSStatus(bitPattern: fourCC("!pkd"))
/// Input rate out of range (`'!isr'`).
public let kAudioConverterErr_InputSampleRateOutOfRange = OSStatus(bitPattern: fourCC("!isr"))
/// Output rate out of range (`'!osr'`).
public let kAudioConverterErr_OutputSampleRateOutOfRange = OSStatus(bitPattern: fourCC("!osr"))

// MARK: - Functions

/// Creates a converter (Apple's `AudioConverterNew`): from any decodable format or PCM to PCM
/// (decoding, format, rate and channel conversion), or from PCM to a compressed format
/// (encoding through `AudioEncoder`: AAC-LC, ALAC, FLAC, Opus, MP3, mu-law, A-law). Other
/// compressed-to-compressed pairs return `kAudioConverterErr_FormatNotSupported`.
@discardableResult
public func AudioConverterNew(_ inSourceFormat: UnsafePointer<AudioStreamBasicDescription>,
                              _ inDestinationFormat: UnsafePointer<AudioStreamBasicDescription>,
                              _ outAudioConverter: UnsafeMutablePointer<AudioConverterRef?>) -> OSStatus {
    let src = normalised(inSourceFormat.pointee).format, dst = normalised(inDestinationFormat.pointee).format
    if !dst.isPCM {
        guard src.isPCM else { return kAudioConverterErr_FormatNotSupported }
        let box = CompatConverter(source: inSourceFormat.pointee, destination: inDestinationFormat.pointee)
        do throws(AudioError) {
            _ = try box.makeEncoder()
        } catch {
            return error.code == .unsupportedFormat ? kAudioConverterErr_FormatNotSupported : (error.osStatus ?? kAudioConverterErr_FormatNotSupported)
        }
        outAudioConverter.pointee = box.register()
        return noErr
    }
    do {
        // Planar PCM sources convert through ConvertComplexBuffer, which interleaves them first.
        _ = try AudioConverter(from: src.isPCM ? interleavedTwin(src) : src, to: dst)
    } catch {
        // A decoder that needs its cookie opens once the cookie is set.
        if !(error.osStatus == 0x2164_6174 && !src.isPCM) { return error.osStatus ?? kAudioConverterErr_FormatNotSupported }
    }
    outAudioConverter.pointee = CompatConverter(source: inSourceFormat.pointee, destination: inDestinationFormat.pointee).register()
    return noErr
}

/// Disposes of a converter (Apple's `AudioConverterDispose`). A converter already disposed of
/// (a second call, or a stale handle) returns `kAudio_ParamError`.
@discardableResult
public func AudioConverterDispose(_ inAudioConverter: AudioConverterRef) -> OSStatus {
    guard CompatHandles.remove(inAudioConverter, as: CompatConverter.self) != nil else { return kAudio_ParamError }
    return noErr
}

/// Forgets buffered data and decoder state, ready for discontinuous input (Apple's
/// `AudioConverterReset`).
@discardableResult
public func AudioConverterReset(_ inAudioConverter: AudioConverterRef) -> OSStatus {
    guard let box = CompatConverter.from(inAudioConverter) else { return kAudio_ParamError }
    box.converter?.reset()
    if box.isEncoder {
        // A new encoder for the next stream (the old one's priming and state belong to the last).
        box.encoder = nil
        box.encoderInput = nil
        box.pendingPackets = []
        box.inputEnded = false
    }
    return noErr
}

/// Converts packets pulled from `inInputDataProc` into `outOutputData` (Apple's
/// `AudioConverterFillComplexBuffer`). `*ioOutputDataPacketSize` is the room in packets (frames
/// for PCM) on entry and the packets produced on return. An input proc error stops the call,
/// which returns that error with what was converted so far; 0 packets with `noErr` is the end of
/// the input (call ``AudioConverterReset(_:)`` before reusing the converter).
@discardableResult
public func AudioConverterFillComplexBuffer(_ inAudioConverter: AudioConverterRef,
                                            _ inInputDataProc: AudioConverterComplexInputDataProc,
                                            _ inInputDataProcUserData: UnsafeMutableRawPointer?,
                                            _ ioOutputDataPacketSize: UnsafeMutablePointer<UInt32>,
                                            _ outOutputData: UnsafeMutablePointer<AudioBufferList>,
                                            _ outPacketDescription: UnsafeMutablePointer<AudioStreamPacketDescription>?) -> OSStatus {
    guard let box = CompatConverter.from(inAudioConverter) else { return kAudio_ParamError }
    if box.isEncoder {
        return fillEncoded(box, inInputDataProc, inInputDataProcUserData, ioOutputDataPacketSize, outOutputData, outPacketDescription)
    }
    let dst = box.destination
    let outList = UnsafeMutableAudioBufferListPointer(outOutputData)
    guard outList.count >= dst.bufferCount, dst.bytesPerFrame > 0 else { return kAudioConverterErr_InvalidOutputSize }
    // Frames that fit: the request, bounded by every output buffer's size.
    var frames = Int(ioOutputDataPacketSize.pointee)
    for i in 0..<dst.bufferCount { frames = min(frames, Int(outList[i].mDataByteSize / dst.bytesPerFrame)) }
    guard frames > 0 else { ioOutputDataPacketSize.pointee = 0; return noErr }

    let converter: AudioConverter
    let output: AudioPCMBuffer
    do throws(AudioError) {
        converter = try box.make()
        if let o = box.output, o.frameCapacity >= frames { output = o } else {
            output = try AudioPCMBuffer(format: dst, frameCapacity: frames)
            box.output = output
        }
    } catch {
        return error.osStatus ?? kAudioConverterErr_FormatNotSupported
    }

    var procStatus = noErr
    let ref: AudioConverterRef = box.ref
    let src = box.source
    var produced = 0
    do throws(AudioError) {
        produced = try converter.fillComplexBuffer(output, maxFrames: frames) { (wanted: Int) throws(AudioError) -> AudioPacketBatch? in
            let list = AudioBufferList.allocate(maximumBuffers: max(1, src.bufferCount))
            defer { free(list.unsafeMutablePointer) }
            var packets = UInt32(max(1, wanted))
            var descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?
            let status = inInputDataProc(ref, &packets, list.unsafeMutablePointer, &descriptions, inInputDataProcUserData)
            if status != noErr {
                procStatus = status
                throw AudioError(.invalidState, component: "AudioConverter", "input proc returned \(status)", osStatus: status)
            }
            guard packets > 0, list.count > 0, let data = list[0].mData else { return nil }
            let size = Int(list[0].mDataByteSize)
            var batch = AudioPacketBatch()
            if box.planarSource {
                // One buffer per channel: interleave them (the frames every buffer holds).
                let channels = Int(src.channelsPerFrame), width = Int(src.bytesPerFrame)
                guard list.count >= channels, width > 0 else {
                    throw AudioError(.invalidArgument, component: "AudioConverter", "deinterleaved input needs \(channels) buffers, got \(list.count)",
                                     osStatus: kAudio_ParamError)
                }
                var frames = Int(packets)
                for c in 0..<channels {
                    guard list[c].mData != nil else { return nil }
                    frames = min(frames, Int(list[c].mDataByteSize) / width)
                }
                var interleaved = [UInt8](repeating: 0, count: frames * channels * width)
                interleaved.withUnsafeMutableBytes { out in
                    for c in 0..<channels {
                        let plane = UnsafeRawPointer(list[c].mData!)
                        for f in 0..<frames {
                            (out.baseAddress! + (f * channels + c) * width).copyMemory(from: plane + f * width, byteCount: width)
                        }
                    }
                }
                batch.data = interleaved
                packets = UInt32(frames)
                guard frames > 0 else { return nil }
            } else {
                batch.data = Array(UnsafeRawBufferPointer(start: data, count: size))
            }
            if box.sourceSwap > 1 {
                batch.data.withUnsafeMutableBytes { reverseSamples($0.baseAddress!, bytes: $0.count, width: box.sourceSwap) }
            }
            batch.packetCount = Int(packets)
            if let descriptions, !(src.bytesPerPacket > 0) {
                batch.packetDescriptions = Array(UnsafeBufferPointer(start: descriptions, count: Int(packets)))
            } else if src.bytesPerPacket == 0 {
                throw AudioError(.invalidArgument, component: "AudioConverter", "variable-size packets need descriptions",
                                 osStatus: kAudioConverterErr_RequiresPacketDescriptionsError)
            }
            return batch
        }
    } catch {
        // What was decoded before the error is still delivered.
        produced = converter.read(into: output, maxFrames: frames)
        if procStatus == noErr { procStatus = error.osStatus ?? kAudioConverterErr_UnspecifiedError }
    }
    for i in 0..<dst.bufferCount {
        let bytes = produced * Int(dst.bytesPerFrame)
        if bytes > 0, let outData = outList[i].mData {
            outData.copyMemory(from: output.mutableBytes(i).baseAddress!, byteCount: bytes)
            reverseSamples(outData, bytes: bytes, width: box.destinationSwap)
        }
        var b = outList[i]
        b.mDataByteSize = UInt32(bytes)
        outList[i] = b
    }
    ioOutputDataPacketSize.pointee = UInt32(produced)
    return procStatus
}

/// The encoding half of ``AudioConverterFillComplexBuffer(_:_:_:_:_:_:)``: pulls PCM from the
/// input proc, encodes it, and hands out whole packets (with descriptions) that fit the buffer.
private func fillEncoded(_ box: CompatConverter, _ proc: AudioConverterComplexInputDataProc, _ userData: UnsafeMutableRawPointer?,
                         _ ioPackets: UnsafeMutablePointer<UInt32>, _ outData: UnsafeMutablePointer<AudioBufferList>,
                         _ outDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) -> OSStatus {
    let outList = UnsafeMutableAudioBufferListPointer(outData)
    guard outList.count >= 1, let outBytes = outList[0].mData else { return kAudioConverterErr_InvalidOutputSize }
    let capacity = Int(outList[0].mDataByteSize)
    let wanted = Int(ioPackets.pointee)
    guard wanted > 0 else { ioPackets.pointee = 0; return noErr }
    let encoder: AudioEncoder
    do throws(AudioError) {
        encoder = try box.makeEncoder()
    } catch {
        return error.osStatus ?? kAudioConverterErr_FormatNotSupported
    }
    if outDescriptions == nil && encoder.outputFormat.bytesPerPacket == 0 {
        return kAudioConverterErr_RequiresPacketDescriptionsError
    }
    let src = box.source
    let ref: AudioConverterRef = box.ref
    var status = noErr
    // Encode until enough packets are waiting or the input ends.
    while box.pendingPackets.count < wanted && !box.inputEnded {
        let list = AudioBufferList.allocate(maximumBuffers: max(1, src.bufferCount))
        defer { free(list.unsafeMutablePointer) }
        var frames = UInt32(max(1024, Int(encoder.outputFormat.framesPerPacket)))
        var descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?
        status = proc(ref, &frames, list.unsafeMutablePointer, &descriptions, userData)
        if status != noErr { break }
        // Big-endian PCM from the client: native-endian copies (the client's buffers stay as given).
        var swapped: [UnsafeMutableRawPointer] = []
        defer { for p in swapped { p.deallocate() } }
        if box.sourceSwap > 1 && frames > 0 {
            for i in 0..<list.count {
                guard let p = list[i].mData else { continue }
                let n = Int(list[i].mDataByteSize)
                let copy = UnsafeMutableRawPointer.allocate(byteCount: max(1, n), alignment: 16)
                copy.copyMemory(from: p, byteCount: n)
                reverseSamples(copy, bytes: n, width: box.sourceSwap)
                swapped.append(copy)
                list[i].mData = copy
            }
        }
        do throws(AudioError) {
            if frames == 0 || list.count == 0 || list[0].mData == nil {
                box.inputEnded = true
                box.queue(try encoder.finish())
                break
            }
            let n = Int(frames)
            let pcm: AudioPCMBuffer
            if let b = box.encoderBuffer, b.frameCapacity >= n { pcm = b } else {
                pcm = try AudioPCMBuffer(format: encoder.inputFormat, frameCapacity: n)
                box.encoderBuffer = pcm
            }
            if let input = box.encoderInput {
                // Client PCM to the encoder's layout; planar clients give one buffer per channel.
                if src.isInterleaved || src.channelsPerFrame <= 1 {
                    try input.decode(packet: UnsafeRawBufferPointer(start: list[0].mData, count: min(Int(list[0].mDataByteSize), n * Int(src.bytesPerFrame))))
                } else {
                    var interleaved = [UInt8](repeating: 0, count: n * Int(src.bytesPerFrame) * Int(src.channelsPerFrame))
                    let w = Int(src.bytesPerFrame), c = Int(src.channelsPerFrame)
                    for ch in 0..<min(c, list.count) {
                        guard let p = list[ch].mData else { continue }
                        let plane = UnsafeRawBufferPointer(start: p, count: min(Int(list[ch].mDataByteSize), n * w))
                        for f in 0..<(plane.count / w) {
                            for b in 0..<w { interleaved[(f * c + ch) * w + b] = plane[f * w + b] }
                        }
                    }
                    var failure: AudioError?
                    interleaved.withUnsafeBytes { raw in
                        do throws(AudioError) { try input.decode(packet: raw) } catch { failure = error }
                    }
                    if let failure { throw failure }
                }
                while true {
                    let got = input.read(into: pcm, maxFrames: pcm.frameCapacity)
                    if got == 0 { break }
                    box.queue(try encoder.encode(pcm))
                }
            } else {
                for i in 0..<pcm.bufferCount where i < list.count {
                    let bytes = min(Int(list[i].mDataByteSize), pcm.mutableBytes(i).count)
                    if let p = list[i].mData { pcm.mutableBytes(i).baseAddress!.copyMemory(from: p, byteCount: bytes) }
                }
                pcm.frameLength = n
                box.queue(try encoder.encode(pcm))
            }
        } catch {
            status = error.osStatus ?? kAudioConverterErr_UnspecifiedError
            break
        }
    }
    // Hand out whole packets that fit.
    var used = 0
    var count = 0
    while count < wanted, let first = box.pendingPackets.first, used + first.bytes.count <= capacity {
        first.bytes.withUnsafeBytes { (outBytes + used).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        outDescriptions?[count] = AudioStreamPacketDescription(mStartOffset: Int64(used),
                                                               mVariableFramesInPacket: encoder.outputFormat.framesPerPacket == 0 ? first.frames : 0,
                                                               mDataByteSize: UInt32(first.bytes.count))
        used += first.bytes.count
        count += 1
        box.pendingPackets.removeFirst()
    }
    if count == 0, let first = box.pendingPackets.first, first.bytes.count > capacity {
        ioPackets.pointee = 0
        return kAudioConverterErr_InvalidOutputSize
    }
    var b = outList[0]
    b.mDataByteSize = UInt32(used)
    outList[0] = b
    ioPackets.pointee = UInt32(count)
    return status
}

/// Converts a buffer of PCM to PCM at the same sample rate (Apple's
/// `AudioConverterConvertBuffer`).
@discardableResult
public func AudioConverterConvertBuffer(_ inAudioConverter: AudioConverterRef, _ inInputDataSize: UInt32, _ inInputData: UnsafeRawPointer,
                                        _ ioOutputDataSize: UnsafeMutablePointer<UInt32>, _ outOutputData: UnsafeMutableRawPointer) -> OSStatus {
    guard let box = CompatConverter.from(inAudioConverter) else { return kAudio_ParamError }
    let src = box.source, dst = box.destination
    guard src.isPCM, dst.isPCM, src.isInterleaved, dst.isInterleaved, src.sampleRate == dst.sampleRate, src.bytesPerFrame > 0 else {
        return kAudioConverterErr_OperationNotSupported
    }
    let frames = Int(inInputDataSize / src.bytesPerFrame)
    guard Int(ioOutputDataSize.pointee) >= frames * Int(dst.bytesPerFrame) else { return kAudioConverterErr_InvalidOutputSize }
    do throws(AudioError) {
        let converter = try box.make()
        converter.reset()
        if box.sourceSwap > 1 {
            var native = Array(UnsafeRawBufferPointer(start: inInputData, count: frames * Int(src.bytesPerFrame)))
            native.withUnsafeMutableBytes { reverseSamples($0.baseAddress!, bytes: $0.count, width: box.sourceSwap) }
            var failure: AudioError?
            native.withUnsafeBytes { raw in
                do throws(AudioError) { try converter.decode(packet: raw) } catch { failure = error }
            }
            if let failure { throw failure }
        } else {
            try converter.decode(packet: UnsafeRawBufferPointer(start: inInputData, count: frames * Int(src.bytesPerFrame)))
        }
        try converter.endOfInput()
        let out = try AudioPCMBuffer(format: dst, frameCapacity: max(1, frames))
        let n = converter.read(into: out, maxFrames: frames)
        outOutputData.copyMemory(from: out.mutableBytes(0).baseAddress!, byteCount: n * Int(dst.bytesPerFrame))
        reverseSamples(outOutputData, bytes: n * Int(dst.bytesPerFrame), width: box.destinationSwap)
        ioOutputDataSize.pointee = UInt32(n * Int(dst.bytesPerFrame))
        converter.reset()
        return noErr
    } catch {
        return error.osStatus ?? kAudioConverterErr_UnspecifiedError
    }
}

extension AudioStreamBasicDescription {
    /// True when PCM buffers in `other` can be fed to something expecting `self` byte for byte.
    func isSameLayout(as other: AudioStreamBasicDescription) -> Bool {
        isPCM && other.isPCM && sampleRate == other.sampleRate && channelsPerFrame == other.channelsPerFrame
            && bitsPerChannel == other.bitsPerChannel && bytesPerFrame == other.bytesPerFrame
            && isFloat == other.isFloat && isInterleaved == other.isInterleaved
            && formatFlags.contains(.isBigEndian) == other.formatFlags.contains(.isBigEndian)
    }
}

/// A four-character code (Apple's `OSType`).
public typealias OSType = UInt32

/// Identifies a codec implementation (Apple's `AudioClassDescription`): its type (`aenc`/`adec`),
/// subtype (the format ID) and manufacturer.
public struct AudioClassDescription: Hashable, Sendable {
    /// `kAudioEncoderComponentType` or `kAudioDecoderComponentType`.
    public var mType: OSType
    /// The format the codec handles (e.g. `kAudioFormatMPEG4AAC`).
    public var mSubType: OSType
    /// The codec's manufacturer (e.g. `kAppleSoftwareAudioCodecManufacturer`).
    public var mManufacturer: OSType
    /// Creates a zeroed description.
    public init() {
        mType = 0
        mSubType = 0
        mManufacturer = 0
    }
    /// Creates a description.
    public init(mType: OSType, mSubType: OSType, mManufacturer: OSType) {
        self.mType = mType
        self.mSubType = mSubType
        self.mManufacturer = mManufacturer
    }
}

/// `'aenc'`: an encoder.
public let kAudioEncoderComponentType = OSType(fourCC("aenc"))
/// `'adec'`: a decoder.
public let kAudioDecoderComponentType = OSType(fourCC("adec"))
/// `'appl'`: Apple's software codecs (here: the libavcodec/libmpg123 codecs).
public let kAppleSoftwareAudioCodecManufacturer = OSType(fourCC("appl"))
/// `'aphw'`: hardware codecs (none here; a request for them falls back to software).
public let kAppleHardwareAudioCodecManufacturer = OSType(fourCC("aphw"))

/// Creates a converter with a codec chosen from `inClassDescriptions` (Apple's
/// `AudioConverterNewSpecific`). Different: there is one implementation per format here, so the
/// descriptions are checked for size only and the converter is the one ``AudioConverterNew(_:_:_:)``
/// makes.
@discardableResult
public func AudioConverterNewSpecific(_ inSourceFormat: UnsafePointer<AudioStreamBasicDescription>,
                                      _ inDestinationFormat: UnsafePointer<AudioStreamBasicDescription>,
                                      _ inNumberClassDescriptions: UInt32,
                                      _ inClassDescriptions: UnsafePointer<AudioClassDescription>,
                                      _ outAudioConverter: UnsafeMutablePointer<AudioConverterRef?>) -> OSStatus {
    AudioConverterNew(inSourceFormat, inDestinationFormat, outAudioConverter)
}

/// Converts `inNumberPCMFrames` frames of PCM between buffer lists at the same sample rate
/// (Apple's `AudioConverterConvertComplexBuffer`): interleaved (one buffer) or non-interleaved
/// (one buffer per channel) on either side; the channel map applies.
@discardableResult
public func AudioConverterConvertComplexBuffer(_ inAudioConverter: AudioConverterRef, _ inNumberPCMFrames: UInt32,
                                               _ inInputData: UnsafePointer<AudioBufferList>,
                                               _ outOutputData: UnsafeMutablePointer<AudioBufferList>) -> OSStatus {
    guard let box = CompatConverter.from(inAudioConverter) else { return kAudio_ParamError }
    let src = box.source, dst = box.destination
    if !src.isInterleaved || !dst.isInterleaved { return convertComplexPlanar(box, Int(inNumberPCMFrames), inInputData, outOutputData) }
    guard inInputData.pointee.mNumberBuffers >= 1, outOutputData.pointee.mNumberBuffers >= 1 else {
        return kAudioConverterErr_OperationNotSupported
    }
    guard let input = inInputData.pointee.mBuffers.mData, let output = outOutputData.pointee.mBuffers.mData else { return kAudio_ParamError }
    let inBytes = inNumberPCMFrames * src.bytesPerFrame
    guard inInputData.pointee.mBuffers.mDataByteSize >= inBytes else { return kAudioConverterErr_InvalidInputSize }
    var outSize = outOutputData.pointee.mBuffers.mDataByteSize
    let status = AudioConverterConvertBuffer(inAudioConverter, inBytes, input, &outSize, output)
    if status == noErr { outOutputData.pointee.mBuffers.mDataByteSize = outSize }
    return status
}

// MARK: - Preparing, real-time variant

/// Loads the codecs now, so that creating converters later does not wait for them (Apple's
/// `AudioConverterPrepare`, an optional warm-up): here it loads FFmpeg's libraries, which
/// converters otherwise load on first use. With a completion block the loading runs on another
/// thread and the block gets `noErr`, or `kAudioConverterErr_FormatNotSupported` when the
/// libraries cannot be loaded; without one the call loads them before returning. `inFlags` and
/// `ioReserved` are reserved (pass 0 and nil).
public func AudioConverterPrepare(_ inFlags: UInt32, _ ioReserved: UnsafeMutableRawPointer?, _ inCompletionBlock: ((OSStatus) -> Void)?) {
    guard let inCompletionBlock else {
        _ = AudioConverter.prepareCodecs()
        return
    }
    let block = UncheckedSendable(inCompletionBlock)
    DispatchQueue.global(qos: .utility).async {
        block.value(AudioConverter.prepareCodecs() == nil ? noErr : kAudioConverterErr_FormatNotSupported)
    }
}

/// Supplies input to ``AudioConverterFillComplexBufferRealtimeSafe(_:_:_:_:_:_:)`` (Apple's
/// `AudioConverterComplexInputDataProcRealtimeSafe`): the same parameters as
/// ``AudioConverterComplexInputDataProc``.
public typealias AudioConverterComplexInputDataProcRealtimeSafe = @convention(c) (AudioConverterRef, UnsafeMutablePointer<UInt32>, UnsafeMutablePointer<AudioBufferList>,
                                                                   UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                                                                   UnsafeMutableRawPointer?) -> OSStatus

/// ``AudioConverterFillComplexBuffer(_:_:_:_:_:_:)`` for conversions Apple calls real-time safe
/// (Apple's `AudioConverterFillComplexBufferRealtimeSafe`): PCM to PCM (interleaving, channel
/// count, sample rate). Other conversions (decoding, encoding) return
/// `kAudioConverterErr_OperationNotSupported`, as on Apple. Different: the PCM conversion here
/// is the same code as `AudioConverterFillComplexBuffer`, which is not free of allocation.
@discardableResult
public func AudioConverterFillComplexBufferRealtimeSafe(_ inAudioConverter: AudioConverterRef,
                                                        _ inInputDataProc: AudioConverterComplexInputDataProcRealtimeSafe,
                                                        _ inInputDataProcUserData: UnsafeMutableRawPointer?,
                                                        _ ioOutputDataPacketSize: UnsafeMutablePointer<UInt32>,
                                                        _ outOutputData: UnsafeMutablePointer<AudioBufferList>,
                                                        _ outPacketDescription: UnsafeMutablePointer<AudioStreamPacketDescription>?) -> OSStatus {
    guard let box = CompatConverter.from(inAudioConverter) else { return kAudio_ParamError }
    guard box.clientSource.formatID == .linearPCM, box.clientDestination.formatID == .linearPCM else {
        ioOutputDataPacketSize.pointee = 0
        return kAudioConverterErr_OperationNotSupported
    }
    return AudioConverterFillComplexBuffer(inAudioConverter, inInputDataProc, inInputDataProcUserData, ioOutputDataPacketSize,
                                           outOutputData, outPacketDescription)
}
