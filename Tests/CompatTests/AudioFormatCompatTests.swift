// AudioFormatGetProperty as macOS programs call it; only the import differs.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Testing
import OATTestSupport

private let asbdSize = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)

/// Opens a file and reads its data format and magic cookie, as players do before FormatInfo.
private func formatAndCookie(_ path: String) throws -> (AudioStreamBasicDescription, [UInt8], AudioFileID) {
    var file: AudioFileID?
    try #require(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &file) == noErr)
    var format = AudioStreamBasicDescription()
    var size = asbdSize
    try #require(AudioFileGetProperty(file!, kAudioFilePropertyDataFormat, &size, &format) == noErr)
    var cookieSize: UInt32 = 0
    var cookie: [UInt8] = []
    if AudioFileGetPropertyInfo(file!, kAudioFilePropertyMagicCookieData, &cookieSize, nil) == noErr, cookieSize > 0 {
        cookie = [UInt8](repeating: 0, count: Int(cookieSize))
        try #require(AudioFileGetProperty(file!, kAudioFilePropertyMagicCookieData, &cookieSize, &cookie) == noErr)
    }
    return (format, cookie, file!)
}

private let m4a = "ffmpeg-generated/m4a/aac_faststart.m4a"
private let alac = "ffmpeg-generated/m4a/alac_st.m4a"
private let mp3 = "ffmpeg-generated/mp3/l3_mpeg2_22k_mono.mp3"

@Suite struct AudioFormatCompatTests {
    @Test("FormatInfo completes linear PCM from rate, channels and bits")
    func formatInfoPCM() {
        var asbd = AudioStreamBasicDescription()
        asbd.mFormatID = kAudioFormatLinearPCM
        asbd.mSampleRate = 44100
        asbd.mChannelsPerFrame = 2
        asbd.mBitsPerChannel = 16
        var size = asbdSize
        #expect(AudioFormatGetProperty(kAudioFormatProperty_FormatInfo, 0, nil, &size, &asbd) == noErr)
        #expect(asbd.mBytesPerFrame == 4 && asbd.mBytesPerPacket == 4 && asbd.mFramesPerPacket == 1)
        #expect(asbd.mFormatFlags & kAudioFormatFlagIsSignedInteger != 0)
        var infoSize: UInt32 = 0
        #expect(AudioFormatGetPropertyInfo(kAudioFormatProperty_FormatInfo, 0, nil, &infoSize) == noErr && infoSize == asbdSize)
    }

    @Test("FormatInfo completes AAC from an AudioSpecificConfig cookie")
    func formatInfoAACConfig() {
        var asbd = AudioStreamBasicDescription()
        asbd.mFormatID = kAudioFormatMPEG4AAC
        var cookie: [UInt8] = [0x11, 0x90] // AAC LC, 48000 Hz, 2 channels
        var size = asbdSize
        #expect(AudioFormatGetProperty(kAudioFormatProperty_FormatInfo, UInt32(cookie.count), &cookie, &size, &asbd) == noErr)
        #expect(asbd.mSampleRate == 48000 && asbd.mChannelsPerFrame == 2 && asbd.mFramesPerPacket == 1024)
        #expect(asbd.mFormatID == kAudioFormatMPEG4AAC && asbd.mFormatFlags == 2)
    }

    @Test("FormatInfo and FormatList from a real M4A's cookie give the file's format",
          .requires(TestResource.corpusMissing))
    func formatInfoFromFileCookie() throws {
        let (format, cookie, file) = try formatAndCookie(try corpusFile(m4a))
        defer { AudioFileClose(file) }
        try #require(!cookie.isEmpty)
        var asbd = AudioStreamBasicDescription()
        asbd.mFormatID = format.mFormatID
        var size = asbdSize
        #expect(cookie.withUnsafeBytes { AudioFormatGetProperty(kAudioFormatProperty_FormatInfo, UInt32(cookie.count), $0.baseAddress, &size, &asbd) } == noErr)
        #expect(asbd.mSampleRate == format.mSampleRate && asbd.mChannelsPerFrame == format.mChannelsPerFrame)
        #expect(asbd.mFramesPerPacket == format.mFramesPerPacket)

        var items = [AudioFormatListItem](repeating: AudioFormatListItem(), count: 4)
        var listSize = UInt32(items.count * MemoryLayout<AudioFormatListItem>.stride)
        let status = cookie.withUnsafeBytes { raw in
            var info = AudioFormatInfo(mASBD: asbd, mMagicCookie: raw.baseAddress, mMagicCookieSize: UInt32(cookie.count))
            return AudioFormatGetProperty(kAudioFormatProperty_FormatList, UInt32(MemoryLayout<AudioFormatInfo>.size), &info, &listSize, &items)
        }
        #expect(status == noErr && listSize >= UInt32(MemoryLayout<AudioFormatListItem>.stride))
        #expect(items[0].mASBD.mSampleRate == format.mSampleRate)
    }

