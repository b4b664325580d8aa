// Apple's C structs and C callback types, checked by the compiler and by their 64-bit layout:
// the callback typealiases are `@convention(c)` as on Apple (a global function converts to them; a
// capturing closure does not compile, which no runtime test can show), and the structs they point
// at have Apple's sizes and field offsets, so a pointer handed to or from C code reads the same
// bytes.

import OpenAudioToolbox
import Testing

private func halListener(_ object: AudioObjectID, _ count: UInt32, _ addresses: UnsafePointer<AudioObjectPropertyAddress>,
                         _ client: UnsafeMutableRawPointer?) -> OSStatus { OSStatus(count) }

private func streamListener(_ client: UnsafeMutableRawPointer, _ stream: AudioFileStreamID, _ id: AudioFileStreamPropertyID,
                            _ flags: UnsafeMutablePointer<AudioFileStreamPropertyFlags>) {
    flags.pointee.insert(.cacheProperty)
}

private func streamPackets(_ client: UnsafeMutableRawPointer, _ bytes: UInt32, _ packets: UInt32, _ data: UnsafeRawPointer,
                           _ descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) {
    client.storeBytes(of: descriptions?[Int(packets) - 1].mDataByteSize ?? 0, as: UInt32.self)
}

private func queueOutput(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    buffer.pointee.mAudioDataByteSize = buffer.pointee.mAudioDataBytesCapacity
}

private func render(_ refCon: UnsafeMutableRawPointer, _ flags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                    _ time: UnsafePointer<AudioTimeStamp>, _ bus: UInt32, _ frames: UInt32,
                    _ data: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    flags.pointee.insert(.unitRenderAction_OutputIsSilence)
    data?.pointee.mBuffers.mDataByteSize = frames * 4
    return OSStatus(time.pointee.mSampleTime)
}

private func converterInput(_ converter: AudioConverterRef, _ packets: UnsafeMutablePointer<UInt32>, _ data: UnsafeMutablePointer<AudioBufferList>,
                            _ descriptions: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                            _ user: UnsafeMutableRawPointer?) -> OSStatus {
    packets.pointee = 0
    return noErr
}

private func queueInput(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef,
                        _ start: UnsafePointer<AudioTimeStamp>, _ packets: UInt32,
                        _ descriptions: UnsafePointer<AudioStreamPacketDescription>?) {}

private func tap(_ client: UnsafeMutableRawPointer, _ tap: AudioQueueProcessingTapRef, _ frames: UInt32,
                 _ time: UnsafeMutablePointer<AudioTimeStamp>, _ flags: UnsafeMutablePointer<AudioQueueProcessingTapFlags>,
                 _ outFrames: UnsafeMutablePointer<UInt32>, _ data: UnsafeMutablePointer<AudioBufferList>) {
    outFrames.pointee = frames
    flags.pointee.insert(.endOfStream)
}

@Suite struct CLayoutTests {
    @Test func coreAudioStructsHaveApplesSizes() {
        // Apple's 64-bit sizes (CoreAudioBaseTypes.h).
        #expect(MemoryLayout<AudioTimeStamp>.size == 64)
        #expect(MemoryLayout<SMPTETime>.size == 24)
        #expect(MemoryLayout<AudioBuffer>.size == 16)
        #expect(MemoryLayout<AudioBufferList>.size == 24)
        #expect(MemoryLayout<AudioStreamPacketDescription>.size == 16)
        #expect(MemoryLayout<AudioStreamBasicDescription>.size == 40)
        #expect(MemoryLayout<AudioTimeStamp>.offset(of: \.mWordClockTime) == 24)
        #expect(MemoryLayout<AudioTimeStamp>.offset(of: \.mSMPTETime) == 32)
        #expect(MemoryLayout<AudioTimeStamp>.offset(of: \.mFlags) == 56)
        #expect(MemoryLayout<AudioBufferList>.offset(of: \.mBuffers) == 8)
        // The Swift API's names read and write Apple's fields; the zero value is Apple's.
        var t = AudioTimeStamp(sampleTime: 480, hostTime: 7, flags: .sampleHostTimeValid)
        #expect(t.mSampleTime == 480 && t.mHostTime == 7 && t.mRateScalar == 1 && t.mFlags == [.sampleTimeValid, .hostTimeValid])
        t.mSMPTETime.mType = .type25
        #expect(t != AudioTimeStamp(sampleTime: 480, hostTime: 7, flags: .sampleHostTimeValid))
        #expect(AudioTimeStamp().mRateScalar == 0 && AudioTimeStamp().mFlags.isEmpty)
        #expect(Set([t, t, AudioTimeStamp()]).count == 2)
        #expect(kAudioTimeStampSampleHostTimeValid.rawValue == 3 && AudioTimeStampFlags.smpteTimeValid.rawValue == 16)
    }

