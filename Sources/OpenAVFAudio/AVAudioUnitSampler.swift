// Apple's music-device classes: AVAudioUnitMIDIInstrument (MIDI in, audio out) and
// AVAudioUnitSampler (the sampler: SoundFont 2 / DLS presets, audio files), over AUSamplerNode.
import Foundation
import OpenAudioToolbox
internal import OATUnits
internal import OATCore

/// An audio unit that makes sound from MIDI (Apple's `AVAudioUnitMIDIInstrument`): one stereo
/// output bus, no input. Its notes, controllers, program changes and other messages are sent
/// from any thread and played at the start of the next slice the engine renders.
///
/// Thread safety: the `send` and `start`/`stop` methods may be called from any thread.
open class AVAudioUnitMIDIInstrument: AVAudioUnit, AVAudioMixing, @unchecked Sendable {
    /// The node the instrument plays on, made once (its instrument stays when the engine rebuilds).
    let device: AUSamplerNode

    /// Linear gain at the mixer this instrument feeds, 0 ... 1.
    open var volume: Float = 1 { didSet { mixingSetOnNode(volume: volume) } }
    /// Stereo position at the mixer this instrument feeds, -1 ... 1.
    open var pan: Float = 0 { didSet { mixingSetOnNode(pan: pan) } }

    /// An instrument of the music device `description` names (Apple's
    /// `init(audioComponentDescription:)`): `kAudioUnitSubType_Sampler` (a sine tone until an
    /// instrument is loaded, as Apple's) or `kAudioUnitSubType_MIDISynth` (a General MIDI
    /// synthesiser on the system's GM SoundFont when one is installed). Another description gives
    /// a sampler.
    public init(audioComponentDescription description: AudioComponentDescription) {
        let synth = description.componentType == kAudioUnitType_MusicDevice && description.componentSubType == kAudioUnitSubType_MIDISynth
        var made: AUSamplerNode?
        if synth, let bank = AUSamplerNode.defaultSoundBankPath {
            made = try? AUSamplerNode(name: "MIDI synth", instrument: .soundBank(path: bank))
        }
        device = made ?? (try? AUSamplerNode(name: synth ? "MIDI synth" : "sampler"))!
        super.init(componentDescription: description, inputs: 0)
    }

    override func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode { device }

    override func canKeep(_ unit: OATUnits.RenderNode, rate: Double, inputChannels: Int, outputChannels: Int) -> Bool { unit === device }

    override var parameterNode: OATUnits.RenderNode? { device }

    private func send(_ status: UInt8, _ data1: UInt8, _ data2: UInt8 = 0) {
        device.send(MIDIChannelEvent(offset: 0, status: status, data1: data1 & 0x7F, data2: data2 & 0x7F))
    }

    /// Starts note `note` at `velocity` on `channel` (0...15).
    open func startNote(_ note: UInt8, withVelocity velocity: UInt8, onChannel channel: UInt8) {
        send(0x90 | (channel & 0x0F), note, velocity)
    }

    /// Stops note `note` on `channel`.
    open func stopNote(_ note: UInt8, onChannel channel: UInt8) {
        send(0x80 | (channel & 0x0F), note, 0)
    }

    /// Sends controller `controller` with `value` on `channel`.
    open func sendController(_ controller: UInt8, withValue value: UInt8, onChannel channel: UInt8) {
        send(0xB0 | (channel & 0x0F), controller, value)
    }

    /// Sends a pitch bend of `pitchbend` (0...16383, 8192 is none) on `channel`.
    open func sendPitchBend(_ pitchbend: UInt16, onChannel channel: UInt8) {
        let v = min(pitchbend, 0x3FFF)
        send(0xE0 | (channel & 0x0F), UInt8(v & 0x7F), UInt8(v >> 7))
    }

    /// Sends channel pressure `pressure` on `channel`.
    open func sendPressure(_ pressure: UInt8, onChannel channel: UInt8) {
        send(0xD0 | (channel & 0x0F), pressure)
    }

    /// Sends polyphonic key pressure `value` for `key` on `channel`.
    open func sendPressure(forKey key: UInt8, withValue value: UInt8, onChannel channel: UInt8) {
        send(0xA0 | (channel & 0x0F), key, value)
    }

    /// Sends a program change to `program` on `channel`.
    open func sendProgramChange(_ program: UInt8, onChannel channel: UInt8) {
        send(0xC0 | (channel & 0x0F), program)
    }

    /// Selects bank `bankMSB`/`bankLSB` (controllers 0 and 32) then program `program` on `channel`.
    open func sendProgramChange(_ program: UInt8, bankMSB: UInt8, bankLSB: UInt8, onChannel channel: UInt8) {
        sendController(0, withValue: bankMSB, onChannel: channel)
        sendController(32, withValue: bankLSB, onChannel: channel)
        sendProgramChange(program, onChannel: channel)
    }

    /// Sends a three-byte MIDI channel message (a status byte that is not a channel message is ignored).
    open func sendMIDIEvent(_ midiStatus: UInt8, data1: UInt8, data2: UInt8) {
        send(midiStatus, data1, data2)
    }

