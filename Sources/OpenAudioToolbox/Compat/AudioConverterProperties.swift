// Audio Toolbox–compatible AudioConverter.h properties: AudioConverterGetPropertyInfo,
// AudioConverterGetProperty, AudioConverterSetProperty (the encoder capability properties
// and the channel map are in ConverterPropertiesCompat.swift).

import OATCore
import OATConversion
#if canImport(Glibc)
import Glibc
#endif

private enum ConverterValue { case uint32(UInt32), asbd(AudioStreamBasicDescription), prime(AudioConverterPrimeInfo), bytes([UInt8]) }

private func converterProperty(_ box: CompatConverter, _ id: AudioConverterPropertyID) -> ConverterValue? {
    if box.isEncoder, let e = try? box.makeEncoder() {
        switch id {
        case kAudioConverterCurrentOutputStreamDescription: return .asbd(e.outputFormat)
        case kAudioConverterPrimeInfo: return .prime(e.primeInfo)
        case kAudioConverterCompressionMagicCookie: return .bytes(e.magicCookie ?? [])
        case kAudioConverterEncodeBitRate: return .uint32(UInt32(clamping: e.bitRate))
        case kAudioConverterPropertyMaximumOutputPacketSize, kAudioConverterPropertyMinimumOutputBufferSize:
            return .uint32(e.outputFormat.bytesPerPacket > 0 ? e.outputFormat.bytesPerPacket : maximumPacketSize(e.outputFormat))
        case kAudioConverterPropertyMaximumInputPacketSize, kAudioConverterPropertyMinimumInputBufferSize:
            return .uint32(box.source.bytesPerPacket)
        default: break
        }
    }
    switch id {
    case kAudioConverterCurrentInputStreamDescription: return .asbd(box.clientSource)
    case kAudioConverterCurrentOutputStreamDescription: return .asbd(box.clientDestination)
    case kAudioConverterPrimeInfo: return .prime(box.converter?.primeInfo ?? box.primeInfo)
    case kAudioConverterSampleRateConverterQuality: return .uint32(box.quality.rawValue)
    case kAudioConverterDecompressionMagicCookie: return .bytes(box.cookie ?? [])
    case kAudioConverterPropertyMaximumOutputPacketSize, kAudioConverterPropertyMinimumOutputBufferSize: return .uint32(box.destination.bytesPerPacket)
    case kAudioConverterPropertyMaximumInputPacketSize, kAudioConverterPropertyMinimumInputBufferSize:
        return .uint32(box.source.bytesPerPacket > 0 ? box.source.bytesPerPacket : maximumPacketSize(box.source))
    default: return nil
    }
}

/// Size of a property and whether it can be set (Apple's `AudioConverterGetPropertyInfo`).
@discardableResult
public func AudioConverterGetPropertyInfo(_ inAudioConverter: AudioConverterRef, _ inPropertyID: AudioConverterPropertyID,
                                          _ outSize: UnsafeMutablePointer<UInt32>?, _ outWritable: UnsafeMutablePointer<DarwinBoolean>?) -> OSStatus {
    guard let box = CompatConverter.from(inAudioConverter) else { return kAudio_ParamError }
    if let extra = extraConverterProperty(box, inPropertyID) {
        guard let bytes = extra else { return kAudioConverterErr_PropertyNotSupported }
        outSize?.pointee = UInt32(bytes.count)
        outWritable?.pointee = DarwinBoolean(isWritableExtraConverterProperty(box, inPropertyID))
        return noErr
    }
    guard let v = converterProperty(box, inPropertyID) else { return kAudioConverterErr_PropertyNotSupported }
    switch v {
    case .uint32: outSize?.pointee = 4
    case .asbd: outSize?.pointee = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
    case .prime: outSize?.pointee = UInt32(MemoryLayout<AudioConverterPrimeInfo>.size)
    case .bytes(let b): outSize?.pointee = UInt32(b.count)
    }
    let writable = [kAudioConverterPrimeInfo, kAudioConverterSampleRateConverterQuality, kAudioConverterDecompressionMagicCookie].contains(inPropertyID)
        || (box.isEncoder && inPropertyID == kAudioConverterEncodeBitRate)
    outWritable?.pointee = DarwinBoolean(writable)
    return noErr
}

