// Audio Toolbox–compatible C-style API: AudioFormat.h (format information services) as Swift sees
// Apple's SDK. Answers come from what the parsers and codecs of this package know: an ASBD completed
// from a format ID and magic cookie (AAC AudioSpecificConfig or ES_Descriptor, ALAC, Opus), an MPEG
// audio frame header, the codec lists, and the channel-layout tables of OATCore.

import OATCore
import OATConversion

/// A format property identifier (Apple's `AudioFormatPropertyID`).
public typealias AudioFormatPropertyID = UInt32

/// A format and its magic cookie, the specifier of `kAudioFormatProperty_FormatList` (Apple's
/// `AudioFormatInfo`).
public struct AudioFormatInfo {
    /// The format (at least `mFormatID`).
    public var mASBD: AudioStreamBasicDescription
    /// The magic cookie, or nil.
    public var mMagicCookie: UnsafeRawPointer?
    /// The cookie's size in bytes.
    public var mMagicCookieSize: UInt32
    /// A zeroed value.
    public init() { self.init(mASBD: AudioStreamBasicDescription(), mMagicCookie: nil, mMagicCookieSize: 0) }
    /// Apple's memberwise initialiser.
    public init(mASBD: AudioStreamBasicDescription, mMagicCookie: UnsafeRawPointer?, mMagicCookieSize: UInt32) {
        self.mASBD = mASBD
        self.mMagicCookie = mMagicCookie
        self.mMagicCookieSize = mMagicCookieSize
    }
}

// MARK: - Property IDs (Apple's values)