    /// Sends a two-byte MIDI channel message (program change, channel pressure).
    open func sendMIDIEvent(_ midiStatus: UInt8, data1: UInt8) {
        send(midiStatus, data1)
    }

    /// Sends a System Exclusive message (`F0 ... F7`, at most 4096 bytes; others are ignored).
    open func sendMIDISysExEvent(_ midiData: Data) {
        let bytes = [UInt8](midiData)
        bytes.withUnsafeBufferPointer { _ = device.sendSysEx($0) }
    }
}

/// Apple's sampler as a node (Apple's `AVAudioUnitSampler`): plays a preset of a SoundFont 2 or
/// DLS bank (through FluidSynth, loaded on first use), audio files pitched by key, or Apple's
/// default sine tone before anything is loaded. One stereo output bus.
///
/// Thread safety: the load methods read and decode files on the calling thread (not the render
/// thread) and swap the new instrument in atomically; sounding notes stop.
open class AVAudioUnitSampler: AVAudioUnitMIDIInstrument, @unchecked Sendable {
    /// A sampler playing Apple's default sine tone.
    public init() {
        super.init(audioComponentDescription: .apple(kAudioUnitType_MusicDevice, kAudioUnitSubType_Sampler))
    }

    /// Loads preset `program` of bank `bankMSB`/`bankLSB` from the SoundFont 2 or DLS bank at
    /// `bankURL` (`kAUSampler_DefaultMelodicBankMSB` 0x79 for melodic presets,
    /// `kAUSampler_DefaultPercussionBankMSB` 0x78 for percussion). Throws an
    /// `NSOSStatusErrorDomain` error naming the path for a missing or unreadable bank or preset.
    open func loadSoundBankInstrument(at bankURL: URL, program: UInt8, bankMSB: UInt8, bankLSB: UInt8) throws {
        try load(.bankPreset(path: bankURL.path, program: program, bankMSB: bankMSB, bankLSB: bankLSB))
    }

    /// Loads an instrument file: a SoundFont 2 (`.sf2`) or DLS (`.dls`) bank (its first melodic
    /// preset), or an audio file (`caf`, `aiff`, `wav`, `mp3`, ...) as a one-zone instrument
    /// rooted at the key it states, else key 60. `aupreset` and EXS24 files are not read here (an error).
    open func loadInstrument(at instrumentURL: URL) throws {
        let ext = instrumentURL.pathExtension.lowercased()
        switch ext {
        case "sf2", "dls", "sf3":
            try load(.bankPreset(path: instrumentURL.path, program: 0, bankMSB: 0x79, bankLSB: 0))
        case "aupreset", "exs":
            throw avError(kAudioUnitErr_InstrumentTypeNotFound, "AVAudioUnitSampler.loadInstrument: \(instrumentURL.path): .\(ext) instruments are not supported here")
        default:
            try loadAudioFiles(at: [instrumentURL])
        }
    }

    /// Loads audio files as an instrument, each file one zone, pitched by key from its root key:
    /// the one the file states (a WAV `smpl` chunk's unity note, an AIFF `INST` chunk's base note
    /// and key range), else 60 + the file's index; keys outside stated ranges play the zone of the
    /// nearest root.
    open func loadAudioFiles(at audioFiles: [URL]) throws {
        guard !audioFiles.isEmpty else { throw avError(kAudio_ParamError, "AVAudioUnitSampler.loadAudioFiles: no files") }
        do {
            let zones = try samplerZones(audioFiles: audioFiles.map(\.path))
            try device.load(.zones(zones))
        } catch {
            throw avError(error.osStatus ?? kAudioUnitErr_InvalidFile, "AVAudioUnitSampler.loadAudioFiles: \(error)")
        }
    }

    private func load(_ instrument: AUSamplerInstrument) throws {
        do { try device.load(instrument) } catch {
            throw avError(error.osStatus ?? kAudioUnitErr_InvalidFile, "AVAudioUnitSampler: \(error)")
        }
    }

    /// The output level in dB, -90...12, default 0 (`kAUSamplerParam_Gain`; Apple deprecates
    /// this name for ``overallGain``).
    open var masterGain: Float {
        get { device.gain.value }
        set { device.gain.value = newValue }
    }

    /// The output level in dB, -90...12, default 0 (`kAUSamplerParam_Gain`).
    open var overallGain: Float {
        get { device.gain.value }
        set { device.gain.value = newValue }
    }

    /// The stereo pan of every note, -100 (left) ... 100 (right), default 0 (`kAUSamplerParam_Pan` × 100).
    open var stereoPan: Float {
        get { device.pan.value * 100 }
        set { device.pan.value = max(-100, min(100, newValue)) / 100 }
    }

    /// The tuning of every note in cents, -2400...2400, default 0.
    open var globalTuning: Float {
        get { device.globalTuning.value }
        set { device.globalTuning.value = newValue }
    }
}