    @Test("FormatInfo reads an ALAC cookie", .requires(TestResource.corpusMissing))
    func formatInfoALAC() throws {
        let (format, cookie, file) = try formatAndCookie(try corpusFile(alac))
        defer { AudioFileClose(file) }
        var asbd = AudioStreamBasicDescription()
        asbd.mFormatID = kAudioFormatAppleLossless
        var size = asbdSize
        #expect(cookie.withUnsafeBytes { AudioFormatGetProperty(kAudioFormatProperty_FormatInfo, UInt32(cookie.count), $0.baseAddress, &size, &asbd) } == noErr)
        #expect(asbd.mSampleRate == format.mSampleRate && asbd.mChannelsPerFrame == format.mChannelsPerFrame)
        #expect(asbd.mFramesPerPacket == format.mFramesPerPacket && asbd.mFormatFlags == format.mFormatFlags)
    }

    @Test("ASBDFromMPEGPacket reads the first packet of an MP3", .requires(TestResource.corpusMissing))
    func asbdFromMPEGPacket() throws {
        let (format, _, file) = try formatAndCookie(try corpusFile(mp3))
        defer { AudioFileClose(file) }
        var packet = [UInt8](repeating: 0, count: 4096)
        var bytes = UInt32(packet.count)
        var packets: UInt32 = 1
        var description = AudioStreamPacketDescription()
        try #require(AudioFileReadPacketData(file, false, &bytes, &description, 0, &packets, &packet) == noErr && packets == 1)
        var asbd = AudioStreamBasicDescription()
        var size = asbdSize
        #expect(AudioFormatGetProperty(kAudioFormatProperty_ASBDFromMPEGPacket, bytes, packet, &size, &asbd) == noErr)
        #expect(asbd.mFormatID == kAudioFormatMPEGLayer3 && asbd.mSampleRate == format.mSampleRate)
        #expect(asbd.mChannelsPerFrame == format.mChannelsPerFrame && asbd.mFramesPerPacket == format.mFramesPerPacket)
        var bad: [UInt8] = [0, 0, 0, 0]
        #expect(AudioFormatGetProperty(kAudioFormatProperty_ASBDFromMPEGPacket, 4, &bad, &size, &asbd) != noErr)
    }

    @Test("VBR, externally framed, name, encode and decode lists")
    func formatFacts() {
        var aac = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatMPEG4AAC, mFormatFlags: 2, mBytesPerPacket: 0,
                                              mFramesPerPacket: 1024, mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
        var mp3 = aac
        mp3.mFormatID = kAudioFormatMPEGLayer3
        mp3.mFramesPerPacket = 1152
        var pcm = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM,
                                              mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked, mBytesPerPacket: 4,
                                              mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2, mBitsPerChannel: 16, mReserved: 0)
        func flag(_ id: AudioFormatPropertyID, _ d: inout AudioStreamBasicDescription) -> UInt32 {
            var v: UInt32 = 99
            var size: UInt32 = 4
            #expect(AudioFormatGetProperty(id, asbdSize, &d, &size, &v) == noErr)
            return v
        }
        #expect(flag(kAudioFormatProperty_FormatIsVBR, &aac) == 1)
        #expect(flag(kAudioFormatProperty_FormatIsVBR, &pcm) == 0)
        #expect(flag(kAudioFormatProperty_FormatIsExternallyFramed, &aac) == 1)
        #expect(flag(kAudioFormatProperty_FormatIsExternallyFramed, &mp3) == 0)

        var name: CFString?
        var size = UInt32(MemoryLayout<CFString?>.size)
        let nameStatus = withUnsafeMutablePointer(to: &name) { AudioFormatGetProperty(kAudioFormatProperty_FormatName, asbdSize, &mp3, &size, $0) }
        #expect(nameStatus == noErr)
        #expect(name.map { String(describing: $0) } == "MPEG Layer 3, 2 channels, 44100 Hz")

