// Code written as macOS programs write it against AudioChannelLayout (allocated for N
// descriptions and walked from `mChannelDescriptions`), AudioValueTranslation,
// AURenderCallbackStruct (a global function as the render callback) and a component plug-in
// registered with AudioComponentRegister and Apple's C factory function type. That the file
// compiles is part of the test: these are C types, so a `@convention(c)` function type can take
// pointers to them, and the plug-in's methods are C functions cast to `AudioComponentMethod`.

import OpenAudioToolbox
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A C callback type over the C structs (a Swift-declared struct is refused in a C function type).
private typealias LayoutVisitor = @convention(c) (UnsafePointer<AudioChannelLayout>, UnsafeMutablePointer<AudioValueTranslation>?,
                                                  UnsafeMutablePointer<AURenderCallbackStruct>?) -> UInt32

/// Counts a layout's descriptions as C code walks them.
private func countLabels(_ layout: UnsafePointer<AudioChannelLayout>, _ translation: UnsafeMutablePointer<AudioValueTranslation>?,
                         _ callback: UnsafeMutablePointer<AURenderCallbackStruct>?) -> UInt32 {
    layout.pointee.mNumberChannelDescriptions
}

/// A render callback as a global function: fills every buffer with the Float at `inRefCon`.
private func constantRender(_ inRefCon: UnsafeMutableRawPointer, _ ioActionFlags: UnsafeMutablePointer<AudioUnitRenderActionFlags>,
                            _ inTimeStamp: UnsafePointer<AudioTimeStamp>, _ inBusNumber: UInt32, _ inNumberFrames: UInt32,
                            _ ioData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    let level = inRefCon.load(as: Float.self)
    for buffer in UnsafeMutableAudioBufferListPointer(ioData!) {
        let samples = buffer.mData!.assumingMemoryBound(to: Float.self)
        for i in 0..<Int(inNumberFrames) { samples[i] = level }
    }
    return noErr
}

// MARK: - A gain plug-in written as a C AudioUnit v2 plug-in is

/// The instance: the interface first (its address is `self` in every call), then the state.
private struct GainPlugIn {
    var interface: AudioComponentPlugInInterface
    var instance: AudioComponentInstance?
    var gain: Float32
    var input: AURenderCallbackStruct
    var initialized: Bool
}

private let gainPlugInsClosed = Atomic<Int>(0)

private func gainOpen(_ me: UnsafeMutableRawPointer, _ instance: AudioComponentInstance) -> OSStatus {
    me.assumingMemoryBound(to: GainPlugIn.self).pointee.instance = instance
    return noErr
}

private func gainClose(_ me: UnsafeMutableRawPointer) -> OSStatus {
    let plugIn = me.assumingMemoryBound(to: GainPlugIn.self)
    plugIn.deinitialize(count: 1)
    plugIn.deallocate()
    gainPlugInsClosed.add(1, ordering: .relaxed)
    return noErr
}

private func gainInitialize(_ me: UnsafeMutableRawPointer) -> OSStatus {
    me.assumingMemoryBound(to: GainPlugIn.self).pointee.initialized = true
    return noErr
}

private func gainSetProperty(_ me: UnsafeMutableRawPointer, _ id: AudioUnitPropertyID, _ scope: AudioUnitScope, _ element: AudioUnitElement,
                             _ data: UnsafeRawPointer?, _ size: UInt32) -> OSStatus {
    guard id == kAudioUnitProperty_SetRenderCallback else { return kAudioUnitErr_InvalidProperty }
    guard let data, size >= UInt32(MemoryLayout<AURenderCallbackStruct>.size) else { return kAudio_ParamError }
    me.assumingMemoryBound(to: GainPlugIn.self).pointee.input = data.load(as: AURenderCallbackStruct.self)
    return noErr
}

private func gainGetParameter(_ me: UnsafeMutableRawPointer, _ id: AudioUnitParameterID, _ scope: AudioUnitScope, _ element: AudioUnitElement,
                              _ value: UnsafeMutablePointer<AudioUnitParameterValue>) -> OSStatus {
    guard id == 0 else { return kAudioUnitErr_InvalidParameter }
    value.pointee = me.assumingMemoryBound(to: GainPlugIn.self).pointee.gain
    return noErr
}

