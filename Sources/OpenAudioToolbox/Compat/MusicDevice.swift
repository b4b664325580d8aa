// Audio Toolbox–compatible MusicDevice.h and the sampler's AudioUnitProperties.h /
// AudioUnitParameters.h names: the music-device calls on the sampler (kAudioUnitSubType_Sampler)
// and the MIDI synth (kAudioUnitSubType_MIDISynth), both AUSamplerNode.

import AudioToolboxKit
import OATCore
import OATDevices
import OATFiles
import OATUnits
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Music devices

/// An instrument ID (Apple's `MusicDeviceInstrumentID`).
public typealias MusicDeviceInstrumentID = UInt32
/// A group (channel) ID (Apple's `MusicDeviceGroupID`).
public typealias MusicDeviceGroupID = UInt32
/// A note instance (Apple's `NoteInstanceID`).
public typealias NoteInstanceID = UInt32

/// Note parameters (Apple's `MusicDeviceNoteParams`, with two of its variable-length controls).
public struct MusicDeviceNoteParams {
    /// Number of controls (2: pitch and velocity).
    public var argCount: UInt32
    /// MIDI note number.
    public var mPitch: Float32
    /// MIDI velocity.
    public var mVelocity: Float32
    /// Creates note parameters.
    public init(argCount: UInt32 = 2, mPitch: Float32 = 60, mVelocity: Float32 = 64) {
        self.argCount = argCount
        self.mPitch = mPitch
        self.mVelocity = mVelocity
    }
}

/// A music device unit (Apple's `MusicDeviceComponent`, an `AudioComponentInstance`).
public typealias MusicDeviceComponent = AudioComponentInstance

/// The instrument of the note's group (channel) (Apple's `kMusicNoteEvent_UseGroupInstrument`),
/// for ``MusicDeviceStartNote(_:_:_:_:_:_:)``.
public let kMusicNoteEvent_UseGroupInstrument: UInt32 = 0xFFFF_FFFF
/// An unused instrument ID (Apple's `kMusicNoteEvent_Unused`).
public let kMusicNoteEvent_Unused: UInt32 = 0xFFFF_FFFF

/// What the Component Manager answers for a call the component does not implement (Apple's
/// `badComponentSelector`, 0x80008002): the music-device calls on a unit that is not a music device.
let notAMusicDevice: OSStatus = OSStatus(bitPattern: 0x8000_8002)

/// The music device node of `unit`, or the status for a unit that is none.
private func musicDevice(_ inUnit: MusicDeviceComponent) -> (MusicDeviceNode?, OSStatus) {
    guard let unit = compatUnit(inUnit) else { return (nil, kAudio_ParamError) }
    guard unit.component.description.componentType == kAudioUnitType_MusicDevice,
          let node = unit.node as? MusicDeviceNode else { return (nil, notAMusicDevice) }
    return (node, noErr)
}

/// Sends a MIDI channel message (Apple's `MusicDeviceMIDIEvent`): `inStatus` (0x80...0xEF) with
/// its data bytes, played `inOffsetSampleFrame` frames into the next slice the unit renders.
/// Any thread. A unit that is not a music device answers `badComponentSelector` (-2147450878, the Component Manager's answer for a call a component lacks); a status byte
/// that is not a channel message `kAudio_ParamError`; a full queue (4096 waiting)
/// `kAudioUnitErr_TooManyFramesToProcess`.
@discardableResult
public func MusicDeviceMIDIEvent(_ inUnit: MusicDeviceComponent, _ inStatus: UInt32, _ inData1: UInt32, _ inData2: UInt32,
                                 _ inOffsetSampleFrame: UInt32) -> OSStatus {
    let (node, status) = musicDevice(inUnit)
    guard let node else { return status }
    guard inStatus >= 0x80, inStatus < 0xF0 else { return kAudio_ParamError }
    let event = MIDIChannelEvent(offset: inOffsetSampleFrame, status: UInt8(inStatus), data1: UInt8(inData1 & 0x7F), data2: UInt8(inData2 & 0x7F))
    return node.send(event) ? noErr : kAudioUnitErr_TooManyFramesToProcess
}