/// In/out `AudioStreamBasicDescription`, specifier the magic cookie (or nil): completes the
/// description (`'fmti'`).
public let kAudioFormatProperty_FormatInfo: AudioFormatPropertyID = fourCC("fmti")
/// `CFString` name of the format in the ASBD specifier (`'fnam'`).
public let kAudioFormatProperty_FormatName: AudioFormatPropertyID = fourCC("fnam")
/// `[AudioFormatID]` formats that can be encoded to (`'acof'`).
public let kAudioFormatProperty_EncodeFormatIDs: AudioFormatPropertyID = fourCC("acof")
/// `[AudioFormatID]` formats that can be decoded (`'acif'`).
public let kAudioFormatProperty_DecodeFormatIDs: AudioFormatPropertyID = fourCC("acif")
/// `[AudioFormatListItem]` for the `AudioFormatInfo` specifier (`'flst'`).
public let kAudioFormatProperty_FormatList: AudioFormatPropertyID = fourCC("flst")
/// `AudioStreamBasicDescription` from an ES_Descriptor specifier (`'essc'`).
public let kAudioFormatProperty_ASBDFromESDS: AudioFormatPropertyID = fourCC("essc")
/// `AudioChannelLayout` from an ES_Descriptor specifier (`'escl'`): not provided.
public let kAudioFormatProperty_ChannelLayoutFromESDS: AudioFormatPropertyID = fourCC("escl")
/// `[AudioFormatListItem]` output formats (`'ofls'`): not provided.
public let kAudioFormatProperty_OutputFormatList: AudioFormatPropertyID = fourCC("ofls")
/// `UInt32` index of the first playable item of an `AudioFormatListItem` array specifier (`'fpfl'`).
public let kAudioFormatProperty_FirstPlayableFormatFromList: AudioFormatPropertyID = fourCC("fpfl")
/// `UInt32` 1 if the format in the ASBD specifier has variable-size packets (`'fvbr'`).
public let kAudioFormatProperty_FormatIsVBR: AudioFormatPropertyID = fourCC("fvbr")
/// `UInt32` 1 if the format needs packet descriptions from the container (`'fexf'`).
public let kAudioFormatProperty_FormatIsExternallyFramed: AudioFormatPropertyID = fourCC("fexf")
/// `UInt32` 1 if packets depend on earlier ones (`'fdep'`).
public let kAudioFormatProperty_FormatEmploysDependentPackets: AudioFormatPropertyID = fourCC("fdep")
/// `UInt32` 1 if the format is encrypted (`'cryp'`): always 0 here.
public let kAudioFormatProperty_FormatIsEncrypted: AudioFormatPropertyID = fourCC("cryp")
/// `[AudioClassDescription]` encoders (`'aven'`): not provided.
public let kAudioFormatProperty_Encoders: AudioFormatPropertyID = fourCC("aven")
/// `[AudioClassDescription]` decoders (`'avde'`): not provided.
public let kAudioFormatProperty_Decoders: AudioFormatPropertyID = fourCC("avde")
/// `[AudioValueRange]` encoder bit rates (`'aebr'`): not provided.
public let kAudioFormatProperty_AvailableEncodeBitRates: AudioFormatPropertyID = fourCC("aebr")
/// `[AudioValueRange]` encoder sample rates (`'aesr'`): not provided.
public let kAudioFormatProperty_AvailableEncodeSampleRates: AudioFormatPropertyID = fourCC("aesr")
/// `[AudioChannelLayoutTag]` encoder layouts (`'aecl'`): not provided.
public let kAudioFormatProperty_AvailableEncodeChannelLayoutTags: AudioFormatPropertyID = fourCC("aecl")
/// `[UInt32]` encoder channel counts (`'avnc'`): not provided.
public let kAudioFormatProperty_AvailableEncodeNumberChannels: AudioFormatPropertyID = fourCC("avnc")
/// `AudioStreamBasicDescription` from the bytes of an MPEG audio packet (`'admp'`).
public let kAudioFormatProperty_ASBDFromMPEGPacket: AudioFormatPropertyID = fourCC("admp")
/// `UInt32` bitmap of a layout tag (`'bmtg'`).
public let kAudioFormatProperty_BitmapForLayoutTag: AudioFormatPropertyID = fourCC("bmtg")
/// Matrix mix map (`'mmap'`): not provided.
public let kAudioFormatProperty_MatrixMixMap: AudioFormatPropertyID = fourCC("mmap")
/// Channel map (`'chmp'`): not provided.
public let kAudioFormatProperty_ChannelMap: AudioFormatPropertyID = fourCC("chmp")
/// `UInt32` channels of the `AudioChannelLayout` specifier (`'nchm'`).
public let kAudioFormatProperty_NumberOfChannelsForLayout: AudioFormatPropertyID = fourCC("nchm")
/// `UInt32` 1 if the two layouts of the specifier are equivalent (`'cheq'`): not provided.
public let kAudioFormatProperty_AreChannelLayoutsEquivalent: AudioFormatPropertyID = fourCC("cheq")
/// Layout hash (`'chha'`): not provided.
public let kAudioFormatProperty_ChannelLayoutHash: AudioFormatPropertyID = fourCC("chha")
/// Validates a layout (`'vacl'`): not provided.
public let kAudioFormatProperty_ValidateChannelLayout: AudioFormatPropertyID = fourCC("vacl")
/// `AudioChannelLayout` with channel descriptions for the `AudioChannelLayoutTag` specifier (`'cmpl'`).
public let kAudioFormatProperty_ChannelLayoutForTag: AudioFormatPropertyID = fourCC("cmpl")
/// `AudioChannelLayoutTag` for a layout (`'cmpt'`): not provided.
public let kAudioFormatProperty_TagForChannelLayout: AudioFormatPropertyID = fourCC("cmpt")
/// `CFString` name of the `AudioChannelLayout` specifier (`'lonm'`).
public let kAudioFormatProperty_ChannelLayoutName: AudioFormatPropertyID = fourCC("lonm")
/// `CFString` short name of the layout (`'lsnm'`).
public let kAudioFormatProperty_ChannelLayoutSimpleName: AudioFormatPropertyID = fourCC("lsnm")
/// `AudioChannelLayout` with channel descriptions for the `UInt32` bitmap specifier (`'cmpb'`).
public let kAudioFormatProperty_ChannelLayoutForBitmap: AudioFormatPropertyID = fourCC("cmpb")
/// Channel name (`'cnam'`): not provided.
public let kAudioFormatProperty_ChannelName: AudioFormatPropertyID = fourCC("cnam")
/// Channel short name (`'csnm'`): not provided.
public let kAudioFormatProperty_ChannelShortName: AudioFormatPropertyID = fourCC("csnm")
/// Layout tags for a channel count (`'tagc'`): not provided.
public let kAudioFormatProperty_TagsForNumberOfChannels: AudioFormatPropertyID = fourCC("tagc")
/// Panning coefficients (`'panm'`): specifier an ``AudioPanningInfo``, value one `Float32` per
/// output channel.
public let kAudioFormatProperty_PanningMatrix: AudioFormatPropertyID = fourCC("panm")
/// Balance/fade coefficients (`'balf'`): specifier an ``AudioBalanceFade``, value one `Float32`
/// per channel of its layout.
public let kAudioFormatProperty_BalanceFade: AudioFormatPropertyID = fourCC("balf")
/// ID3 tag size (`'id3s'`): not provided.
public let kAudioFormatProperty_ID3TagSize: AudioFormatPropertyID = fourCC("id3s")
/// ID3 tag to dictionary (`'id3d'`): not provided.
public let kAudioFormatProperty_ID3TagToDictionary: AudioFormatPropertyID = fourCC("id3d")

// MARK: - Errors (Apple's values)