private func gainSetParameter(_ me: UnsafeMutableRawPointer, _ id: AudioUnitParameterID, _ scope: AudioUnitScope, _ element: AudioUnitElement,
                              _ value: AudioUnitParameterValue, _ offset: UInt32) -> OSStatus {
    guard id == 0 else { return kAudioUnitErr_InvalidParameter }
    me.assumingMemoryBound(to: GainPlugIn.self).pointee.gain = value
    return noErr
}

private func gainRender(_ me: UnsafeMutableRawPointer, _ flags: UnsafeMutablePointer<AudioUnitRenderActionFlags>?,
                        _ time: UnsafePointer<AudioTimeStamp>, _ bus: UInt32, _ frames: UInt32,
                        _ data: UnsafeMutablePointer<AudioBufferList>) -> OSStatus {
    let plugIn = me.assumingMemoryBound(to: GainPlugIn.self)
    guard plugIn.pointee.initialized else { return kAudioUnitErr_Uninitialized }
    guard let pull = plugIn.pointee.input.inputProc else { return kAudioUnitErr_NoConnection }
    let refCon = plugIn.pointee.input.inputProcRefCon ?? me
    var pullFlags = AudioUnitRenderActionFlags()
    let status = flags.map { pull(refCon, $0, time, 0, frames, data) }
        ?? withUnsafeMutablePointer(to: &pullFlags) { pull(refCon, $0, time, 0, frames, data) }
    guard status == noErr else { return status }
    for buffer in UnsafeMutableAudioBufferListPointer(data) {
        let samples = buffer.mData!.assumingMemoryBound(to: Float.self)
        for i in 0..<Int(frames) { samples[i] *= plugIn.pointee.gain }
    }
    return noErr
}

/// The plug-in's dispatch: a C function per selector, as `AudioComponentMethod`.
private func gainLookup(_ selector: Int16) -> AudioComponentMethod? {
    switch Int(selector) {
    case kAudioUnitInitializeSelect: return unsafeBitCast(gainInitialize as AudioUnitInitializeProc, to: AudioComponentMethod.self)
    case kAudioUnitSetPropertySelect: return unsafeBitCast(gainSetProperty as AudioUnitSetPropertyProc, to: AudioComponentMethod.self)
    case kAudioUnitGetParameterSelect: return unsafeBitCast(gainGetParameter as AudioUnitGetParameterProc, to: AudioComponentMethod.self)
    case kAudioUnitSetParameterSelect: return unsafeBitCast(gainSetParameter as AudioUnitSetParameterProc, to: AudioComponentMethod.self)
    case kAudioUnitRenderSelect: return unsafeBitCast(gainRender as AudioUnitRenderProc, to: AudioComponentMethod.self)
    default: return nil
    }
}

/// The factory (Apple's `AudioComponentFactoryFunction`): a new instance's interface.
private func gainFactory(_ description: UnsafePointer<AudioComponentDescription>) -> UnsafeMutablePointer<AudioComponentPlugInInterface>? {
    let plugIn = UnsafeMutablePointer<GainPlugIn>.allocate(capacity: 1)
    plugIn.initialize(to: GainPlugIn(interface: AudioComponentPlugInInterface(Open: gainOpen, Close: gainClose, Lookup: gainLookup, reserved: nil),
                                     instance: nil, gain: 0.5, input: AURenderCallbackStruct(), initialized: false))
    return UnsafeMutableRawPointer(plugIn).assumingMemoryBound(to: AudioComponentPlugInInterface.self)
}