/// Sends a System Exclusive message (Apple's `MusicDeviceSysEx`): `F0 ... F7`, at most 4096
/// bytes, applied at the start of the next slice (FluidSynth's GM/GS/XG and MIDI Tuning
/// messages). `badComponentSelector` for a unit that is not a music device, `kAudio_ParamError`
/// for a malformed message or a full queue.
@discardableResult
public func MusicDeviceSysEx(_ inUnit: MusicDeviceComponent, _ inData: UnsafePointer<UInt8>, _ inLength: UInt32) -> OSStatus {
    let (node, status) = musicDevice(inUnit)
    guard let node else { return status }
    return node.sendSysEx(UnsafeBufferPointer(start: inData, count: Int(inLength))) ? noErr : kAudio_ParamError
}

/// Starts a note (Apple's `MusicDeviceStartNote`): key `mPitch` at velocity `mVelocity` on
/// channel `inGroupID` (0...15), `inOffsetSampleFrame` frames into the next slice; the note's
/// instance ID (its key, as Apple's sampler answers) goes to `outNoteInstanceID`. The
/// instrument is the group's (`inInstrument` is ignored, as for `kMusicNoteEvent_UseGroupInstrument`).
@discardableResult
public func MusicDeviceStartNote(_ inUnit: MusicDeviceComponent, _ inInstrument: MusicDeviceInstrumentID, _ inGroupID: MusicDeviceGroupID,
                                 _ outNoteInstanceID: UnsafeMutablePointer<NoteInstanceID>, _ inOffsetSampleFrame: UInt32,
                                 _ inParams: UnsafePointer<MusicDeviceNoteParams>) -> OSStatus {
    let (node, status) = musicDevice(inUnit)
    guard let node else { return status }
    let p = inParams.pointee
    guard inGroupID < 16, p.mPitch.isFinite, p.mVelocity.isFinite, p.mPitch >= 0, p.mPitch < 128 else { return kAudio_ParamError }
    let key = UInt8(p.mPitch.rounded())
    let velocity = UInt8(max(1, min(127, p.mVelocity.rounded())))
    guard node.send(MIDIChannelEvent(offset: inOffsetSampleFrame, status: 0x90 | UInt8(inGroupID), data1: min(127, key), data2: velocity)) else {
        return kAudioUnitErr_TooManyFramesToProcess
    }
    outNoteInstanceID.pointee = NoteInstanceID(min(127, key))
    _ = inInstrument
    return noErr
}

/// Stops a note (Apple's `MusicDeviceStopNote`): the note ``MusicDeviceStartNote(_:_:_:_:_:_:)``
/// started as `inNoteInstanceID` on channel `inGroupID`, `inOffsetSampleFrame` frames into the
/// next slice.
@discardableResult
public func MusicDeviceStopNote(_ inUnit: MusicDeviceComponent, _ inGroupID: MusicDeviceGroupID, _ inNoteInstanceID: NoteInstanceID,
                                _ inOffsetSampleFrame: UInt32) -> OSStatus {
    let (node, status) = musicDevice(inUnit)
    guard let node else { return status }
    guard inGroupID < 16, inNoteInstanceID < 128 else { return kAudio_ParamError }
    return node.send(MIDIChannelEvent(offset: inOffsetSampleFrame, status: 0x80 | UInt8(inGroupID), data1: UInt8(inNoteInstanceID), data2: 0))
        ? noErr : kAudioUnitErr_TooManyFramesToProcess
}

// MARK: - Sampler constants (AudioUnitProperties.h, AudioUnitParameters.h)

/// Loads a preset of a bank (Apple's `kAUSamplerProperty_LoadPresetFromBank`, 4100): an
/// ``AUSamplerBankPresetData``.
public let kAUSamplerProperty_LoadPresetFromBank: AudioUnitPropertyID = 4100
/// Apple's `kAUSamplerProperty_BankAndPreset` (4100, the older name of
/// ``kAUSamplerProperty_LoadPresetFromBank``).
public let kAUSamplerProperty_BankAndPreset: AudioUnitPropertyID = 4100

