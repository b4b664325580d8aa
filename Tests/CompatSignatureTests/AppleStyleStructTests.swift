// Code written as macOS programs write it against the Core Audio and Audio Toolbox structs that are
// declared in C with Apple's fields (AudioStreamBasicDescription, AudioFilePacketTableInfo,
// AudioFormatListItem, AudioConverterPrimeInfo, AudioQueueLevelMeterState, ScheduledAudioSlice,
// ScheduledAudioFileRegion) and the option sets Swift imports from C (AudioFileStreamParseFlags,
// AudioChannelBitmap, AUScheduledAudioSliceFlags). That this file compiles is most of the test:
// zeroed `init()` where Apple's Swift has one, memberwise initialisers in Apple's field order with
// every label, the option sets' imported member names, and completion procs that are C function
// pointers (a global function and a closure that captures nothing convert to them). The run-time
// checks read the bytes back at Apple's offsets.

import OpenAudioToolbox
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A slice completion proc as a global function, as C-convention callbacks are written on macOS.
private func sliceDone(_ userData: UnsafeMutableRawPointer?, _ slice: UnsafeMutablePointer<ScheduledAudioSlice>) {
    userData?.storeBytes(of: slice.pointee.mNumberFrames, as: UInt32.self)
    slice.pointee.mFlags.insert(.scheduledAudioSliceFlag_Complete)
}

/// A file region completion proc as a global function.
private func regionDone(_ userData: UnsafeMutableRawPointer?, _ region: UnsafeMutablePointer<ScheduledAudioFileRegion>, _ result: OSStatus) {
    region.pointee.mLoopCount = UInt32(bitPattern: result)
}