/// Renders `frames` frames of two non-interleaved Float32 channels from `unit`; the samples of channel 0 and 1.
private func renderStereo(_ unit: AudioUnit, frames: Int) -> (OSStatus, [Float], [Float]) {
    let list = AudioBufferList.allocate(maximumBuffers: 2)
    defer { free(list.unsafeMutablePointer) }
    let storage = [UnsafeMutablePointer<Float>.allocate(capacity: frames), UnsafeMutablePointer<Float>.allocate(capacity: frames)]
    defer { storage.forEach { $0.deallocate() } }
    for c in 0..<2 {
        storage[c].initialize(repeating: 0, count: frames)
        list[c] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(frames * 4), mData: UnsafeMutableRawPointer(storage[c]))
    }
    var flags = AudioUnitRenderActionFlags()
    var time = AudioTimeStamp()
    time.mSampleTime = 0
    time.mFlags = .sampleTimeValid
    let status = AudioUnitRender(unit, &flags, &time, 0, UInt32(frames), list.unsafeMutablePointer)
    return (status, Array(UnsafeBufferPointer(start: storage[0], count: frames)), Array(UnsafeBufferPointer(start: storage[1], count: frames)))
}

@Suite struct AppleStyleChannelLayoutAndPlugInTests {
    @Test func channelLayoutWithDescriptionsIsAllocatedAndWalkedAsOnMacOS() {
        // Room for N descriptions, as macOS code computes it.
        let n = 3
        let size = MemoryLayout<AudioChannelLayout>.size + (n - 1) * MemoryLayout<AudioChannelDescription>.size
        let layout = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: MemoryLayout<AudioChannelLayout>.alignment)
            .bindMemory(to: AudioChannelLayout.self, capacity: 1)
        defer { layout.deallocate() }
        layout.pointee = AudioChannelLayout()
        layout.pointee.mChannelLayoutTag = kAudioChannelLayoutTag_UseChannelDescriptions
        layout.pointee.mNumberChannelDescriptions = UInt32(n)
        let labels: [AudioChannelLabel] = [kAudioChannelLabel_Left, kAudioChannelLabel_Right, kAudioChannelLabel_LFEScreen]
        withUnsafeMutablePointer(to: &layout.pointee.mChannelDescriptions) { first in
            let descriptions = UnsafeMutableBufferPointer(start: first, count: n)
            for i in 0..<n {
                descriptions[i] = AudioChannelDescription(mChannelLabel: labels[i], mChannelFlags: [], mCoordinates: (0, 0, 0))
            }
            descriptions[2].mChannelFlags = [.rectangularCoordinates, .meters]
            descriptions[2].mCoordinates = (0, 1, -0.5)
        }
        // The bytes C reads: the third description's label at 12 + 2 * 20.
        let raw = UnsafeRawPointer(layout)
        #expect(raw.load(fromByteOffset: 12 + 2 * 20, as: UInt32.self) == kAudioChannelLabel_LFEScreen)
        #expect(raw.load(fromByteOffset: 12 + 2 * 20 + 4, as: UInt32.self) == 5)
        #expect(raw.load(fromByteOffset: 12 + 2 * 20 + 12, as: Float32.self) == 1)
        // Audio Format Services reads the N descriptions.
        var channels: UInt32 = 0
        var channelsSize = UInt32(MemoryLayout<UInt32>.size)
        #expect(AudioFormatGetProperty(kAudioFormatProperty_NumberOfChannelsForLayout, UInt32(size), layout, &channelsSize, &channels) == noErr)
        #expect(channels == 3)
        let visitor: LayoutVisitor = countLabels
        #expect(visitor(layout, nil, nil) == 3)