/// A DLS or SoundFont 2 preset (Apple's `kInstrumentType_DLSPreset`, 1), for ``AUSamplerInstrumentData``.
public let kInstrumentType_DLSPreset: Int = 1
/// A SoundFont 2 preset (Apple's `kInstrumentType_SF2Preset`, the same value as the DLS one).
public let kInstrumentType_SF2Preset: Int = 1
/// An `.aupreset` file (Apple's `kInstrumentType_AUPreset`, 2): not read here
/// (`kAudioUnitErr_InstrumentTypeNotFound`).
public let kInstrumentType_AUPreset: Int = 2
/// One audio file (Apple's `kInstrumentType_Audiofile`, 3).
public let kInstrumentType_Audiofile: Int = 3
/// An EXS24 instrument (Apple's `kInstrumentType_EXS24`, 4): not read here
/// (`kAudioUnitErr_InstrumentTypeNotFound`).
public let kInstrumentType_EXS24: Int = 4

/// The bank MSB of General MIDI percussion (Apple's `kAUSampler_DefaultPercussionBankMSB`, 0x78).
public let kAUSampler_DefaultPercussionBankMSB: Int = 0x78
/// The bank MSB of General MIDI melodic instruments (Apple's `kAUSampler_DefaultMelodicBankMSB`, 0x79).
public let kAUSampler_DefaultMelodicBankMSB: Int = 0x79
/// The default bank LSB (Apple's `kAUSampler_DefaultBankLSB`, 0).
public let kAUSampler_DefaultBankLSB: Int = 0x00

/// The sampler's output level in dB, -90...12, default 0 (Apple's `kAUSamplerParam_Gain`, 900).
public let kAUSamplerParam_Gain: AudioUnitParameterID = 900
/// The sampler's coarse tuning in semitones, -24...24, default 0 (Apple's `kAUSamplerParam_CoarseTuning`, 901).
public let kAUSamplerParam_CoarseTuning: AudioUnitParameterID = 901
/// The sampler's fine tuning in cents, -99...99, default 0 (Apple's `kAUSamplerParam_FineTuning`, 902).
public let kAUSamplerParam_FineTuning: AudioUnitParameterID = 902
/// The sampler's stereo pan, -1...1, default 0 (Apple's `kAUSamplerParam_Pan`, 903).
public let kAUSamplerParam_Pan: AudioUnitParameterID = 903

/// What ``kAUSamplerProperty_LoadInstrument`` loads (Apple's `AUSamplerInstrumentData`): a
/// preset of a bank (`kInstrumentType_DLSPreset` / `kInstrumentType_SF2Preset`, with its bank
/// and preset numbers) or one audio file (`kInstrumentType_Audiofile`). Different: `fileURL` is a
/// `CFURL` (Foundation's `URL` here), not an `Unmanaged<CFURL>`.
public struct AUSamplerInstrumentData {
    /// The bank or audio file.
    public var fileURL: CFURL
    /// One of the `kInstrumentType_*` values.
    public var instrumentType: UInt8
    /// The bank MSB (``kAUSampler_DefaultMelodicBankMSB``, ``kAUSampler_DefaultPercussionBankMSB``).
    public var bankMSB: UInt8
    /// The bank LSB (the variation; usually ``kAUSampler_DefaultBankLSB``).
    public var bankLSB: UInt8
    /// The preset (program) number.
    public var presetID: UInt8
    /// Creates instrument data.
    public init(fileURL: CFURL, instrumentType: UInt8, bankMSB: UInt8, bankLSB: UInt8, presetID: UInt8) {
        self.fileURL = fileURL
        self.instrumentType = instrumentType
        self.bankMSB = bankMSB
        self.bankLSB = bankLSB
        self.presetID = presetID
    }
}