/// Reads a property (Apple's `AudioConverterGetProperty`): current stream descriptions, prime
/// info, quality, decompression cookie, packet sizes.
@discardableResult
public func AudioConverterGetProperty(_ inAudioConverter: AudioConverterRef, _ inPropertyID: AudioConverterPropertyID,
                                      _ ioPropertyDataSize: UnsafeMutablePointer<UInt32>, _ outPropertyData: UnsafeMutableRawPointer) -> OSStatus {
    guard let box = CompatConverter.from(inAudioConverter) else { return kAudio_ParamError }
    if let extra = extraConverterProperty(box, inPropertyID) {
        guard let bytes = extra else { return kAudioConverterErr_PropertyNotSupported }
        return writeBytes(bytes, ioPropertyDataSize, outPropertyData, sizeError: kAudioConverterErr_BadPropertySizeError)
    }
    guard let v = converterProperty(box, inPropertyID) else { return kAudioConverterErr_PropertyNotSupported }
    let e = kAudioConverterErr_BadPropertySizeError
    switch v {
    case .uint32(let x): return writeProperty(x, ioPropertyDataSize, outPropertyData, sizeError: e)
    case .asbd(let x): return writeProperty(x, ioPropertyDataSize, outPropertyData, sizeError: e)
    case .prime(let x): return writeProperty(x, ioPropertyDataSize, outPropertyData, sizeError: e)
    case .bytes(let b): return writeBytes(b, ioPropertyDataSize, outPropertyData, sizeError: e)
    }
}

/// Sets a property (Apple's `AudioConverterSetProperty`): `DecompressionMagicCookie` (restarts
/// the decoder), `PrimeInfo`, `SampleRateConverterQuality`, `SampleRateConverterComplexity`,
/// `PropertyDithering`, `ChannelMap`, the encoder's `EncodeBitRate` and
/// `kAudioCodecPropertyBitRateControlMode`; the prime method is accepted and ignored.
@discardableResult
public func AudioConverterSetProperty(_ inAudioConverter: AudioConverterRef, _ inPropertyID: AudioConverterPropertyID,
                                      _ inPropertyDataSize: UInt32, _ inPropertyData: UnsafeRawPointer) -> OSStatus {
    guard let box = CompatConverter.from(inAudioConverter) else { return kAudio_ParamError }
    if let status = setExtraConverterProperty(box, inPropertyID, inPropertyDataSize, inPropertyData) { return status }
    switch inPropertyID {
    case kAudioConverterEncodeBitRate where box.isEncoder:
        guard inPropertyDataSize >= 4 else { return kAudioConverterErr_BadPropertySizeError }
        let old = box.encodeBitRate
        return box.remakeEncoder({ box.encodeBitRate = inPropertyData.loadUnaligned(as: UInt32.self) }, undo: { box.encodeBitRate = old })
    case kAudioConverterDecompressionMagicCookie:
        let cookie = Array(UnsafeRawBufferPointer(start: inPropertyData, count: Int(inPropertyDataSize)))
        do throws(AudioError) {
            _ = try AudioConverter(from: box.source, to: box.destination, magicCookie: cookie)
        } catch {
            return error.osStatus ?? kAudioConverterErr_FormatNotSupported
        }
        box.cookie = cookie
        box.converter = nil
        return noErr
    case kAudioConverterPrimeInfo:
        guard inPropertyDataSize >= UInt32(MemoryLayout<AudioConverterPrimeInfo>.size) else { return kAudioConverterErr_BadPropertySizeError }
        box.primeInfo = inPropertyData.loadUnaligned(as: AudioConverterPrimeInfo.self)
        box.converter?.primeInfo = box.primeInfo
        return noErr
    case kAudioConverterSampleRateConverterQuality:
        guard inPropertyDataSize >= 4 else { return kAudioConverterErr_BadPropertySizeError }
        let raw = inPropertyData.loadUnaligned(as: UInt32.self)
        box.quality = SampleRateConverterQuality.allCases.last(where: { $0.rawValue <= raw }) ?? .min
        box.applySettings()
        return noErr
    case kAudioConverterPrimeMethod:
        return inPropertyDataSize >= 4 ? noErr : kAudioConverterErr_BadPropertySizeError
    default:
        return kAudioConverterErr_PropertyNotSupported
    }
}
