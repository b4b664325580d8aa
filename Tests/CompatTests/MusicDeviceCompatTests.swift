import Foundation
import OATTestSupport
import OpenAudioToolbox
import Testing

private let bank = "/usr/share/sounds/sf2/TimGM6mb.sf2"

/// A music device (`subType`) -> GenericOutput graph, initialised after `configure` ran on the device.
private func musicDeviceGraph(_ subType: OSType, configure: (AudioUnit) -> Void = { _ in }) throws -> (AUGraph, AudioUnit, AudioUnit) {
    var made: AUGraph?
    #expect(NewAUGraph(&made) == noErr)
    let g = try #require(made)
    var deviceDesc = AudioComponentDescription(componentType: kAudioUnitType_MusicDevice, componentSubType: subType,
                                               componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
    var outDesc = AudioComponentDescription(componentType: kAudioUnitType_Output, componentSubType: kAudioUnitSubType_GenericOutput,
                                            componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
    var deviceNode: AUNode = 0, outNode: AUNode = 0
    #expect(AUGraphAddNode(g, &deviceDesc, &deviceNode) == noErr)
    #expect(AUGraphAddNode(g, &outDesc, &outNode) == noErr)
    #expect(AUGraphOpen(g) == noErr)
    var d: AudioUnit?, o: AudioUnit?
    #expect(AUGraphNodeInfo(g, deviceNode, nil, &d) == noErr)
    #expect(AUGraphNodeInfo(g, outNode, nil, &o) == noErr)
    let device = try #require(d), output = try #require(o)
    #expect(AUGraphConnectNodeInput(g, deviceNode, 0, outNode, 0) == noErr)
    configure(device)
    #expect(AUGraphInitialize(g) == noErr)
    return (g, device, output)
}

/// Sets a property from a value (a `URL` or a struct holding one: no `&value` to a raw pointer).
private func setProperty<T>(_ unit: AudioUnit, _ id: AudioUnitPropertyID, _ value: T) -> OSStatus {
    withUnsafePointer(to: value) { AudioUnitSetProperty(unit, id, kAudioUnitScope_Global, 0, UnsafeRawPointer($0), UInt32(MemoryLayout<T>.size)) }
}

private func renderLeft(_ output: AudioUnit, slices: Int, frames: Int = 512, each: (Int) -> Void = { _ in }) -> [Float] {
    var left: [Float] = []
    var l = [Float](repeating: 0, count: frames), r = [Float](repeating: 0, count: frames)
    let list = AudioBufferList.allocate(maximumBuffers: 2)
    defer { free(list.unsafeMutablePointer) }
    for s in 0..<slices {
        each(s)
        renderStereoSlice(output, at: s * frames, &l, &r, list: list)
        left += l
    }
    return left
}

@Suite("MusicDevice (sampler, MIDI synth)")
struct MusicDeviceCompatTests {
    @Test func theSamplerAndTheMIDISynthAreComponents() throws {
        for (subType, name) in [(kAudioUnitSubType_Sampler, "Apple: AUSampler"), (kAudioUnitSubType_MIDISynth, "Apple: AUMIDISynth")] {
            var desc = AudioComponentDescription(componentType: kAudioUnitType_MusicDevice, componentSubType: subType,
                                                 componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
            let c = try #require(AudioComponentFindNext(nil, &desc))
            var cfName: CFString?
            #expect(AudioComponentCopyName(c, &cfName) == noErr)
            #expect(cfName.map { "\($0)" } == name)
        }
    }

    @Test func samplerPresetPlaysAMIDIEventAtItsPitchInAGraph() throws {
        let (g, device, output) = try musicDeviceGraph(kAudioUnitSubType_Sampler) { device in
            let data = AUSamplerInstrumentData(fileURL: URL(fileURLWithPath: bank) as CFURL, instrumentType: UInt8(kInstrumentType_SF2Preset),
                                               bankMSB: UInt8(kAUSampler_DefaultMelodicBankMSB), bankLSB: UInt8(kAUSampler_DefaultBankLSB), presetID: 19)
            #expect(setProperty(device, kAUSamplerProperty_LoadInstrument, data) == noErr)
        }
        defer { DisposeAUGraph(g) }
        let out = renderLeft(output, slices: 26) { s in
            if s == 0 { #expect(MusicDeviceMIDIEvent(device, 0x90, 69, 100, 0) == noErr) }
        }
        let f = fundamentalFrequency(Array(out[4410...]), sampleRate: 44100, near: 440)
        print("AUSampler church organ A4 through AUGraph: \(f) Hz, \(cents(f, relativeTo: 440)) cents")
        #expect(abs(cents(f, relativeTo: 440)) < 5)
        // kAUSamplerParam_Gain -6 dB: 6 dB quieter.
        #expect(AudioUnitSetParameter(device, kAUSamplerParam_Gain, kAudioUnitScope_Global, 0, -6, 0) == noErr)
        let quieter = renderLeft(output, slices: 8)
        let before = levelDB(out, from: out.count - 4096), after = levelDB(quieter, from: 512)
        print("gain -6 dB: \(after - before) dB")
        #expect(abs(after - before + 6) < 0.5)
    }

    @Test func startAndStopNoteOnTheMIDISynth() throws {
        let (g, device, output) = try musicDeviceGraph(kAudioUnitSubType_MIDISynth) { device in
            #expect(setProperty(device, kMusicDeviceProperty_SoundBankURL, URL(fileURLWithPath: bank) as CFURL) == noErr)
        }
        defer { DisposeAUGraph(g) }
        var id: NoteInstanceID = 0
        var params = MusicDeviceNoteParams(argCount: 2, mPitch: 60, mVelocity: 110)
        let out = renderLeft(output, slices: 90) { s in
            if s == 0 { #expect(MusicDeviceStartNote(device, kMusicNoteEvent_UseGroupInstrument, 0, &id, 256, &params) == noErr) }
            if s == 20 { #expect(MusicDeviceStopNote(device, 0, id, 0) == noErr) }
        }
        #expect(id == 60)
        let onset = try #require(onsetFrame(out, threshold: 1e-5))
        print("MIDI synth StartNote at frame 256: onset \(onset); held \(levelDB(out, from: 2048, to: 10240)) dB, tail \(levelDB(out, from: out.count - 4096)) dB")
        #expect(onset >= 256 && onset < 256 + 64)
        #expect(levelDB(out, from: 2048, to: 10240) > -40)
        #expect(levelDB(out, from: out.count - 4096) < levelDB(out, from: 2048, to: 10240) - 50)
    }

    @Test func errorsOfTheMusicDeviceCalls() throws {
        // Not a music device: the Component Manager's badComponentSelector.
        var mixerDesc = AudioComponentDescription(componentType: kAudioUnitType_Mixer, componentSubType: kAudioUnitSubType_MultiChannelMixer,
                                                  componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        var mixer: AudioUnit?
        #expect(AudioComponentInstanceNew(try #require(AudioComponentFindNext(nil, &mixerDesc)), &mixer) == noErr)
        let m = try #require(mixer)
        #expect(MusicDeviceMIDIEvent(m, 0x90, 60, 100, 0) == OSStatus(bitPattern: 0x8000_8002))
        AudioComponentInstanceDispose(m)
        #expect(MusicDeviceMIDIEvent(m, 0x90, 60, 100, 0) == kAudio_ParamError)
        // A missing bank: fnfErr; a bad status byte: paramErr.
        var desc = AudioComponentDescription(componentType: kAudioUnitType_MusicDevice, componentSubType: kAudioUnitSubType_Sampler,
                                             componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        var sampler: AudioUnit?
        #expect(AudioComponentInstanceNew(try #require(AudioComponentFindNext(nil, &desc)), &sampler) == noErr)
        let s = try #require(sampler)
        defer { AudioComponentInstanceDispose(s) }
        #expect(setProperty(s, kMusicDeviceProperty_SoundBankURL, URL(fileURLWithPath: "/tmp/missing-\(getpid()).sf2") as CFURL) == -43)
        #expect(MusicDeviceMIDIEvent(s, 0x40, 60, 100, 0) == kAudio_ParamError)
        #expect(MusicDeviceMIDIEvent(s, 0x90, 60, 100, 0) == noErr)
        let data = AUSamplerInstrumentData(fileURL: URL(fileURLWithPath: bank) as CFURL, instrumentType: UInt8(kInstrumentType_AUPreset),
                                           bankMSB: 0, bankLSB: 0, presetID: 0)
        #expect(setProperty(s, kAUSamplerProperty_LoadInstrument, data) == kAudioUnitErr_InstrumentTypeNotFound)
    }
}