/// What ``kAUSamplerProperty_LoadPresetFromBank`` loads (Apple's `AUSamplerBankPresetData`).
/// Different: `bankURL` is a `CFURL` (Foundation's `URL` here), not an `Unmanaged<CFURL>`.
public struct AUSamplerBankPresetData {
    /// The DLS or SoundFont 2 bank.
    public var bankURL: CFURL
    /// The bank MSB.
    public var bankMSB: UInt8
    /// The bank LSB.
    public var bankLSB: UInt8
    /// The preset (program) number.
    public var presetID: UInt8
    /// Unused.
    public var reserved: UInt8
    /// Creates bank preset data.
    public init(bankURL: CFURL, bankMSB: UInt8, bankLSB: UInt8, presetID: UInt8, reserved: UInt8) {
        self.bankURL = bankURL
        self.bankMSB = bankMSB
        self.bankLSB = bankLSB
        self.presetID = presetID
        self.reserved = reserved
    }
}

// MARK: - Components and properties

/// The sampler's node of `unit`: made once and kept across node rebuilds (format changes,
/// initialising), so the loaded instrument stays.
func samplerNode(_ unit: CompatUnit, midiSynth: Bool) -> OATUnits.RenderNode? {
    if let node = unit.extras.musicDevice { return node }
    var instrument = AUSamplerInstrument.sine
    if midiSynth, let bank = AUSamplerNode.defaultSoundBankPath { instrument = .soundBank(path: bank) }
    let node = (try? AUSamplerNode(name: midiSynth ? "MIDI synth" : "sampler", instrument: instrument)) ?? (try? AUSamplerNode())
    unit.extras.musicDevice = node
    return node
}

/// The components of the two music devices (AudioComponent.swift lists them).
let musicDeviceComponents: [CompatComponent] = {
    func d(_ s: UInt32) -> AudioComponentDescription {
        AudioComponentDescription(componentType: kAudioUnitType_MusicDevice, componentSubType: s, componentManufacturer: kAudioUnitManufacturer_Apple,
                                  componentFlags: 0, componentFlagsMask: 0)
    }
    return [
        CompatComponent(description: d(kAudioUnitSubType_Sampler), kind: .custom({ samplerNode($0, midiSynth: false) }), name: "Apple: AUSampler"),
        CompatComponent(description: d(kAudioUnitSubType_MIDISynth), kind: .custom({ samplerNode($0, midiSynth: true) }), name: "Apple: AUMIDISynth"),
    ]
}()

func isMusicDevice(_ unit: CompatUnit) -> Bool {
    unit.component.description.componentType == kAudioUnitType_MusicDevice && unit.extras.musicDevice != nil
}

func musicDevicePropertySize(_ unit: CompatUnit, _ id: AudioUnitPropertyID) -> (size: UInt32, writable: Bool)? {
    switch id {
    case kMusicDeviceProperty_SoundBankURL: return (UInt32(MemoryLayout<CFURL>.size), true)
    case kAUSamplerProperty_LoadInstrument: return (UInt32(MemoryLayout<AUSamplerInstrumentData>.size), true)
    case kAUSamplerProperty_LoadPresetFromBank: return (UInt32(MemoryLayout<AUSamplerBankPresetData>.size), true)
    case kAUSamplerProperty_LoadAudioFiles: return (UInt32(MemoryLayout<[URL]>.size), true)
    case kMusicDeviceProperty_InstrumentCount: return (4, false)
    default: return nil
    }
}

func getMusicDeviceProperty(_ unit: CompatUnit, _ id: AudioUnitPropertyID, _ out: UnsafeMutableRawPointer,
                            _ ioSize: UnsafeMutablePointer<UInt32>) -> OSStatus? {
    guard let node = unit.extras.musicDevice else { return nil }
    switch id {
    case kMusicDeviceProperty_SoundBankURL:
        switch node.instrument {
        case .soundBank(let path), .bankPreset(let path, _, _, _):
            return writeProperty(URL(fileURLWithPath: path) as CFURL, ioSize, out, sizeError: kAudio_ParamError)
        default: return kAudioUnitErr_InvalidPropertyValue
        }
    case kMusicDeviceProperty_InstrumentCount:
        // Apple's sampler answers 1 (its one instrument); the MIDI synth its bank's presets.
        return writeProperty(UInt32(1), ioSize, out, sizeError: kAudio_ParamError)
    case kAUSamplerProperty_LoadInstrument, kAUSamplerProperty_LoadPresetFromBank, kAUSamplerProperty_LoadAudioFiles:
        return kAudioUnitErr_InvalidProperty   // write-only, as on Apple
    default: return nil
    }
}