/// Unspecified error (`'what'`).
public let kAudioFormatUnspecifiedError: OSStatus = OSStatus(bitPattern: fourCC("what"))
/// The property is not supported (`'prop'`).
public let kAudioFormatUnsupportedPropertyError: OSStatus = OSStatus(bitPattern: fourCC("prop"))
/// The property data size is wrong (`'!siz'`).
public let kAudioFormatBadPropertySizeError: OSStatus = OSStatus(bitPattern: fourCC("!siz"))
/// The specifier size is wrong (`'!spc'`).
public let kAudioFormatBadSpecifierSizeError: OSStatus = OSStatus(bitPattern: fourCC("!spc"))
/// The format is not known (`'!fmt'`).
public let kAudioFormatUnknownFormatError: OSStatus = OSStatus(bitPattern: fourCC("!fmt"))

// MARK: - Functions

/// The size of a property's value (Apple's `AudioFormatGetPropertyInfo`).
@discardableResult
public func AudioFormatGetPropertyInfo(_ inPropertyID: AudioFormatPropertyID, _ inSpecifierSize: UInt32,
                                       _ inSpecifier: UnsafeRawPointer?,
                                       _ outPropertyDataSize: UnsafeMutablePointer<UInt32>) -> OSStatus {
    if inPropertyID == kAudioFormatProperty_FormatInfo {
        outPropertyDataSize.pointee = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        return noErr
    }
    switch FormatServices.value(inPropertyID, specifier(inSpecifierSize, inSpecifier)) {
    case .success(let v): outPropertyDataSize.pointee = UInt32(v.size); return noErr
    case .failure(let e): return e.status
    }
}

/// A property's value (Apple's `AudioFormatGetProperty`). With `kAudioFormatProperty_FormatInfo`
/// `outPropertyData` is in/out: an ASBD with at least `mFormatID`, completed from the magic cookie
/// given as specifier (nil for formats without one).
@discardableResult
public func AudioFormatGetProperty(_ inPropertyID: AudioFormatPropertyID, _ inSpecifierSize: UInt32,
                                   _ inSpecifier: UnsafeRawPointer?, _ ioPropertyDataSize: UnsafeMutablePointer<UInt32>?,
                                   _ outPropertyData: UnsafeMutableRawPointer?) -> OSStatus {
    let spec = specifier(inSpecifierSize, inSpecifier)
    let result: Result<FormatServices.Value, FormatServices.Failure>
    if inPropertyID == kAudioFormatProperty_FormatInfo {
        guard let outPropertyData, let ioPropertyDataSize,
              ioPropertyDataSize.pointee >= UInt32(MemoryLayout<AudioStreamBasicDescription>.size) else {
            return kAudioFormatBadPropertySizeError
        }
        let input = outPropertyData.loadUnaligned(as: AudioStreamBasicDescription.self)
        result = FormatServices.complete(input, cookie: spec).map { .asbd($0) }
    } else {
        result = FormatServices.value(inPropertyID, spec)
    }
    switch result {
    case .failure(let e): return e.status
    case .success(let v):
        guard let ioPropertyDataSize else { return kAudio_ParamError }
        return v.write(ioPropertyDataSize, outPropertyData)
    }
}

private func specifier(_ size: UInt32, _ p: UnsafeRawPointer?) -> [UInt8] {
    guard let p, size > 0 else { return [] }
    return Array(UnsafeRawBufferPointer(start: p, count: Int(size)))
}

// MARK: - The answers

enum FormatServices {
    struct Failure: Error { let status: OSStatus }

    enum Value {
        case uint32(UInt32)
        case asbd(AudioStreamBasicDescription)
        case ids([UInt32])
        case items([AudioFormatListItem])
        case string(String)
        case bytes([UInt8])

        var size: Int {
            switch self {
            case .uint32: return 4
            case .asbd: return MemoryLayout<AudioStreamBasicDescription>.size
            case .ids(let a): return a.count * 4
            case .items(let a): return a.count * MemoryLayout<AudioFormatListItem>.stride
            case .string: return MemoryLayout<CFString?>.size
            case .bytes(let b): return b.count
            }
        }

        func write(_ ioSize: UnsafeMutablePointer<UInt32>, _ out: UnsafeMutableRawPointer?) -> OSStatus {
            switch self {
            case .ids(let a): return writeArray(a, ioSize, out)
            case .items(let a): return writeArray(a, ioSize, out)
            default: break
            }
            guard let out else { ioSize.pointee = UInt32(size); return noErr }
            guard ioSize.pointee >= UInt32(size) else { return kAudioFormatBadPropertySizeError }
            switch self {
            case .uint32(let v): out.storeBytes(of: v, as: UInt32.self)
            case .asbd(let v): out.assumingMemoryBound(to: AudioStreamBasicDescription.self).pointee = v
            case .string(let s): out.assumingMemoryBound(to: Optional<CFString>.self).pointee = s
            case .bytes(let b): b.withUnsafeBytes { out.copyMemory(from: $0.baseAddress!, byteCount: b.count) }
            case .ids, .items: break
            }
            ioSize.pointee = UInt32(size)
            return noErr
        }
    }

