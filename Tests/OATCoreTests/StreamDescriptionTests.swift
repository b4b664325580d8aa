import Testing
@testable import OATCore

@Suite struct StreamDescriptionTests {
    @Test func linearPCMFollowsAppleFieldRules() {
        let f = AudioStreamBasicDescription.linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 16)
        #expect(f.bytesPerFrame == 4 && f.bytesPerPacket == 4 && f.framesPerPacket == 1)
        #expect(f.formatFlags == [.isSignedInteger, .isPacked])
        #expect(f.validationFailure == nil)
        #expect(f.description == "2 ch,  44100 Hz, Int16 little-endian interleaved")
    }

    @Test func nonInterleavedFloatDescribesOneChannelPerBuffer() {
        let f = AudioStreamBasicDescription.canonicalFloat(sampleRate: 48000, channels: 6)
        #expect(f.bytesPerFrame == 4 && !f.isInterleaved && f.bufferCount == 6)
        #expect(f.formatFlags.contains(.isNonInterleaved) && f.isFloat)
    }

    @Test func oddWidthsAreAlignedHigh() {
        let f = AudioStreamBasicDescription.linearPCM(sampleRate: 8000, channels: 3, bitsPerChannel: 20, isBigEndian: true, bytesPerSample: 3)
        #expect(f.bytesPerFrame == 9)
        #expect(f.formatFlags.contains(.isAlignedHigh) && !f.formatFlags.contains(.isPacked))
        #expect(f.validationFailure == nil)
    }

    @Test func validationNamesWhatIsWrong() {
        var f = AudioStreamBasicDescription.linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 16)
        f.channelsPerFrame = 0
        #expect(f.validationFailure == "channel count is 0")
        f = .linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 24, isFloat: true)
        #expect(f.validationFailure?.contains("float") == true)
        f = .linearPCM(sampleRate: .nan, channels: 2, bitsPerChannel: 16)
        #expect(f.validationFailure != nil)
    }

    @Test func compressedDescriptionIsVBR() {
        let f = AudioStreamBasicDescription.compressed(.mpegLayer3, sampleRate: 44100, channels: 2, framesPerPacket: 1152)
        #expect(f.hasVariableBytesPerPacket && !f.hasVariableFramesPerPacket && !f.isPCM)
        #expect(f.description.contains("'.mp3'"))
    }

    @Test func channelLayoutsNameTheirChannels() {
        #expect(ChannelLayoutTag.mpeg_5_1_A.channelCount == 6)
        #expect(ChannelLayoutTag.mpeg_5_1_A.description == "5.1 (L R C LFE Ls Rs)")
        #expect(ChannelLayoutTag.stereo.rawValue == (101 << 16 | 2))
        let bitmap = ChannelLayout(tag: .useChannelBitmap, bitmap: AudioChannelBitmap(rawValue: 0x3F))
        #expect(bitmap.channelCount == 6)
        #expect(bitmap.labels == [.left, .right, .center, .lfeScreen, .leftSurround, .rightSurround])
        #expect(ChannelLayoutTag.default(channels: 1) == .mono)
        #expect(ChannelLayoutTag.default(channels: 11).channelCount == 11)
    }

    @Test func pcmBufferRejectsCompressedFormats() throws {
        let mp3 = AudioStreamBasicDescription.compressed(.mpegLayer3, sampleRate: 44100, channels: 2, framesPerPacket: 1152)
        #expect(throws: AudioError.self) { try AudioPCMBuffer(format: mp3, frameCapacity: 16) }
        let buffer = try AudioPCMBuffer(format: .canonicalFloat(sampleRate: 48000, channels: 2), frameCapacity: 256)
        #expect(buffer.bufferCount == 2)
        #expect(buffer.floatChannel(1)?.count == 256)
        buffer.frameLength = 1000
        #expect(buffer.frameLength == 256)
    }

    @Test func errorsPrintOneLineWithOffset() {
        let e = AudioError(.invalidData, component: "WAV parser", "fmt chunk too short", offset: 20, underlying: "x")
        #expect(e.description == "WAV parser: fmt chunk too short (at byte 20) [x]")
    }
}
