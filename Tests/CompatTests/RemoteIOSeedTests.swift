// Seed 001 complete: a RemoteIO output unit whose render callback pulls PCM through
// AudioConverterFillComplexBuffer from AudioFileStream packets, written as on macOS (only the
// import differs). It plays to OAT_OUTPUT=wav:... and the recording is compared with the
// Swift API's decode of the file. Also an AUGraph (mixer -> EQ -> generic output) rendered
// offline with AudioUnitRender.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

final class AudioUnitManger {
    var readedPacketIndex = 0
    var renderBufferSize: UInt32 = 0
    var outAudioUinit: AudioUnit?
    var streamDescription = AudioStreamBasicDescription()
    var audioFileStreamID: AudioFileStreamID?
    var renderBufferList: UnsafeMutablePointer<AudioBufferList>?
    var converter: AudioConverterRef?
    var paketsArray: [[UInt8]] = []
    var currentPacket: [UInt8] = []
    var aspdesc = AudioStreamPacketDescription()
    var failure: OSStatus = noErr
    // Test instrumentation: render calls that found no packets left.
    let lock = NSLock()
    var noDataCalls = 0
    var stopped = false

    static func audioStreamBasicDescription() -> AudioStreamBasicDescription {
        var description = AudioStreamBasicDescription()
        description.mSampleRate = 44100.0
        description.mFormatID = kAudioFormatLinearPCM
        description.mFormatFlags = kLinearPCMFormatFlagIsSignedInteger
        description.mFramesPerPacket = 1
        description.mBytesPerPacket = 4
        description.mBytesPerFrame = 4
        description.mChannelsPerFrame = 2
        description.mBitsPerChannel = 16
        description.mReserved = 0
        return description
    }

    func setupOutAudioUnit() {
        var ioUnitDescription = AudioComponentDescription()
        ioUnitDescription.componentType = kAudioUnitType_Output
        ioUnitDescription.componentSubType = kAudioUnitSubType_RemoteIO
        ioUnitDescription.componentManufacturer = kAudioUnitManufacturer_Apple
        ioUnitDescription.componentFlags = 0
        ioUnitDescription.componentFlagsMask = 0
        let outComponent = AudioComponentFindNext(nil, &ioUnitDescription)
        var status = AudioComponentInstanceNew(outComponent!, &outAudioUinit)
        assert(status == noErr)
        var pcmStreamDesc = AudioUnitManger.audioStreamBasicDescription()
        status = AudioUnitSetProperty(outAudioUinit!, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Input, 0, &pcmStreamDesc,
                                      UInt32(MemoryLayout<AudioStreamBasicDescription>.size))
        if status != noErr { failure = status }
        var callBackStruct = AURenderCallbackStruct()
        callBackStruct.inputProc = DJAURenderCallback
        callBackStruct.inputProcRefCon = Unmanaged.passUnretained(self).toOpaque()
        status = AudioUnitSetProperty(outAudioUinit!, kAudioUnitProperty_SetRenderCallback, kAudioUnitScope_Global, 0, &callBackStruct,
                                      UInt32(MemoryLayout<AURenderCallbackStruct>.size))
        if status != noErr { failure = status }
        let bufferSize: UInt32 = 4096 * 4
        renderBufferSize = bufferSize
        renderBufferList = calloc(4, MemoryLayout<UInt32>.size + MemoryLayout<UInt32>.size + MemoryLayout<AudioBuffer>.size)!
            .bindMemory(to: AudioBufferList.self, capacity: 1)
        renderBufferList!.pointee.mNumberBuffers = 1
        renderBufferList!.pointee.mBuffers.mData = calloc(1, Int(bufferSize))
        renderBufferList!.pointee.mBuffers.mDataByteSize = bufferSize
        renderBufferList!.pointee.mBuffers.mNumberChannels = 2
    }

    @discardableResult
    func play() -> Bool {
        _ = AudioUnitInitialize(outAudioUinit!)   // RemoteIO initialises itself on start on iOS; harmless
        return AudioOutputUnitStart(outAudioUinit!) == noErr
    }

    @discardableResult
    func stop() -> Bool {
        let status = AudioOutputUnitStop(outAudioUinit!)
        lock.lock(); stopped = true; lock.unlock()
        return status == noErr
    }

    deinit {
        if let renderBufferList {
            free(renderBufferList.pointee.mBuffers.mData)
            free(renderBufferList)
        }
        if let outAudioUinit { AudioComponentInstanceDispose(outAudioUinit) }
    }
}