        var idsSize: UInt32 = 0
        #expect(AudioFormatGetPropertyInfo(kAudioFormatProperty_DecodeFormatIDs, 0, nil, &idsSize) == noErr && idsSize % 4 == 0)
        var ids = [AudioFormatID](repeating: 0, count: Int(idsSize) / 4)
        #expect(AudioFormatGetProperty(kAudioFormatProperty_DecodeFormatIDs, 0, nil, &idsSize, &ids) == noErr)
        #expect(ids.contains(kAudioFormatMPEGLayer3) && ids.contains(kAudioFormatMPEG4AAC) && ids.contains(kAudioFormatLinearPCM))
        #expect(AudioFormatGetPropertyInfo(kAudioFormatProperty_EncodeFormatIDs, 0, nil, &idsSize) == noErr && idsSize >= 4)
        ids = [AudioFormatID](repeating: 0, count: Int(idsSize) / 4)
        #expect(AudioFormatGetProperty(kAudioFormatProperty_EncodeFormatIDs, 0, nil, &idsSize, &ids) == noErr)
        #expect(ids.contains(kAudioFormatLinearPCM))
        #expect(AudioFormatGetPropertyInfo(fourCC4("zzzz"), 0, nil, &idsSize) == kAudioFormatUnsupportedPropertyError)
    }

    @Test("Channel layouts for a tag and a bitmap, their channel counts and names")
    func channelLayouts() {
        var tag = kAudioChannelLayoutTag_Stereo
        var size: UInt32 = 0
        #expect(AudioFormatGetPropertyInfo(kAudioFormatProperty_ChannelLayoutForTag, 4, &tag, &size) == noErr)
        let layout = UnsafeMutableRawPointer.allocate(byteCount: Int(size), alignment: 8)
        defer { layout.deallocate() }
        #expect(AudioFormatGetProperty(kAudioFormatProperty_ChannelLayoutForTag, 4, &tag, &size, layout) == noErr)
        let list = layout.assumingMemoryBound(to: AudioChannelLayout.self)
        #expect(list.pointee.mChannelLayoutTag == kAudioChannelLayoutTag_UseChannelDescriptions)
        #expect(list.pointee.mNumberChannelDescriptions == 2 && list.pointee.mChannelDescriptions.mChannelLabel == 1)

        var channels: UInt32 = 0
        var four: UInt32 = 4
        #expect(AudioFormatGetProperty(kAudioFormatProperty_NumberOfChannelsForLayout, size, layout, &four, &channels) == noErr)
        #expect(channels == 2)

        var bitmap: UInt32 = 0x3F // L R C LFE Ls Rs
        var bitmapSize: UInt32 = 0
        #expect(AudioFormatGetPropertyInfo(kAudioFormatProperty_ChannelLayoutForBitmap, 4, &bitmap, &bitmapSize) == noErr)
        let six = UnsafeMutableRawPointer.allocate(byteCount: Int(bitmapSize), alignment: 8)
        defer { six.deallocate() }
        #expect(AudioFormatGetProperty(kAudioFormatProperty_ChannelLayoutForBitmap, 4, &bitmap, &bitmapSize, six) == noErr)
        #expect(six.assumingMemoryBound(to: AudioChannelLayout.self).pointee.mNumberChannelDescriptions == 6)

        var stereo = AudioChannelLayout()
        stereo.mChannelLayoutTag = kAudioChannelLayoutTag_Stereo
        var name: CFString?
        var nameSize = UInt32(MemoryLayout<CFString?>.size)
        let nameStatus = withUnsafeMutablePointer(to: &name) {
            AudioFormatGetProperty(kAudioFormatProperty_ChannelLayoutName, UInt32(MemoryLayout<AudioChannelLayout>.size), &stereo, &nameSize, $0)
        }
        #expect(nameStatus == noErr)
        #expect(name.map { String(describing: $0) } == "Stereo (L R)")
    }

    @Test("An AAC input queue answers the converter properties a recorder asks for")
    func inputQueueConverterProperties() throws {
        var format = AudioStreamBasicDescription()
        format.mFormatID = kAudioFormatMPEG4AAC
        format.mSampleRate = 44100
        format.mChannelsPerFrame = 2
        var queue: AudioQueueRef?
        let status = AudioQueueNewInput(&format, { _, _, _, _, _, _ in }, nil, nil, nil, 0, &queue)
        try #require(status == noErr, "AudioQueueNewInput: \(status)")
        defer { AudioQueueDispose(queue!, true) }

        var encoded = AudioStreamBasicDescription()
        var size = asbdSize
        #expect(AudioQueueGetProperty(queue!, kAudioConverterCurrentOutputStreamDescription, &encoded, &size) == noErr)
        #expect(encoded.mFormatID == kAudioFormatMPEG4AAC && encoded.mFramesPerPacket == 1024 && encoded.mSampleRate == 44100)

        var cookieSize: UInt32 = 0
        #expect(AudioQueueGetPropertySize(queue!, kAudioConverterCompressionMagicCookie, &cookieSize) == noErr)
        try #require(cookieSize > 0)
        var cookie = [UInt8](repeating: 0, count: Int(cookieSize))
        #expect(AudioQueueGetProperty(queue!, kAudioConverterCompressionMagicCookie, &cookie, &cookieSize) == noErr)
        var queueCookie = [UInt8](repeating: 0, count: Int(cookieSize))
        var queueCookieSize = cookieSize
        #expect(AudioQueueGetProperty(queue!, kAudioQueueProperty_MagicCookie, &queueCookie, &queueCookieSize) == noErr)
        #expect(cookie == queueCookie)

        // The cookie describes the encoded stream: FormatInfo gives back its rate and channels.
        var fromCookie = AudioStreamBasicDescription()
        fromCookie.mFormatID = encoded.mFormatID
        size = asbdSize
        #expect(AudioFormatGetProperty(kAudioFormatProperty_FormatInfo, cookieSize, &cookie, &size, &fromCookie) == noErr)
        #expect(fromCookie.mSampleRate == 44100 && fromCookie.mChannelsPerFrame == 2)
    }
}

/// A four-character code (test helper).
private func fourCC4(_ s: String) -> UInt32 { s.utf8.reduce(0) { $0 << 8 | UInt32($1) } }