    static let decodable: [UInt32] = [kAudioFormatLinearPCM, kAudioFormatMPEGLayer1, kAudioFormatMPEGLayer2, kAudioFormatMPEGLayer3,
                                      kAudioFormatMPEG4AAC, kAudioFormatMPEG4AAC_HE, kAudioFormatMPEG4AAC_HE_V2, kAudioFormatAppleLossless,
                                      kAudioFormatFLAC, kAudioFormatOpus, kAudioFormatULaw, kAudioFormatALaw, kAudioFormatAppleIMA4,
                                      OATCore.AudioFormatCode.vorbis.rawValue, OATCore.AudioFormatCode.microsoftADPCM.rawValue,
                                      OATCore.AudioFormatCode.dviIntelIMA.rawValue]

    /// Formats whose packets need descriptions from the container.
    static let externallyFramed: Set<UInt32> = [kAudioFormatMPEG4AAC, kAudioFormatMPEG4AAC_HE, kAudioFormatMPEG4AAC_HE_V2,
                                                kAudioFormatMPEG4AAC_LD, kAudioFormatMPEG4AAC_ELD, kAudioFormatAppleLossless,
                                                kAudioFormatFLAC, kAudioFormatOpus, OATCore.AudioFormatCode.vorbis.rawValue]

    static func asbdSpecifier(_ spec: [UInt8]) -> Result<AudioStreamBasicDescription, Failure> {
        guard spec.count >= MemoryLayout<AudioStreamBasicDescription>.size else { return .failure(Failure(status: kAudioFormatBadSpecifierSizeError)) }
        return .success(spec.withUnsafeBytes { $0.loadUnaligned(as: AudioStreamBasicDescription.self) })
    }