    @Test func renderConverterInputAndTapCallbacksAreCFunctionPointers() {
        let renderProc: AURenderCallback = render
        let inputProc: AudioConverterComplexInputDataProc = converterInput
        let inputCallback: AudioQueueInputCallback = queueInput
        let tapCallback: AudioQueueProcessingTapCallback = tap
        // Stored in a C-typed field and bit-cast back, as macOS code does.
        let stored = AURenderCallbackStruct(inputProc: unsafeBitCast(unsafeBitCast(renderProc, to: UnsafeRawPointer.self), to: AURenderCallback.self),
                                            inputProcRefCon: nil)
        var flags: AudioUnitRenderActionFlags = []
        var time = AudioTimeStamp(sampleTime: 256, flags: .sampleTimeValid)
        var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: 0, mData: nil))
        var refCon = 0
        #expect(stored.inputProc?(&refCon, &flags, &time, 0, 512, &list) == 256)
        #expect(flags == .unitRenderAction_OutputIsSilence && list.mBuffers.mDataByteSize == 2048)
        var packets: UInt32 = 9
        #expect(inputProc(OpaquePointer(bitPattern: 1)!, &packets, &list, nil, nil) == noErr && packets == 0)
        var tapFlags: AudioQueueProcessingTapFlags = [.preEffects]
        var produced: UInt32 = 0
        tapCallback(&refCon, OpaquePointer(bitPattern: 1)!, 64, &time, &tapFlags, &produced, &list)
        #expect(produced == 64 && tapFlags == [.preEffects, .endOfStream] && tapFlags.rawValue == 0x201)
        #expect(MemoryLayout.size(ofValue: inputCallback) == MemoryLayout<UnsafeRawPointer>.size)
    }

    @Test func fileStreamProcsAreCFunctionPointers() {
        let listener: AudioFileStream_PropertyListenerProc = streamListener
        let packets: AudioFileStream_PacketsProc = streamPackets
        var flags: AudioFileStreamPropertyFlags = [.propertyIsCached]
        var client: UInt32 = 0
        let stream = AudioFileStreamID(bitPattern: 1)!
        listener(&client, stream, kAudioFileStreamProperty_DataFormat, &flags)
        #expect(flags == [.propertyIsCached, .cacheProperty] && flags.rawValue == 3)
        var descriptions = [AudioStreamPacketDescription(mStartOffset: 0, mVariableFramesInPacket: 0, mDataByteSize: 417),
                            AudioStreamPacketDescription(startOffset: 417, dataByteSize: 418)]
        let bytes: [UInt8] = [0]
        bytes.withUnsafeBytes { packets(&client, 835, 2, $0.baseAddress!, &descriptions) }
        #expect(client == 418)
    }

    @Test func packetDescriptionHasApplesLayout() {
        #expect(MemoryLayout<AudioStreamPacketDescription>.size == 16)
        #expect(MemoryLayout<AudioStreamPacketDescription>.offset(of: \.mVariableFramesInPacket) == 8)
        #expect(MemoryLayout<AudioStreamPacketDescription>.offset(of: \.mDataByteSize) == 12)
        let d = AudioStreamPacketDescription(startOffset: 3, variableFramesInPacket: 1152, dataByteSize: 417)
        #expect(d.mStartOffset == 3 && d.variableFramesInPacket == 1152 && d == AudioStreamPacketDescription(mStartOffset: 3, mVariableFramesInPacket: 1152, mDataByteSize: 417))
        #expect(Set([d, d, AudioStreamPacketDescription()]).count == 2)
    }

    @Test func queueBufferHasApplesLayout() {
        // Apple's 64-bit AudioQueueBuffer: the constant fields are read-only in Swift, as on Apple.
        #expect(MemoryLayout<AudioQueueBuffer>.size == 56) // C's sizeof, tail padding included
        #expect(MemoryLayout<AudioQueueBuffer>.stride == 56)
        #expect(MemoryLayout<AudioQueueBuffer>.offset(of: \.mAudioData) == 8)
        #expect(MemoryLayout<AudioQueueBuffer>.offset(of: \.mAudioDataByteSize) == 16)
        #expect(MemoryLayout<AudioQueueBuffer>.offset(of: \.mUserData) == 24)
        #expect(MemoryLayout<AudioQueueBuffer>.offset(of: \.mPacketDescriptions) == 40)
        #expect(MemoryLayout<AudioQueueBuffer>.offset(of: \.mPacketDescriptionCount) == 48)
        let output: AudioQueueOutputCallback = queueOutput
        let data = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
        defer { data.deallocate() }
        var buffer = AudioQueueBuffer(mAudioDataBytesCapacity: 64, mAudioData: data, mAudioDataByteSize: 0, mUserData: nil,
                                      mPacketDescriptionCapacity: 0, mPacketDescriptions: nil, mPacketDescriptionCount: 0)
        output(nil, AudioQueueRef(bitPattern: 1)!, &buffer)
        #expect(buffer.mAudioDataByteSize == 64)
    }

    @Test func streamDescriptionAndFileConverterQueueStructsHaveApplesLayout() {
        // Apple's 64-bit AudioStreamBasicDescription: stored C fields at C's offsets (computed
        // properties have no offset).
        #expect(MemoryLayout<AudioStreamBasicDescription>.size == 40)
        #expect(MemoryLayout<AudioStreamBasicDescription>.offset(of: \.mSampleRate) == 0)
        #expect(MemoryLayout<AudioStreamBasicDescription>.offset(of: \.mFormatID) == 8)
        #expect(MemoryLayout<AudioStreamBasicDescription>.offset(of: \.mFormatFlags) == 12)
        #expect(MemoryLayout<AudioStreamBasicDescription>.offset(of: \.mBytesPerPacket) == 16)
        #expect(MemoryLayout<AudioStreamBasicDescription>.offset(of: \.mFramesPerPacket) == 20)
        #expect(MemoryLayout<AudioStreamBasicDescription>.offset(of: \.mBytesPerFrame) == 24)
        #expect(MemoryLayout<AudioStreamBasicDescription>.offset(of: \.mChannelsPerFrame) == 28)
        #expect(MemoryLayout<AudioStreamBasicDescription>.offset(of: \.mBitsPerChannel) == 32)
        #expect(MemoryLayout<AudioStreamBasicDescription>.offset(of: \.mReserved) == 36)
        #expect(MemoryLayout<AudioFilePacketTableInfo>.size == 16)
        #expect(MemoryLayout<AudioFilePacketTableInfo>.offset(of: \.mPrimingFrames) == 8)
        #expect(MemoryLayout<AudioFilePacketTableInfo>.offset(of: \.mRemainderFrames) == 12)
        #expect(MemoryLayout<AudioConverterPrimeInfo>.size == 8)
        #expect(MemoryLayout<AudioConverterPrimeInfo>.offset(of: \.trailingFrames) == 4)
        #expect(MemoryLayout<AudioQueueLevelMeterState>.size == 8)
        #expect(MemoryLayout<AudioQueueLevelMeterState>.offset(of: \.mPeakPower) == 4)
        #expect(MemoryLayout<AudioFileStreamParseFlags>.size == 4 && MemoryLayout<AudioChannelBitmap>.size == 4)
        #expect(MemoryLayout<AudioFormatListItem>.size == 48 && MemoryLayout<AudioFormatListItem>.stride == 48)
        #expect(MemoryLayout<AudioFormatListItem>.offset(of: \.mChannelLayoutTag) == 40)
        // The Swift API's names and richer types read and write Apple's fields.
        var d = AudioStreamBasicDescription.linearPCM(sampleRate: 48000, channels: 2, bitsPerChannel: 24)
        #expect(d.mSampleRate == 48000 && d.mFormatID == kAudioFormatLinearPCM && d.mBytesPerFrame == 6 && d.mReserved == 0)
        d.formatID = .mpegLayer3
        #expect(d.mFormatID == 0x2E6D_7033 && d.formatFlags.rawValue == d.mFormatFlags)
        #expect(AudioFilePacketTableInfo(numberValidFrames: 9, primingFrames: 2, remainderFrames: 1).mRemainderFrames == 1)
        #expect(AudioQueueLevelMeterState(averagePower: 0.5, peakPower: 1).mPeakPower == 1)
    }

    @Test func scheduledSliceAndFileRegionHaveApplesLayout() {
        // Apple's 64-bit ScheduledAudioSlice and ScheduledAudioFileRegion (AudioUnitProperties.h):
        // C function pointers of one word, tail padding included in C's sizeof.
        #expect(MemoryLayout<ScheduledAudioSlice>.size == 112)
        #expect(MemoryLayout<ScheduledAudioSlice>.offset(of: \.mCompletionProc) == 64)
        #expect(MemoryLayout<ScheduledAudioSlice>.offset(of: \.mCompletionProcUserData) == 72)
        #expect(MemoryLayout<ScheduledAudioSlice>.offset(of: \.mFlags) == 80)
        #expect(MemoryLayout<ScheduledAudioSlice>.offset(of: \.mReserved) == 84)
        #expect(MemoryLayout<ScheduledAudioSlice>.offset(of: \.mReserved2) == 88)
        #expect(MemoryLayout<ScheduledAudioSlice>.offset(of: \.mNumberFrames) == 96)
        #expect(MemoryLayout<ScheduledAudioSlice>.offset(of: \.mBufferList) == 104)
        #expect(MemoryLayout<ScheduledAudioFileRegion>.size == 112)
        #expect(MemoryLayout<ScheduledAudioFileRegion>.offset(of: \.mCompletionProc) == 64)
        #expect(MemoryLayout<ScheduledAudioFileRegion>.offset(of: \.mCompletionProcUserData) == 72)
        #expect(MemoryLayout<ScheduledAudioFileRegion>.offset(of: \.mAudioFile) == 80)
        #expect(MemoryLayout<ScheduledAudioFileRegion>.offset(of: \.mLoopCount) == 88)
        #expect(MemoryLayout<ScheduledAudioFileRegion>.offset(of: \.mStartFrame) == 96)
        #expect(MemoryLayout<ScheduledAudioFileRegion>.offset(of: \.mFramesToPlay) == 104)
        #expect(MemoryLayout<AUScheduledAudioSliceFlags>.size == 4)
    }

    @Test func channelLayoutTranslationCallbackStructAndPlugInTypesHaveApplesLayout() {
        // Apple's 64-bit CoreAudioTypes.h layouts: a channel description is 20 bytes, a layout 32
        // (12 bytes of header, then the first description), so N descriptions take
        // size + (N - 1) * 20 bytes.
        #expect(MemoryLayout<AudioChannelDescription>.size == 20)
        #expect(MemoryLayout<AudioChannelDescription>.alignment == 4)
        #expect(MemoryLayout<AudioChannelDescription>.offset(of: \.mChannelFlags) == 4)
        #expect(MemoryLayout<AudioChannelDescription>.offset(of: \.mCoordinates) == 8)
        #expect(MemoryLayout<AudioChannelLayout>.size == 32)
        #expect(MemoryLayout<AudioChannelLayout>.offset(of: \.mChannelBitmap) == 4)
        #expect(MemoryLayout<AudioChannelLayout>.offset(of: \.mNumberChannelDescriptions) == 8)
        #expect(MemoryLayout<AudioChannelLayout>.offset(of: \.mChannelDescriptions) == 12)
        #expect(MemoryLayout<AudioChannelFlags>.size == 4)
        // AudioValueTranslation: C's sizeof includes the tail padding after mOutputDataSize.
        #expect(MemoryLayout<AudioValueTranslation>.size == 32)
        #expect(MemoryLayout<AudioValueTranslation>.offset(of: \.mInputDataSize) == 8)
        #expect(MemoryLayout<AudioValueTranslation>.offset(of: \.mOutputData) == 16)
        #expect(MemoryLayout<AudioValueTranslation>.offset(of: \.mOutputDataSize) == 24)
        // AURenderCallbackStruct: a one-word C function pointer (optional: null is none) and the refCon.
        #expect(MemoryLayout<AURenderCallbackStruct>.size == 16)
        #expect(MemoryLayout<AURenderCallbackStruct>.offset(of: \.inputProcRefCon) == 8)
        #expect(MemoryLayout<AURenderCallback?>.size == MemoryLayout<UnsafeRawPointer>.size)
        let empty = AURenderCallbackStruct()
        #expect(empty.inputProc == nil && empty.inputProcRefCon == nil)
        // AudioComponent.h: the description and the plug-in interface (four words).
        #expect(MemoryLayout<AudioComponentDescription>.size == 20)
        #expect(MemoryLayout<AudioComponentPlugInInterface>.size == 32)
        #expect(MemoryLayout<AudioComponentPlugInInterface>.offset(of: \.Close) == 8)
        #expect(MemoryLayout<AudioComponentPlugInInterface>.offset(of: \.Lookup) == 16)
        #expect(MemoryLayout<AudioComponentPlugInInterface>.offset(of: \.reserved) == 24)
        #expect(MemoryLayout<AudioComponentFactoryFunction>.size == MemoryLayout<UnsafeRawPointer>.size)
        #expect(MemoryLayout<AudioComponentMethod>.size == MemoryLayout<UnsafeRawPointer>.size)
        #expect(MemoryLayout<AudioUnitRenderProc>.size == MemoryLayout<UnsafeRawPointer>.size)
    }

    @Test func halListenerIsACFunctionPointer() {
        let proc: AudioObjectPropertyListenerProc = halListener
        // A C function pointer is one machine word and round-trips through a raw pointer, as code
        // that stores callbacks in C-typed fields does on Apple.
        #expect(MemoryLayout<AudioObjectPropertyListenerProc>.size == MemoryLayout<UnsafeRawPointer>.size)
        let back = unsafeBitCast(unsafeBitCast(proc, to: UnsafeRawPointer.self), to: AudioObjectPropertyListenerProc.self)
        var address = AudioObjectPropertyAddress(mSelector: 1, mScope: 2, mElement: 3)
        #expect(back(1, 7, &address, nil) == 7)
    }

    @Test func halAddressHasApplesLayout() {
        #expect(MemoryLayout<AudioObjectPropertyAddress>.size == 12)
        #expect(MemoryLayout<AudioObjectPropertyAddress>.offset(of: \.mElement) == 8)
        let a = AudioObjectPropertyAddress(mSelector: 1, mScope: 2, mElement: 3)
        #expect(a == AudioObjectPropertyAddress(mSelector: 1, mScope: 2, mElement: 3))
        #expect(a != AudioObjectPropertyAddress())
        #expect(Set([a, a, AudioObjectPropertyAddress()]).count == 2)
    }
}