func setMusicDeviceProperty(_ unit: CompatUnit, _ id: AudioUnitPropertyID, _ data: UnsafeRawPointer?, _ size: UInt32) -> OSStatus? {
    guard let node = unit.extras.musicDevice else { return nil }
    func load(_ instrument: AUSamplerInstrument) -> OSStatus {
        do { try node.load(instrument) } catch { return osStatus(error, default: kAudioUnitErr_InvalidFile) }
        return noErr
    }
    switch id {
    case kMusicDeviceProperty_SoundBankURL:
        guard let data, Int(size) >= MemoryLayout<CFURL>.size else { return kAudio_ParamError }
        let url = data.assumingMemoryBound(to: CFURL.self).pointee
        guard url.isFileURL else { return kAudioUnitErr_InvalidFilePath }
        if unit.component.description.componentSubType == kAudioUnitSubType_Sampler {
            // The sampler plays one preset: the bank's first melodic one.
            return load(.bankPreset(path: url.path, program: 0, bankMSB: UInt8(kAUSampler_DefaultMelodicBankMSB), bankLSB: 0))
        }
        return load(.soundBank(path: url.path))
    case kAUSamplerProperty_LoadInstrument:
        guard let data, Int(size) >= MemoryLayout<AUSamplerInstrumentData>.size else { return kAudio_ParamError }
        let d = data.assumingMemoryBound(to: AUSamplerInstrumentData.self).pointee
        guard d.fileURL.isFileURL else { return kAudioUnitErr_InvalidFilePath }
        switch Int(d.instrumentType) {
        case kInstrumentType_DLSPreset:
            return load(.bankPreset(path: d.fileURL.path, program: d.presetID, bankMSB: d.bankMSB, bankLSB: d.bankLSB))
        case kInstrumentType_Audiofile:
            do { return load(.zones(try samplerZones(audioFiles: [d.fileURL.path]))) } catch { return osStatus(error, default: kAudioUnitErr_InvalidFile) }
        default: return kAudioUnitErr_InstrumentTypeNotFound
        }
    case kAUSamplerProperty_LoadPresetFromBank:
        guard let data, Int(size) >= MemoryLayout<AUSamplerBankPresetData>.size else { return kAudio_ParamError }
        let d = data.assumingMemoryBound(to: AUSamplerBankPresetData.self).pointee
        guard d.bankURL.isFileURL else { return kAudioUnitErr_InvalidFilePath }
        return load(.bankPreset(path: d.bankURL.path, program: d.presetID, bankMSB: d.bankMSB, bankLSB: d.bankLSB))
    case kAUSamplerProperty_LoadAudioFiles:
        guard let data, Int(size) >= MemoryLayout<[URL]>.size else { return kAudio_ParamError }
        let urls = data.assumingMemoryBound(to: [URL].self).pointee
        guard !urls.isEmpty, urls.allSatisfy(\.isFileURL) else { return kAudio_ParamError }
        do { return load(.zones(try samplerZones(audioFiles: urls.map(\.path)))) } catch { return osStatus(error, default: kAudioUnitErr_InvalidFile) }
    default: return nil
    }
}