    static func uint32Specifier(_ spec: [UInt8]) -> Result<UInt32, Failure> {
        guard spec.count >= 4 else { return .failure(Failure(status: kAudioFormatBadSpecifierSizeError)) }
        return .success(spec.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) })
    }

    /// The tag, bitmap and labels of a C `AudioChannelLayout` specifier.
    static func layoutSpecifier(_ spec: [UInt8]) -> Result<OATCore.ChannelLayout, Failure> {
        let header = MemoryLayout<AudioChannelLayout>.offset(of: \AudioChannelLayout.mChannelDescriptions)!
        guard spec.count >= header else { return .failure(Failure(status: kAudioFormatBadSpecifierSizeError)) }
        return spec.withUnsafeBytes { raw in
            let tag = raw.loadUnaligned(as: UInt32.self)
            let bitmap = raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
            let count = Int(raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
            let stride = MemoryLayout<AudioChannelDescription>.stride
            var labels: [OATCore.ChannelLabel] = []
            if tag == kAudioChannelLayoutTag_UseChannelDescriptions {
                guard count <= (spec.count - header) / stride else { return .failure(Failure(status: kAudioFormatBadSpecifierSizeError)) }
                labels = (0..<count).map { OATCore.ChannelLabel(rawValue: raw.loadUnaligned(fromByteOffset: header + $0 * stride, as: UInt32.self)) }
            }
            return .success(OATCore.ChannelLayout(tag: OATCore.ChannelLayoutTag(rawValue: tag),
                                                         bitmap: AudioChannelBitmap(rawValue: bitmap), channelLabels: labels))
        }
    }

    static func channels(_ layout: OATCore.ChannelLayout) -> UInt32 {
        switch layout.tag {
        case .useChannelDescriptions: return UInt32(layout.channelLabels.count)
        case .useChannelBitmap: return UInt32(layout.bitmap.rawValue.nonzeroBitCount)
        default: return layout.tag.channelCount
        }
    }

    static func value(_ id: AudioFormatPropertyID, _ spec: [UInt8]) -> Result<Value, Failure> {
        switch id {
        case kAudioFormatProperty_EncodeFormatIDs:
            return .success(.ids([kAudioFormatLinearPCM] + AudioEncoder.encodableFormats.map(\.rawValue)))
        case kAudioFormatProperty_DecodeFormatIDs:
            return .success(.ids(decodable))
        case kAudioFormatProperty_PanningMatrix:
            guard spec.count >= MemoryLayout<AudioPanningInfo>.size else { return .failure(Failure(status: kAudioFormatBadSpecifierSizeError)) }
            let info = spec.withUnsafeBytes { $0.loadUnaligned(as: AudioPanningInfo.self) }
            guard AudioPanningMode(rawValue: spec.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }) != nil,
                  let gains = panningCoefficients(info) else { return .failure(Failure(status: kAudioFormatBadSpecifierSizeError)) }
            return .success(.bytes(gains.withUnsafeBytes { Array($0) }))
        case kAudioFormatProperty_BalanceFade:
            guard spec.count >= MemoryLayout<AudioBalanceFade>.size else { return .failure(Failure(status: kAudioFormatBadSpecifierSizeError)) }
            guard AudioBalanceFadeType(rawValue: spec.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 8, as: UInt32.self) }) != nil else {
                return .failure(Failure(status: kAudioFormatBadSpecifierSizeError))
            }
            let fade = spec.withUnsafeBytes { $0.loadUnaligned(as: AudioBalanceFade.self) }
            guard let gains = balanceFadeCoefficients(fade) else { return .failure(Failure(status: kAudioFormatBadSpecifierSizeError)) }
            return .success(.bytes(gains.withUnsafeBytes { Array($0) }))
        case kAudioFormatProperty_FormatIsVBR:
            return asbdSpecifier(spec).map { .uint32($0.mFormatID != kAudioFormatLinearPCM && $0.mBytesPerPacket == 0 ? 1 : 0) }
        case kAudioFormatProperty_FormatIsExternallyFramed:
            return asbdSpecifier(spec).map { .uint32(externallyFramed.contains($0.mFormatID) ? 1 : 0) }
        case kAudioFormatProperty_FormatEmploysDependentPackets:
            return asbdSpecifier(spec).map { .uint32([kAudioFormatMPEGLayer3, kAudioFormatMPEG4AAC_HE, kAudioFormatMPEG4AAC_HE_V2,
                                                      kAudioFormatOpus].contains($0.mFormatID) ? 1 : 0) }
        case kAudioFormatProperty_FormatIsEncrypted:
            return asbdSpecifier(spec).map { _ in .uint32(0) }
        case kAudioFormatProperty_FormatName:
            return asbdSpecifier(spec).map { .string(name(of: $0)) }
        case kAudioFormatProperty_FormatList:
            guard spec.count >= MemoryLayout<AudioFormatInfo>.size else { return .failure(Failure(status: kAudioFormatBadSpecifierSizeError)) }
            let info = spec.withUnsafeBytes { $0.loadUnaligned(as: AudioFormatInfo.self) }
            let cookie = info.mMagicCookie.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(info.mMagicCookieSize))) } ?? []
            return complete(info.mASBD, cookie: cookie).map { asbd in
                .items([AudioFormatListItem(mASBD: asbd,
                                            mChannelLayoutTag: OATCore.ChannelLayoutTag.default(channels: asbd.mChannelsPerFrame).rawValue)])
            }
        case kAudioFormatProperty_FirstPlayableFormatFromList:
            let stride = MemoryLayout<AudioFormatListItem>.stride
            guard spec.count >= stride else { return .failure(Failure(status: kAudioFormatBadSpecifierSizeError)) }
            let items = spec.withUnsafeBytes { raw in (0..<spec.count / stride).map { raw.loadUnaligned(fromByteOffset: $0 * stride, as: AudioFormatListItem.self) } }
            guard let i = items.firstIndex(where: { decodable.contains($0.mASBD.mFormatID) }) else { return .failure(Failure(status: kAudioFormatUnsupportedDataFormatError)) }
            return .success(.uint32(UInt32(i)))
        case kAudioFormatProperty_ASBDFromMPEGPacket:
            return mpegPacket(spec).map { .asbd($0) }
        case kAudioFormatProperty_ASBDFromESDS:
            return complete(AudioStreamBasicDescription(mSampleRate: 0, mFormatID: kAudioFormatMPEG4AAC, mFormatFlags: 0, mBytesPerPacket: 0,
                                                        mFramesPerPacket: 0, mBytesPerFrame: 0, mChannelsPerFrame: 0, mBitsPerChannel: 0,
                                                        mReserved: 0), cookie: spec).map { .asbd($0) }
        case kAudioFormatProperty_ChannelLayoutForTag:
            return uint32Specifier(spec).flatMap { tag in
                guard let labels = OATCore.ChannelLayoutTag(rawValue: tag).labels else { return .failure(Failure(status: kAudioFormatUnknownFormatError)) }
                return .success(.bytes(CLayout.bytes(OATCore.ChannelLayout(tag: .useChannelDescriptions, channelLabels: labels))))
            }
        case kAudioFormatProperty_ChannelLayoutForBitmap:
            return uint32Specifier(spec).map { bits in
                .bytes(CLayout.bytes(OATCore.ChannelLayout(tag: .useChannelDescriptions, channelLabels: AudioChannelBitmap(rawValue: bits).labels)))
            }
        case kAudioFormatProperty_BitmapForLayoutTag:
            return uint32Specifier(spec).flatMap { tag in
                guard let labels = OATCore.ChannelLayoutTag(rawValue: tag).labels,
                      labels.allSatisfy({ (1...18).contains($0.rawValue) }) else { return .failure(Failure(status: kAudioFormatUnknownFormatError)) }
                return .success(.uint32(labels.reduce(UInt32(0)) { $0 | 1 << ($1.rawValue - 1) }))
            }
        case kAudioFormatProperty_NumberOfChannelsForLayout:
            return layoutSpecifier(spec).map { .uint32(channels($0)) }
        case kAudioFormatProperty_ChannelLayoutName, kAudioFormatProperty_ChannelLayoutSimpleName:
            return layoutSpecifier(spec).map { layout in
                if layout.tag == .useChannelDescriptions || layout.tag == .useChannelBitmap {
                    let labels = layout.tag == .useChannelBitmap ? layout.bitmap.labels : layout.channelLabels
                    return .string(labels.map(\.abbreviation).joined(separator: " "))
                }
                return .string(layout.tag.description)
            }
        default:
            return .failure(Failure(status: kAudioFormatUnsupportedPropertyError))
        }
    }

    // MARK: FormatInfo

    /// Completes `input` (at least `mFormatID`) from the magic cookie, as Apple's FormatInfo does.
    static func complete(_ input: AudioStreamBasicDescription, cookie: [UInt8]) -> Result<AudioStreamBasicDescription, Failure> {
        var d = input
        switch d.mFormatID {
        case kAudioFormatLinearPCM:
            guard d.mBitsPerChannel > 0, d.mChannelsPerFrame > 0 else { return .failure(Failure(status: kAudioFormatUnsupportedDataFormatError)) }
            if d.mFormatFlags == 0 { d.mFormatFlags = kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked }
            let sampleBytes = (d.mBitsPerChannel + 7) / 8
            d.mBytesPerFrame = d.mFormatFlags & kAudioFormatFlagIsNonInterleaved != 0 ? sampleBytes : sampleBytes * d.mChannelsPerFrame
            d.mFramesPerPacket = 1
            d.mBytesPerPacket = d.mBytesPerFrame
        case kAudioFormatMPEG4AAC, kAudioFormatMPEG4AAC_HE, kAudioFormatMPEG4AAC_HE_V2, kAudioFormatMPEG4AAC_LD, kAudioFormatMPEG4AAC_ELD:
            if let asc = audioSpecificConfig(cookie) {
                guard let config = AACConfig(asc) else { return .failure(Failure(status: kAudioFormatUnsupportedDataFormatError)) }
                d.mFormatID = config.formatID
                d.mSampleRate = config.sampleRate
                d.mChannelsPerFrame = config.channels
                d.mFramesPerPacket = config.framesPerPacket
                d.mFormatFlags = config.objectType
            } else {
                d.mFramesPerPacket = d.mFormatID == kAudioFormatMPEG4AAC ? 1024 : d.mFormatID == kAudioFormatMPEG4AAC_LD ? 512 : 2048
            }
            d.mBytesPerPacket = 0; d.mBytesPerFrame = 0; d.mBitsPerChannel = 0
        case kAudioFormatAppleLossless:
            if let c = alacConfig(cookie) {
                d.mFramesPerPacket = c.frameLength
                d.mChannelsPerFrame = c.channels
                d.mSampleRate = Float64(c.sampleRate)
                switch c.bitDepth {
                case 16: d.mFormatFlags = kAppleLosslessFormatFlag_16BitSourceData
                case 20: d.mFormatFlags = kAppleLosslessFormatFlag_20BitSourceData
                case 24: d.mFormatFlags = kAppleLosslessFormatFlag_24BitSourceData
                case 32: d.mFormatFlags = kAppleLosslessFormatFlag_32BitSourceData
                default: break
                }
            } else if d.mFramesPerPacket == 0 {
                d.mFramesPerPacket = 4096
            }
            d.mBytesPerPacket = 0; d.mBytesPerFrame = 0; d.mBitsPerChannel = 0
        case kAudioFormatOpus:
            d.mSampleRate = d.mSampleRate == 0 ? 48000 : d.mSampleRate
            if cookie.count >= 19, cookie.starts(with: Array("OpusHead".utf8)) { d.mChannelsPerFrame = UInt32(cookie[9]) }
            if d.mFramesPerPacket == 0 { d.mFramesPerPacket = 960 }
            d.mBytesPerPacket = 0; d.mBytesPerFrame = 0; d.mBitsPerChannel = 0
        case kAudioFormatMPEGLayer1: d.mFramesPerPacket = 384
        case kAudioFormatMPEGLayer2: d.mFramesPerPacket = 1152
        case kAudioFormatMPEGLayer3: d.mFramesPerPacket = d.mSampleRate > 0 && d.mSampleRate < 32000 ? 576 : 1152
        case kAudioFormatAC3: d.mFramesPerPacket = 1536
        case kAudioFormatULaw, kAudioFormatALaw:
            d.mFramesPerPacket = 1; d.mBitsPerChannel = 8
            d.mBytesPerFrame = d.mChannelsPerFrame; d.mBytesPerPacket = d.mChannelsPerFrame
        case kAudioFormatAppleIMA4:
            d.mFramesPerPacket = 64; d.mBytesPerPacket = 34 * d.mChannelsPerFrame; d.mBytesPerFrame = 0; d.mBitsPerChannel = 0
        default:
            guard decodable.contains(d.mFormatID) || AudioEncoder.encodableFormats.map(\.rawValue).contains(d.mFormatID) else {
                return .failure(Failure(status: kAudioFormatUnsupportedDataFormatError))
            }
        }
        return .success(d)
    }

    /// The AudioSpecificConfig inside a cookie that is one, or an ES_Descriptor holding one.
    static func audioSpecificConfig(_ cookie: [UInt8]) -> [UInt8]? {
        guard !cookie.isEmpty else { return nil }
        guard cookie[0] == 0x03 else { return cookie }
        // Walk ES_Descriptor (0x03) > DecoderConfigDescriptor (0x04) > DecoderSpecificInfo (0x05).
        var i = 0
        func length() -> Int? {
            var n = 0
            for _ in 0..<4 {
                guard i < cookie.count else { return nil }
                let b = cookie[i]; i += 1
                n = n << 7 | Int(b & 0x7F)
                if b & 0x80 == 0 { return n }
            }
            return n
        }
        while i < cookie.count {
            let tag = cookie[i]; i += 1
            guard let len = length() else { return nil }
            switch tag {
            case 0x03:
                guard i + 3 <= cookie.count else { return nil }
                let flags = cookie[i + 2]; i += 3
                if flags & 0x80 != 0 { i += 2 }
                if flags & 0x40 != 0 { guard i < cookie.count else { return nil }; i += 1 + Int(cookie[i]) }
                if flags & 0x20 != 0 { i += 2 }
            case 0x04:
                i += 13
            case 0x05:
                guard i + len <= cookie.count else { return nil }
                return Array(cookie[i..<i + len])
            default:
                i += len
            }
        }
        return nil
    }

    /// What an AudioSpecificConfig says (ISO 14496-3 1.6.2.1): object type, rate, channels, SBR/PS.
    struct AACConfig {
        var objectType: UInt32
        var sampleRate: Float64
        var channels: UInt32
        var formatID: UInt32
        var framesPerPacket: UInt32

        init?(_ asc: [UInt8]) {
            var bits = BitReader(asc)
            let rates: [Float64] = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
            func readObjectType() -> UInt32? {
                guard let t = bits.read(5) else { return nil }
                return t == 31 ? bits.read(6).map { 32 + $0 } : t
            }
            func rate() -> Float64? {
                guard let index = bits.read(4) else { return nil }
                if index == 15 { return bits.read(24).map(Float64.init) }
                return Int(index) < rates.count ? rates[Int(index)] : nil
            }
            guard var type = readObjectType(), var sampleRate = rate(), let config = bits.read(4) else { return nil }
            var formatID = kAudioFormatMPEG4AAC
            var outputRate = sampleRate
            if type == 5 || type == 29 {
                formatID = type == 29 ? kAudioFormatMPEG4AAC_HE_V2 : kAudioFormatMPEG4AAC_HE
                guard let extensionRate = rate(), let base = readObjectType() else { return nil }
                outputRate = extensionRate
                type = base
            } else if type == 23 {
                formatID = kAudioFormatMPEG4AAC_LD
            } else if type == 39 {
                formatID = kAudioFormatMPEG4AAC_ELD
            }
            sampleRate = outputRate
            let channelsForConfig: [UInt32] = [0, 1, 2, 3, 4, 5, 6, 8]
            objectType = formatID == kAudioFormatMPEG4AAC ? type : (formatID == kAudioFormatMPEG4AAC_HE ? 5 : formatID == kAudioFormatMPEG4AAC_HE_V2 ? 29 : type)
            self.sampleRate = sampleRate
            channels = Int(config) < channelsForConfig.count ? channelsForConfig[Int(config)] : 0
            if formatID == kAudioFormatMPEG4AAC_HE_V2 { channels = 2 }
            self.formatID = formatID
            framesPerPacket = formatID == kAudioFormatMPEG4AAC_HE || formatID == kAudioFormatMPEG4AAC_HE_V2 ? 2048
                : formatID == kAudioFormatMPEG4AAC_LD || formatID == kAudioFormatMPEG4AAC_ELD ? 512 : 1024
        }
    }

    struct BitReader {
        let bytes: [UInt8]
        var position = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        mutating func read(_ n: Int) -> UInt32? {
            guard position + n <= bytes.count * 8 else { return nil }
            var v: UInt32 = 0
            for _ in 0..<n {
                v = v << 1 | UInt32(bytes[position >> 3] >> (7 - UInt8(position & 7)) & 1)
                position += 1
            }
            return v
        }
    }

    /// The ALACSpecificConfig of a cookie (bare, or inside 'frma'/'alac' atoms).
    static func alacConfig(_ cookie: [UInt8]) -> (frameLength: UInt32, bitDepth: UInt8, channels: UInt32, sampleRate: UInt32)? {
        var c = cookie[...]
        func tag(at i: Int) -> String { String(decoding: c.dropFirst(i).prefix(4), as: UTF8.self) }
        if c.count >= 12, tag(at: 4) == "frma" { c = c.dropFirst(12) }
        if c.count >= 12, tag(at: 4) == "alac" { c = c.dropFirst(12) }
        guard c.count >= 24 else { return nil }
        let b = Array(c)
        func be32(_ i: Int) -> UInt32 { UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3]) }
        return (be32(0), b[5], UInt32(b[9]), be32(20))
    }

    /// The format of an MPEG audio frame from its 4-byte header.
    static func mpegPacket(_ spec: [UInt8]) -> Result<AudioStreamBasicDescription, Failure> {
        guard spec.count >= 4 else { return .failure(Failure(status: kAudioFormatBadSpecifierSizeError)) }
        let h = UInt32(spec[0]) << 24 | UInt32(spec[1]) << 16 | UInt32(spec[2]) << 8 | UInt32(spec[3])
        let version = (h >> 19) & 3, layer = (h >> 17) & 3, rateIndex = Int((h >> 10) & 3), mode = (h >> 6) & 3
        guard h >> 21 == 0x7FF, version != 1, layer != 0, rateIndex != 3 else { return .failure(Failure(status: kAudioFormatUnknownFormatError)) }
        let base: [Float64] = [44100, 48000, 32000]
        let rate = base[rateIndex] / (version == 3 ? 1 : version == 2 ? 2 : 4)
        let formatID = layer == 3 ? kAudioFormatMPEGLayer1 : layer == 2 ? kAudioFormatMPEGLayer2 : kAudioFormatMPEGLayer3
        let frames: UInt32 = layer == 3 ? 384 : (layer == 1 && version != 3) ? 576 : 1152
        return .success(AudioStreamBasicDescription(mSampleRate: rate, mFormatID: formatID, mFormatFlags: 0, mBytesPerPacket: 0,
                                                    mFramesPerPacket: frames, mBytesPerFrame: 0, mChannelsPerFrame: mode == 3 ? 1 : 2,
                                                    mBitsPerChannel: 0, mReserved: 0))
    }

    /// A name like Apple's (`"MPEG Layer 3, 2 channels, 44100 Hz"`).
    static func name(of d: AudioStreamBasicDescription) -> String {
        let names: [UInt32: String] = [
            kAudioFormatMPEGLayer1: "MPEG Layer 1", kAudioFormatMPEGLayer2: "MPEG Layer 2", kAudioFormatMPEGLayer3: "MPEG Layer 3",
            kAudioFormatMPEG4AAC: "AAC", kAudioFormatMPEG4AAC_HE: "HE-AAC", kAudioFormatMPEG4AAC_HE_V2: "HE-AAC v2",
            kAudioFormatMPEG4AAC_LD: "AAC-LD", kAudioFormatMPEG4AAC_ELD: "AAC-ELD", kAudioFormatAppleLossless: "Apple Lossless",
            kAudioFormatFLAC: "FLAC", kAudioFormatOpus: "Opus", kAudioFormatULaw: "µLaw 2:1", kAudioFormatALaw: "aLaw 2:1",
            kAudioFormatAppleIMA4: "IMA 4:1", kAudioFormatAC3: "AC-3", OATCore.AudioFormatCode.vorbis.rawValue: "Vorbis",
        ]
        var parts: [String] = []
        if d.mFormatID == kAudioFormatLinearPCM {
            let f = d.mFormatFlags
            let kind = f & kAudioFormatFlagIsFloat != 0 ? "float" : f & kAudioFormatFlagIsSignedInteger != 0 ? "signed integer" : "unsigned integer"
            let endian = d.mBitsPerChannel <= 8 ? "" : (f & kAudioFormatFlagIsBigEndian != 0 ? "big-endian " : "little-endian ")
            parts.append("\(d.mBitsPerChannel)-bit \(endian)\(kind)")
        } else {
            parts.append(names[d.mFormatID] ?? OATCore.AudioFormatCode(rawValue: d.mFormatID).description)
        }
        if d.mChannelsPerFrame > 0 { parts.append("\(d.mChannelsPerFrame) channel" + (d.mChannelsPerFrame == 1 ? "" : "s")) }
        if d.mSampleRate > 0 { parts.append("\(Int(d.mSampleRate)) Hz") }
        return parts.joined(separator: ", ")
    }
}