@Suite struct AppleStyleStructTests {
    @Test func streamDescriptionIsWrittenAsOnMacOS() {
        // Zeroed, then filled field by field (the most common macOS idiom).
        var asbd = AudioStreamBasicDescription()
        #expect(asbd.mSampleRate == 0 && asbd.mFormatID == 0 && asbd.mReserved == 0)
        asbd.mSampleRate = 44100
        asbd.mFormatID = kAudioFormatLinearPCM
        asbd.mFormatFlags = kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked
        asbd.mBytesPerPacket = 4
        asbd.mFramesPerPacket = 1
        asbd.mBytesPerFrame = 4
        asbd.mChannelsPerFrame = 2
        asbd.mBitsPerChannel = 16
        // Apple's memberwise initialiser: every field, in Apple's order, mReserved included.
        let full = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM,
                                               mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
                                               mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4,
                                               mChannelsPerFrame: 2, mBitsPerChannel: 16, mReserved: 0)
        #expect(full.mSampleRate == asbd.mSampleRate && full.mFormatFlags == asbd.mFormatFlags && full.mBitsPerChannel == 16)
        // The property-size idiom, and the bytes at Apple's offsets.
        let size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(size == 40)
        withUnsafeBytes(of: asbd) { raw in
            #expect(raw.load(fromByteOffset: 0, as: Float64.self) == 44100)
            #expect(raw.load(fromByteOffset: 8, as: UInt32.self) == 0x6C70_636D) // 'lpcm'
            #expect(raw.load(fromByteOffset: 12, as: UInt32.self) == 0xC)
            #expect(raw.load(fromByteOffset: 28, as: UInt32.self) == 2)
            #expect(raw.load(fromByteOffset: 32, as: UInt32.self) == 16)
        }
        // A C function taking `UnsafePointer<AudioStreamBasicDescription>` reads it.
        var isVBR: UInt32 = 1
        var outSize = UInt32(MemoryLayout<UInt32>.size)
        #expect(AudioFormatGetProperty(kAudioFormatProperty_FormatIsVBR, size, &asbd, &outSize, &isVBR) == noErr)
        #expect(isVBR == 0)
        // The Swift API's names read the same fields.
        #expect(asbd.sampleRate == 44100 && asbd.channelsPerFrame == 2 && asbd.isPCM && !asbd.isFloat)
        #expect(asbd == full && Set([asbd, full]).count == 1)
    }

    @Test func fileConverterAndQueueStructsAreWrittenAsOnMacOS() {
        var info = AudioFilePacketTableInfo()
        info.mNumberValidFrames = 44100
        info.mPrimingFrames = 2112
        info.mRemainderFrames = 576
        let same = AudioFilePacketTableInfo(mNumberValidFrames: 44100, mPrimingFrames: 2112, mRemainderFrames: 576)
        #expect(info == same && info.primingFrames == 2112 && MemoryLayout<AudioFilePacketTableInfo>.size == 16)

        var prime = AudioConverterPrimeInfo()
        prime.leadingFrames = 2112
        prime.trailingFrames = 576
        #expect(prime == AudioConverterPrimeInfo(leadingFrames: 2112, trailingFrames: 576))
        #expect(MemoryLayout<AudioConverterPrimeInfo>.size == 8)

        var items = [AudioFormatListItem](repeating: AudioFormatListItem(), count: 2)
        items[0] = AudioFormatListItem(mASBD: AudioStreamBasicDescription(), mChannelLayoutTag: kAudioChannelLayoutTag_Stereo)
        items[1].mASBD.mFormatID = kAudioFormatMPEG4AAC
        #expect(items[0].mChannelLayoutTag == kAudioChannelLayoutTag_Stereo && items[1].mASBD.mFormatID == kAudioFormatMPEG4AAC)
        #expect(UInt32(items.count * MemoryLayout<AudioFormatListItem>.size) == 96)

        var levels = [AudioQueueLevelMeterState](repeating: AudioQueueLevelMeterState(), count: 2)
        levels[1] = AudioQueueLevelMeterState(mAveragePower: 0.25, mPeakPower: 0.5)
        #expect(levels[0].mPeakPower == 0 && levels[1].mAveragePower == 0.25 && levels[1].peakPower == 0.5)
        #expect(MemoryLayout<AudioQueueLevelMeterState>.stride == 8)
    }

    @Test func importedOptionSetsHaveApplesMembers() {
        let parse: AudioFileStreamParseFlags = [.discontinuity]
        #expect(parse.rawValue == 1 && AudioFileStreamParseFlags(rawValue: 0).isEmpty)
        #expect(kAudioFileStreamParseFlag_Discontinuity == .discontinuity)
        let fivePointOne: AudioChannelBitmap = [.bit_Left, .bit_Right, .bit_Center, .bit_LFEScreen, .bit_LeftSurround, .bit_RightSurround]
        #expect(fivePointOne.rawValue == 0x3F)
        #expect(AudioChannelBitmap.bit_LeftTopFront == .bit_VerticalHeightLeft && AudioChannelBitmap.bit_CenterTopMiddle == .bit_TopCenterSurround)
        #expect(AudioChannelBitmap.bit_RightTopRear.rawValue == 1 << 26 && AudioChannelBitmap.bit_LeftTopMiddle.rawValue == 1 << 21)
        let slice: AUScheduledAudioSliceFlags = [.scheduledAudioSliceFlag_Loop, .scheduledAudioSliceFlag_InterruptAtLoop]
        #expect(slice.rawValue == 0x28)
        #expect(MemoryLayout<AudioChannelBitmap>.size == 4 && MemoryLayout<AudioFileStreamParseFlags>.size == 4)
    }

    @Test func scheduledSliceTakesACFunctionPointer() {
        let list = AudioBufferList.allocate(maximumBuffers: 1)
        defer { free(list.unsafeMutablePointer) }
        let user = UnsafeMutableRawPointer.allocate(byteCount: 4, alignment: 4)
        defer { user.deallocate() }
        user.storeBytes(of: 0, as: UInt32.self)
        // Apple's memberwise initialiser; the proc is a global function (no zeroed init(): the
        // user data and buffer list pointers are non-optional in Apple's Swift).
        var slice = ScheduledAudioSlice(mTimeStamp: AudioTimeStamp(), mCompletionProc: sliceDone, mCompletionProcUserData: user,
                                        mFlags: [], mReserved: 0, mReserved2: nil, mNumberFrames: 512,
                                        mBufferList: list.unsafeMutablePointer)
        slice.mTimeStamp.mFlags = .sampleTimeValid
        slice.mCompletionProc?(slice.mCompletionProcUserData, &slice)
        #expect(user.load(as: UInt32.self) == 512 && slice.mFlags.contains(.scheduledAudioSliceFlag_Complete))
        // A closure literal that captures nothing is a C function pointer too.
        slice.mCompletionProc = { _, s in s.pointee.mFlags.insert(.scheduledAudioSliceFlag_BeganToRenderLate) }
        let proc = slice.mCompletionProc
        proc?(nil, &slice)
        #expect(slice.mFlags.contains(.scheduledAudioSliceFlag_BeganToRenderLate))
        // One machine word that round-trips through a raw pointer, as C stores it.
        #expect(MemoryLayout<ScheduledAudioSliceCompletionProc>.size == MemoryLayout<UnsafeRawPointer>.size)
        let back = unsafeBitCast(unsafeBitCast(sliceDone as ScheduledAudioSliceCompletionProc, to: UnsafeRawPointer.self),
                                 to: ScheduledAudioSliceCompletionProc.self)
        slice.mNumberFrames = 7
        back(user, &slice)
        #expect(user.load(as: UInt32.self) == 7)
    }

    @Test func scheduledFileRegionTakesACFunctionPointer() {
        let file = OpaquePointer(bitPattern: 0x1000)!
        let start = AudioTimeStamp(mSampleTime: 0, mHostTime: 0, mRateScalar: 0, mWordClockTime: 0, mSMPTETime: SMPTETime(),
                                   mFlags: .sampleTimeValid, mReserved: 0)
        var region = ScheduledAudioFileRegion(mTimeStamp: start, mCompletionProc: regionDone, mCompletionProcUserData: nil,
                                              mAudioFile: file, mLoopCount: 0, mStartFrame: 0, mFramesToPlay: 1024)
        let proc = region.mCompletionProc
        proc?(region.mCompletionProcUserData, &region, -50)
        #expect(region.mLoopCount == UInt32(bitPattern: -50) && region.mAudioFile == file && region.mFramesToPlay == 1024)
        region.mCompletionProc = { _, r, status in r.pointee.mStartFrame = Int64(status) }
        let closure = region.mCompletionProc
        closure?(nil, &region, 3)
        #expect(region.mStartFrame == 3)
        #expect(MemoryLayout<ScheduledAudioFileRegionCompletionProc>.size == MemoryLayout<UnsafeRawPointer>.size)
    }
}