private func DJAURenderCallback(_ inRefCon: UnsafeMutableRawPointer, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                                _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inBusNumber: UInt32, _ inNumberFrames: UInt32,
                                _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    let this = Unmanaged<AudioUnitManger>.fromOpaque(inRefCon).takeUnretainedValue()
    this.lock.lock()
    defer { this.lock.unlock() }
    if this.readedPacketIndex < this.paketsArray.count {
        var packetSize = inNumberFrames
        let status = AudioConverterFillComplexBuffer(this.converter!, DJAudioConverterComplexInputDataProc, inRefCon, &packetSize, this.renderBufferList!, nil)
        if status != noErr && status != OSStatus(bitPattern: 0x444A_6E64) /* 'DJnd' */ && status != -1 {
            this.failure = status
            return -1
        } else if packetSize == 0 {
            ioData!.pointee.mNumberBuffers = 0
        } else {
            ioData!.pointee.mNumberBuffers = 1
            ioData!.pointee.mBuffers.mNumberChannels = 2
            ioData!.pointee.mBuffers.mDataByteSize = this.renderBufferList!.pointee.mBuffers.mDataByteSize
            ioData!.pointee.mBuffers.mData = this.renderBufferList!.pointee.mBuffers.mData
            this.renderBufferList!.pointee.mBuffers.mDataByteSize = this.renderBufferSize
        }
    } else {
        ioData!.pointee.mNumberBuffers = 0
        this.noDataCalls += 1
        return -1
    }
    return noErr
}

private func DJAudioFileStream_PropertyListenerProc(_ inClientData: UnsafeMutableRawPointer, _ inAudioFileStream: AudioFileStreamID,
                                                    _ inPropertyID: AudioFileStreamPropertyID,
                                                    _ ioFlags: UnsafeMutablePointer<AudioFileStreamPropertyFlags>) {
    guard inPropertyID == kAudioFileStreamProperty_DataFormat else { return }
    let this = Unmanaged<AudioUnitManger>.fromOpaque(inClientData).takeUnretainedValue()
    var dataSize: UInt32 = 0
    var writable: DarwinBoolean = false
    var status = AudioFileStreamGetPropertyInfo(inAudioFileStream, kAudioFileStreamProperty_DataFormat, &dataSize, &writable)
    assert(status == noErr)
    status = AudioFileStreamGetProperty(inAudioFileStream, kAudioFileStreamProperty_DataFormat, &dataSize, &this.streamDescription)
    assert(status == noErr)
    var destFormat = AudioUnitManger.audioStreamBasicDescription()
    status = AudioConverterNew(&this.streamDescription, &destFormat, &this.converter)
    assert(status == noErr)
}

private func DJAudioFileStreamPacketsProc(_ inClientData: UnsafeMutableRawPointer, _ inNumberBytes: UInt32, _ inNumberPackets: UInt32,
                                          _ inInputData: UnsafeRawPointer, _ inPacketDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) {
    let this = Unmanaged<AudioUnitManger>.fromOpaque(inClientData).takeUnretainedValue()
    if let inPacketDescriptions {
        for i in 0..<Int(inNumberPackets) {
            let packetOffset = Int(inPacketDescriptions[i].mStartOffset)
            let packetSize = Int(inPacketDescriptions[i].mDataByteSize)
            assert(packetSize > 0)
            this.paketsArray.append(Array(UnsafeRawBufferPointer(start: inInputData + packetOffset, count: packetSize)))
        }
    }
}

private func DJAudioConverterComplexInputDataProc(_ inAudioConverter: AudioConverterRef, _ ioNumberDataPackets: UnsafeMutablePointer<UInt32>,
                                                  _ ioData: UnsafeMutablePointer<AudioBufferList>,
                                                  _ outDataPacketDescription: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                                                  _ inUserData: UnsafeMutableRawPointer?) -> OSStatus {
    let this = Unmanaged<AudioUnitManger>.fromOpaque(inUserData!).takeUnretainedValue()
    if this.readedPacketIndex >= this.paketsArray.count {
        ioNumberDataPackets.pointee = 0
        return -1 // "Have No Data"
    }
    this.currentPacket = this.paketsArray[this.readedPacketIndex]
    ioData.pointee.mNumberBuffers = 1
    ioData.pointee.mBuffers.mData = this.currentPacket.withUnsafeMutableBytes { $0.baseAddress }
    ioData.pointee.mBuffers.mDataByteSize = UInt32(this.currentPacket.count)
    ioNumberDataPackets.pointee = 1
    this.aspdesc = AudioStreamPacketDescription(mStartOffset: 0, mVariableFramesInPacket: 1, mDataByteSize: UInt32(this.currentPacket.count))
    withUnsafeMutablePointer(to: &this.aspdesc) { outDataPacketDescription?.pointee = $0 }
    this.readedPacketIndex += 1
    return noErr
}