/// Decodes audio files into sampler zones at their own rates (the project's file reading:
/// AudioFile and AudioConverter through ExtendedAudioFile). A file's root key is the one it
/// states (WAV `smpl`, AIFF `INST`, with the AIFF key range), else 60 + its index; keys without
/// a stated range go to the nearest root (``AUSamplerZone/placed(_:)``). At most 2 channels (more are mixed into the first two),
/// at most 10 minutes a file.
package func samplerZones(audioFiles paths: [String]) throws(AudioError) -> [AUSamplerZone] {
    var zones: [AUSamplerZone] = []
    var stated: [ClosedRange<UInt8>?] = []
    for (i, path) in paths.enumerated() {
        let reader = try ExtendedAudioFile(path: path)
        let format = reader.clientFormat
        let channels = Int(format.channelsPerFrame)
        guard channels >= 1 else { throw AudioError(.unsupportedFormat, component: "AUSampler", "\(path) has no channels", osStatus: kAudioUnitErr_InvalidFile) }
        let limit = Int(format.sampleRate * 600)
        let buffer = try AudioPCMBuffer(format: format, frameCapacity: 4096)
        var out = [[Float]](repeating: [], count: min(2, channels))
        while true {
            let n = try reader.read(into: buffer)
            if n == 0 { break }
            for c in 0..<channels {
                guard let p = buffer.floatChannel(c) else { continue }
                let target = min(c, out.count - 1)
                if c < out.count { out[target].append(contentsOf: p.prefix(n)) } else {
                    let base = out[target].count - n
                    for k in 0..<n { out[target][base + k] += p[k] }
                }
            }
            if out[0].count > limit { throw AudioError(.limitExceeded, component: "AUSampler", "\(path) is longer than 10 minutes", osStatus: kAudioUnitErr_InvalidFile) }
        }
        guard out[0].count > 1 else { throw AudioError(.invalidData, component: "AUSampler", "\(path) has no audio", osStatus: kAudioUnitErr_InvalidFile) }
        let info = audioFileKeyInfo(path)
        zones.append(AUSamplerZone(channels: out, sampleRate: format.sampleRate, rootKey: info?.root ?? UInt8(min(127, 60 + i)),
                                   keyRange: info?.range ?? 0...127))
        stated.append(info?.range)
    }
    // Each key plays the zone of the nearest root, except where a file states its key range.
    let order = zones.indices.sorted { zones[$0].rootKey < zones[$1].rootKey }
    var placed = AUSamplerZone.placed(order.map { zones[$0] })
    for (k, i) in order.enumerated() { if let range = stated[i] { placed[k].keyRange = range } }
    return placed
}

/// The root key (and key range) an audio file states: a WAV `smpl` chunk's MIDI unity note, an
/// AIFF `INST` chunk's base, low and high notes; nil when it states none.
func audioFileKeyInfo(_ path: String) -> (root: UInt8, range: ClosedRange<UInt8>?)? {
    guard let f = fopen(path, "rb") else { return nil }
    defer { fclose(f) }
    var header = [UInt8](repeating: 0, count: 12)
    guard fread(&header, 1, 12, f) == 12 else { return nil }
    let tag = { (b: ArraySlice<UInt8>) in String(decoding: b, as: UTF8.self) }
    let wav = tag(header[0..<4]) == "RIFF" && tag(header[8..<12]) == "WAVE"
    let aiff = tag(header[0..<4]) == "FORM" && (tag(header[8..<12]) == "AIFF" || tag(header[8..<12]) == "AIFC")
    guard wav || aiff else { return nil }
    var chunk = [UInt8](repeating: 0, count: 8)
    for _ in 0..<4096 {
        guard fread(&chunk, 1, 8, f) == 8 else { return nil }
        let id = tag(chunk[0..<4])
        let size = wav ? (UInt32(chunk[4]) | UInt32(chunk[5]) << 8 | UInt32(chunk[6]) << 16 | UInt32(chunk[7]) << 24)
            : (UInt32(chunk[4]) << 24 | UInt32(chunk[5]) << 16 | UInt32(chunk[6]) << 8 | UInt32(chunk[7]))
        var consumed = 0
        if wav, id == "smpl", size >= 16 {
            var d = [UInt8](repeating: 0, count: 16)
            guard fread(&d, 1, 16, f) == 16 else { return nil }
            let note = UInt32(d[12]) | UInt32(d[13]) << 8 | UInt32(d[14]) << 16 | UInt32(d[15]) << 24
            return note < 128 ? (UInt8(note), nil) : nil
        }
        if aiff, id == "INST", size >= 4 {
            var d = [UInt8](repeating: 0, count: 4)
            guard fread(&d, 1, 4, f) == 4 else { return nil }
            consumed = 4
            let (base, low, high) = (d[0], d[2], d[3])
            if base < 128, low < 128, high < 128, low <= high { return (base, low...high) }
        }
        // Chunks are padded to an even size in both containers.
        let skip = Int(size) + Int(size & 1) - consumed
        guard fseek(f, skip, SEEK_CUR) == 0 else { return nil }
    }
    return nil
}