        // A layout for a tag, sized by GetPropertyInfo and walked back.
        var tag = kAudioChannelLayoutTag_MPEG_5_1_A
        var byteCount: UInt32 = 0
        #expect(AudioFormatGetPropertyInfo(kAudioFormatProperty_ChannelLayoutForTag, UInt32(MemoryLayout<AudioChannelLayoutTag>.size), &tag,
                                           &byteCount) == noErr)
        #expect(Int(byteCount) == MemoryLayout<AudioChannelLayout>.size + 5 * MemoryLayout<AudioChannelDescription>.size)
        let six = UnsafeMutableRawPointer.allocate(byteCount: Int(byteCount), alignment: MemoryLayout<AudioChannelLayout>.alignment)
            .bindMemory(to: AudioChannelLayout.self, capacity: 1)
        defer { six.deallocate() }
        #expect(AudioFormatGetProperty(kAudioFormatProperty_ChannelLayoutForTag, UInt32(MemoryLayout<AudioChannelLayoutTag>.size), &tag,
                                       &byteCount, six) == noErr)
        #expect(six.pointee.mChannelLayoutTag == kAudioChannelLayoutTag_UseChannelDescriptions)
        let read = withUnsafeMutablePointer(to: &six.pointee.mChannelDescriptions) { first in
            UnsafeBufferPointer(start: first, count: Int(six.pointee.mNumberChannelDescriptions)).map(\.mChannelLabel)
        }
        #expect(read == [kAudioChannelLabel_Left, kAudioChannelLabel_Right, kAudioChannelLabel_Center, kAudioChannelLabel_LFEScreen,
                         kAudioChannelLabel_LeftSurround, kAudioChannelLabel_RightSurround])
    }

    @Test func channelLayoutPointerViewsWalkTheDescriptions() throws {
        // Apple's overlay views (AudioChannelLayout.UnsafePointer / .UnsafeMutablePointer), as
        // UnsafeMutableAudioBufferListPointer is for buffer lists.
        let n = 4
        let size = MemoryLayout<AudioChannelLayout>.size + (n - 1) * MemoryLayout<AudioChannelDescription>.size
        let raw = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: MemoryLayout<AudioChannelLayout>.alignment)
        defer { raw.deallocate() }
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        let layout = raw.bindMemory(to: AudioChannelLayout.self, capacity: 1)
        layout.pointee.mChannelLayoutTag = kAudioChannelLayoutTag_UseChannelDescriptions
        let descriptions = AudioChannelLayout.UnsafeMutablePointer(layout)
        descriptions.count = n
        #expect(layout.pointee.mNumberChannelDescriptions == 4)
        for i in descriptions.indices {
            descriptions[i] = AudioChannelDescription(mChannelLabel: AudioChannelLabel(i + 1), mChannelFlags: .sphericalCoordinates,
                                                      mCoordinates: (Float32(i), 0, 1))
        }
        // The last one lies 12 + 3 * 20 bytes in, where C reads it.
        #expect(raw.load(fromByteOffset: 12 + 3 * 20, as: UInt32.self) == 4)
        let view = try #require(AudioChannelLayout.UnsafePointer(Optional(UnsafePointer(layout))))
        #expect(view.map(\.mChannelLabel) == [1, 2, 3, 4])
        #expect(view[2].mCoordinates.0 == 2 && view[2].mChannelFlags == .sphericalCoordinates)
        #expect(descriptions.unsafePointer == view.unsafePointer && view.count == n)
        #expect(AudioChannelLayout.UnsafePointer(nil) == nil)
        var channels: UInt32 = 0
        var channelsSize = UInt32(MemoryLayout<UInt32>.size)
        #expect(AudioFormatGetProperty(kAudioFormatProperty_NumberOfChannelsForLayout, UInt32(size), descriptions.unsafePointer,
                                       &channelsSize, &channels) == noErr && channels == 4)
    }

    @Test func valueTranslationHasApplesMemberwiseInitialiser() {
        var input: UInt32 = 7
        var output: Float64 = 0
        let translation = withUnsafeMutablePointer(to: &input) { i in
            withUnsafeMutablePointer(to: &output) { o in
                AudioValueTranslation(mInputData: i, mInputDataSize: UInt32(MemoryLayout<UInt32>.size),
                                      mOutputData: o, mOutputDataSize: UInt32(MemoryLayout<Float64>.size))
            }
        }
        #expect(translation.mInputDataSize == 4 && translation.mOutputDataSize == 8)
    }

    @Test func renderCallbackIsAGlobalFunctionInACallbackStruct() throws {
        var description = AudioComponentDescription(componentType: kAudioUnitType_FormatConverter, componentSubType: kAudioUnitSubType_AUConverter,
                                                    componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        let component = try #require(AudioComponentFindNext(nil, &description))
        var unit: AudioUnit?
        #expect(AudioComponentInstanceNew(component, &unit) == noErr)
        let converter = try #require(unit)
        defer { AudioComponentInstanceDispose(converter) }
        let level = UnsafeMutablePointer<Float>.allocate(capacity: 1)
        defer { level.deallocate() }
        level.pointee = 0.25
        // The zeroed struct, then the fields, as macOS code sets a render callback.
        var callback = AURenderCallbackStruct()
        callback.inputProc = constantRender
        callback.inputProcRefCon = UnsafeMutableRawPointer(level)
        #expect(AudioUnitSetProperty(converter, kAudioUnitProperty_SetRenderCallback, kAudioUnitScope_Input, 0, &callback,
                                     UInt32(MemoryLayout<AURenderCallbackStruct>.size)) == noErr)
        #expect(AudioUnitInitialize(converter) == noErr)
        let (status, left, right) = renderStereo(converter, frames: 512)
        #expect(status == noErr)
        #expect(left.allSatisfy { abs($0 - 0.25) < 1e-6 } && right.allSatisfy { abs($0 - 0.25) < 1e-6 })
        // Apple's memberwise initialiser.
        let other = AURenderCallbackStruct(inputProc: constantRender, inputProcRefCon: nil)
        #expect(other.inputProc != nil)
    }

    @Test func componentPlugInRegisteredWithACFactoryIsDrivenThroughItsMethods() throws {
        var description = AudioComponentDescription(componentType: kAudioUnitType_Effect, componentSubType: 0x6761_696E /* 'gain' */,
                                                    componentManufacturer: 0x5465_7374 /* 'Test' */, componentFlags: 0, componentFlagsMask: 0)
        let registered = AudioComponentRegister(&description, "Test: C gain", 0x0001_0200, gainFactory)
        let component = try #require(AudioComponentFindNext(nil, &description))
        var version: UInt32 = 0
        #expect(AudioComponentGetVersion(component, &version) == noErr && version == 0x0001_0200)
        #expect(AudioComponentGetVersion(registered, &version) == noErr)

        var unit: AudioUnit?
        #expect(AudioComponentInstanceNew(component, &unit) == noErr)
        let gain = try #require(unit)
        #expect(AudioComponentInstanceCanDo(gain, Int16(kAudioUnitRenderSelect)))
        #expect(!AudioComponentInstanceCanDo(gain, Int16(kAudioUnitProcessSelect)))
        // Not initialised: the plug-in's own answer.
        #expect(renderStereo(gain, frames: 64).0 == kAudioUnitErr_Uninitialized)

        let level = UnsafeMutablePointer<Float>.allocate(capacity: 1)
        defer { level.deallocate() }
        level.pointee = 0.8
        var callback = AURenderCallbackStruct(inputProc: constantRender, inputProcRefCon: UnsafeMutableRawPointer(level))
        #expect(AudioUnitSetProperty(gain, kAudioUnitProperty_SetRenderCallback, kAudioUnitScope_Input, 0, &callback,
                                     UInt32(MemoryLayout<AURenderCallbackStruct>.size)) == noErr)
        #expect(AudioUnitSetParameter(gain, 0, kAudioUnitScope_Global, 0, 0.25, 0) == noErr)
        var value: AudioUnitParameterValue = 0
        #expect(AudioUnitGetParameter(gain, 0, kAudioUnitScope_Global, 0, &value) == noErr && value == 0.25)
        #expect(AudioUnitSetParameter(gain, 9, kAudioUnitScope_Global, 0, 1, 0) == kAudioUnitErr_InvalidParameter)
        #expect(AudioUnitInitialize(gain) == noErr)
        let (status, left, right) = renderStereo(gain, frames: 256)
        #expect(status == noErr)
        #expect(left.allSatisfy { abs($0 - 0.2) < 1e-6 } && right.allSatisfy { abs($0 - 0.2) < 1e-6 })
        // A selector the plug-in does not implement.
        #expect(AudioUnitReset(gain, kAudioUnitScope_Global, 0) != noErr)

        let closedBefore = gainPlugInsClosed.load(ordering: .relaxed)
        #expect(AudioComponentInstanceDispose(gain) == noErr)
        #expect(gainPlugInsClosed.load(ordering: .relaxed) == closedBefore + 1)
        #expect(AudioComponentInstanceDispose(gain) != noErr)
    }
}