private func sineCallback(_ inRefCon: UnsafeMutableRawPointer, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                          _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inBusNumber: UInt32, _ inNumberFrames: UInt32,
                          _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    // Bus 0: 0.5 constant on both channels; bus 1: 0.25 (Float32 non-interleaved, the default format).
    let value: Float = inBusNumber == 0 ? 0.5 : 0.25
    let list = UnsafeMutableAudioBufferListPointer(ioData!)
    for b in list {
        let p = b.mData!.assumingMemoryBound(to: Float.self)
        for i in 0..<Int(inNumberFrames) { p[i] = value }
    }
    return noErr
}

extension CompatSeedTests {
    @Test("seed 001: RemoteIO render callback pulling through AudioConverterFillComplexBuffer from AudioFileStream packets", .requires(corpusMissing))
    func remoteIORenderCallback() throws {
        let relative = "ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3"
        let path = try corpusFile(relative)
        let wav = temporaryWAV("remoteio")
        setenv("OAT_OUTPUT", "wav:" + wav, 1)
        defer { unsetenv("OAT_OUTPUT"); if getenv("OAT_KEEP_WAV") == nil { remove(wav) } else { print("kept \(wav)") } }

        let player = AudioUnitManger()
        player.setupOutAudioUnit()
        #expect(player.failure == noErr)
        let client = Unmanaged.passUnretained(player).toOpaque()
        #expect(AudioFileStreamOpen(client, DJAudioFileStream_PropertyListenerProc, DJAudioFileStreamPacketsProc, 0, &player.audioFileStreamID) == noErr)
        guard let stream = player.audioFileStreamID, let file = fopen(path, "rb") else { return }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n == 0 { break }
            #expect(AudioFileStreamParseBytes(stream, UInt32(n), chunk, []) == noErr)
        }
        fclose(file)
        #expect(player.converter != nil)
        #expect(player.play())
        // The WAV output renders as fast as it can: wait until the callback ran out of packets.
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            player.lock.lock()
            let done = player.noDataCalls > 2
            player.lock.unlock()
            if done { break }
            usleep(5000)
        }
        #expect(player.stop())
        #expect(player.failure == noErr)
        AudioFileStreamClose(stream)
        if let converter = player.converter { AudioConverterDispose(converter) }

        let recording = readFloatWAV(wav)
        #expect(recording.channels == 2)
        // As in the seed, the frames the decoder still held when the input proc said "no data"
        // never come out (at most two MP3 frames); silence follows until the unit is stopped.
        // Compare all but those last two frames of the file.
        let referenceFrames = try untrimmedFrameCount(path)
        let keep = min(recording.samples.count / 2, referenceFrames - 1152 * 2)
        #expect(recording.samples.count / 2 >= referenceFrames, "the recording covers the file")
        let result = try compare(recording: Array(recording.samples.prefix(keep * 2)), channels: 2, with: path)
        print("\(relative): \(player.paketsArray.count) packets through RemoteIO, \(result)")
        #expect(result.lag == 0, "\(result)")
        #expect(result.snr > 80, "\(result)")
    }

    @Test("AUGraph: two render callbacks -> MultiChannelMixer -> NBandEQ -> GenericOutput, rendered with AudioUnitRender")
    func auGraphOffline() {
        var graph: AUGraph?
        #expect(NewAUGraph(&graph) == noErr)
        guard let graph else { return }
        defer { DisposeAUGraph(graph) }
        var mixerDesc = AudioComponentDescription(componentType: kAudioUnitType_Mixer, componentSubType: kAudioUnitSubType_MultiChannelMixer,
                                                  componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        var eqDesc = AudioComponentDescription(componentType: kAudioUnitType_Effect, componentSubType: kAudioUnitSubType_NBandEQ,
                                               componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        var outDesc = AudioComponentDescription(componentType: kAudioUnitType_Output, componentSubType: kAudioUnitSubType_GenericOutput,
                                                componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        var mixerNode: AUNode = 0, eqNode: AUNode = 0, outNode: AUNode = 0
        #expect(AUGraphAddNode(graph, &mixerDesc, &mixerNode) == noErr)
        #expect(AUGraphAddNode(graph, &eqDesc, &eqNode) == noErr)
        #expect(AUGraphAddNode(graph, &outDesc, &outNode) == noErr)
        #expect(AUGraphOpen(graph) == noErr)
        var mixer: AudioUnit?, eq: AudioUnit?, output: AudioUnit?
        #expect(AUGraphNodeInfo(graph, mixerNode, nil, &mixer) == noErr)
        #expect(AUGraphNodeInfo(graph, eqNode, nil, &eq) == noErr)
        #expect(AUGraphNodeInfo(graph, outNode, nil, &output) == noErr)
        guard let mixer, let eq, let output else { return }
        var inputs: UInt32 = 2
        #expect(AudioUnitSetProperty(mixer, kAudioUnitProperty_ElementCount, kAudioUnitScope_Input, 0, &inputs, 4) == noErr)
        var bands: UInt32 = 1
        #expect(AudioUnitSetProperty(eq, kAUNBandEQProperty_NumberOfBands, kAudioUnitScope_Global, 0, &bands, 4) == noErr)
        var callback = AURenderCallbackStruct(inputProc: sineCallback, inputProcRefCon: nil)
        #expect(AUGraphSetNodeInputCallback(graph, mixerNode, 0, &callback) == noErr)
        #expect(AUGraphSetNodeInputCallback(graph, mixerNode, 1, &callback) == noErr)
        #expect(AUGraphConnectNodeInput(graph, mixerNode, 0, eqNode, 0) == noErr)
        #expect(AUGraphConnectNodeInput(graph, eqNode, 0, outNode, 0) == noErr)
        #expect(AUGraphConnectNodeInput(graph, eqNode, 0, outNode, 0) == kAUGraphErr_InvalidConnection)
        // Input 1 at half volume, master at 0.8; the EQ's band is a +6 dB low shelf at 20 kHz
        // (so DC passes at +6 dB).
        #expect(AudioUnitSetParameter(mixer, kMultiChannelMixerParam_Volume, kAudioUnitScope_Input, 1, 0.5, 0) == noErr)
        #expect(AudioUnitSetParameter(mixer, kMultiChannelMixerParam_Volume, kAudioUnitScope_Output, 0, 0.8, 0) == noErr)
        #expect(AudioUnitSetParameter(eq, kAUNBandEQParam_FilterType, kAudioUnitScope_Global, 0, Float(kAUNBandEQFilterType_LowShelf), 0) == noErr)
        #expect(AudioUnitSetParameter(eq, kAUNBandEQParam_Frequency, kAudioUnitScope_Global, 0, 20000, 0) == noErr)
        #expect(AudioUnitSetParameter(eq, kAUNBandEQParam_Gain, kAudioUnitScope_Global, 0, 6, 0) == noErr)
        #expect(AudioUnitSetParameter(eq, kAUNBandEQParam_Gain, kAudioUnitScope_Global, 0, 99, 0) == kAudioUnitErr_InvalidParameter)
        #expect(AudioUnitSetParameter(eq, 9999, kAudioUnitScope_Global, 0, 1, 0) == kAudioUnitErr_InvalidParameter)
        #expect(AUGraphInitialize(graph) == noErr)
        var value: Float = 0
        #expect(AudioUnitGetParameter(mixer, kMultiChannelMixerParam_Volume, kAudioUnitScope_Input, 1, &value) == noErr)
        #expect(value == 0.5)

        let list = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(list.unsafeMutablePointer) }
        let left = UnsafeMutablePointer<Float>.allocate(capacity: 512), right = UnsafeMutablePointer<Float>.allocate(capacity: 512)
        defer { left.deallocate(); right.deallocate() }
        var last: Float = 0
        var time = AudioTimeStamp()
        for _ in 0..<40 {
            list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: 2048, mData: left)
            list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: 2048, mData: right)
            var flags = AudioUnitRenderActionFlags()
            #expect(AudioUnitRender(output, &flags, &time, 0, 512, list.unsafeMutablePointer) == noErr)
            time.mSampleTime += 512
            last = left[511]
        }
        // Mixer: centre pan on stereo inputs is unity; (0.5 + 0.25 * 0.5) * 0.8 = 0.5, then +6 dB.
        let expected = Float(0.5 * pow(10, 6.0 / 20))
        #expect(abs(last - expected) < 0.01, "got \(last), expected \(expected)")
        #expect(abs(right[100] - expected) < 0.01)

        // A live edit: take the EQ out (mixer straight to the output) and AUGraphUpdate.
        #expect(AUGraphDisconnectNodeInput(graph, outNode, 0) == noErr)
        #expect(AUGraphRemoveNode(graph, eqNode) == noErr)
        #expect(AUGraphConnectNodeInput(graph, mixerNode, 0, outNode, 0) == noErr)
        var updated: DarwinBoolean = false
        #expect(AUGraphUpdate(graph, &updated) == noErr)
        #expect(updated.boolValue)
        var count: UInt32 = 0
        #expect(AUGraphGetNodeCount(graph, &count) == noErr && count == 2)
        for _ in 0..<10 {
            list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: 2048, mData: left)
            list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: 2048, mData: right)
            #expect(AudioUnitRender(output, nil, &time, 0, 512, list.unsafeMutablePointer) == noErr)
            time.mSampleTime += 512
        }
        #expect(abs(left[511] - 0.5) < 0.001, "after the update: \(left[511])")
        #expect(AUGraphUninitialize(graph) == noErr)
    }

    @Test("AudioComponentFindNext finds the units, bad formats and states are errors")
    func componentsAndErrors() {
        // Apple's effects (components registered by other tests have other manufacturers).
        var any = AudioComponentDescription(componentType: kAudioUnitType_Effect, componentSubType: 0, componentManufacturer: kAudioUnitManufacturer_Apple,
                                            componentFlags: 0, componentFlagsMask: 0)
        var found: [UInt32] = []
        var c = AudioComponentFindNext(nil, &any)
        while let comp = c {
            var d = AudioComponentDescription()
            #expect(AudioComponentGetDescription(comp, &d) == noErr)
            found.append(d.componentSubType)
            c = AudioComponentFindNext(comp, &any)
        }
        #expect(Set(found) == [kAudioUnitSubType_NBandEQ, kAudioUnitSubType_Reverb2, kAudioUnitSubType_Delay,
                               kAudioUnitSubType_DynamicsProcessor, kAudioUnitSubType_PeakLimiter,
                               kAudioUnitSubType_LowPassFilter, kAudioUnitSubType_HighPassFilter, kAudioUnitSubType_BandPassFilter,
                               kAudioUnitSubType_HighShelfFilter, kAudioUnitSubType_LowShelfFilter, kAudioUnitSubType_ParametricEQ,
                               kAudioUnitSubType_Distortion])
        #expect(kAudioUnitType_Output == 0x6175_6F75 && kAudioUnitSubType_RemoteIO == 0x7269_6F63 && kAudioUnitManufacturer_Apple == 0x6170_706C)

        var desc = AudioComponentDescription(componentType: kAudioUnitType_Effect, componentSubType: kAudioUnitSubType_Delay,
                                             componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        var unit: AudioUnit?
        #expect(AudioComponentInstanceNew(AudioComponentFindNext(nil, &desc)!, &unit) == noErr)
        guard let unit else { return }
        defer { AudioComponentInstanceDispose(unit) }
        var mp3 = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatMPEGLayer3, mFormatFlags: 0, mBytesPerPacket: 0,
                                              mFramesPerPacket: 1152, mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
        #expect(AudioUnitSetProperty(unit, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Input, 0, &mp3, UInt32(MemoryLayout<AudioStreamBasicDescription>.size)) == kAudioUnitErr_FormatNotSupported)
        var list = AudioBufferList()
        var time = AudioTimeStamp()
        #expect(AudioUnitRender(unit, nil, &time, 0, 256, &list) == kAudioUnitErr_Uninitialized)
        #expect(AudioUnitSetProperty(unit, 12345, kAudioUnitScope_Global, 0, nil, 0) == kAudioUnitErr_InvalidProperty)
        var frames: UInt32 = 0
        var size: UInt32 = 4
        #expect(AudioUnitGetProperty(unit, kAudioUnitProperty_MaximumFramesPerSlice, kAudioUnitScope_Global, 0, &frames, &size) == noErr)
        #expect(frames == 4096)
        #expect(AudioUnitSetParameter(unit, kDelayParam_DelayTime, kAudioUnitScope_Global, 0, 0.01, 0) == noErr)
        #expect(AudioUnitInitialize(unit) == noErr)
        var rate: Float = 0
        #expect(AudioUnitGetParameter(unit, kDelayParam_DelayTime, kAudioUnitScope_Global, 0, &rate) == noErr)
        #expect(rate == 0.01 as Float)
    }
}
