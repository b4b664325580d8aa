import COATFluidSynth
import COATFluidSynthLazy
import OATCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One sample of an instrument made from plain audio files (Apple's sampler zones): the sample
/// plays pitched by key, at its recorded pitch on ``rootKey``.
public struct AUSamplerZone: Sendable {
    /// The samples, one array per channel (1 or 2), all of one length.
    public var channels: [[Float]]
    /// The samples' rate.
    public var sampleRate: Double
    /// The key at which the sample plays at its own pitch.
    public var rootKey: UInt8
    /// The keys that play this zone.
    public var keyRange: ClosedRange<UInt8>

    /// Creates a zone.
    public init(channels: [[Float]], sampleRate: Double, rootKey: UInt8, keyRange: ClosedRange<UInt8>) {
        self.channels = channels
        self.sampleRate = sampleRate
        self.rootKey = rootKey
        self.keyRange = keyRange
    }

    /// Apple's placement of audio files that carry no key information, as read here: file `i`
    /// has root key 60 + `i`, and each key plays the zone whose root is nearest (below the first
    /// root the first zone, above the last the last), pitched from that root.
    public static func placed(_ zones: [AUSamplerZone]) -> [AUSamplerZone] {
        var out = zones
        for i in out.indices {
            let root = Int(out[i].rootKey)
            let low = i == 0 ? 0 : (Int(out[i - 1].rootKey) + root) / 2 + 1
            let high = i == out.count - 1 ? 127 : (root + Int(out[i + 1].rootKey)) / 2
            out[i].keyRange = UInt8(max(0, min(127, low)))...UInt8(max(0, min(127, max(low, high))))
        }
        return out
    }
}

/// What a sampler plays: Apple's default sine instrument, a SoundFont 2 / DLS bank (all of it,
/// General MIDI style, or one preset on every channel), or zones made from audio files.
public enum AUSamplerInstrument: Sendable {
    /// Apple's sampler before an instrument is loaded: a sine tone on every key.
    case sine
    /// A whole bank played as a General MIDI synthesiser (Apple's MIDI synth and
    /// `kMusicDeviceProperty_SoundBankURL`): each channel starts on program 0, channel 10
    /// (index 9) on the percussion bank; program and bank changes pick presets.
    case soundBank(path: String)
    /// One preset of a bank on every channel (Apple's `kAUSamplerProperty_LoadInstrument` /
    /// `loadSoundBankInstrument`): `bankMSB` 0x79 is the melodic bank (`bankLSB` the variation),
    /// 0x78 the percussion bank.
    case bankPreset(path: String, program: UInt8, bankMSB: UInt8, bankLSB: UInt8)
    /// Zones made from audio files (Apple's `loadAudioFiles(at:)`).
    case zones([AUSamplerZone])
}

/// Apple's sampler and MIDI synth (`kAudioUnitSubType_Sampler`, `kAudioUnitSubType_MIDISynth`):
/// a ``MusicDeviceNode`` playing SoundFont 2 and DLS banks through FluidSynth (loaded on first
/// use), or audio files and the default sine tone through its own voices.
///
/// Parameters (Apple's AudioUnitParameters.h IDs): gain (`kAUSamplerParam_Gain`, 900, dB,
/// -90...12), coarse tuning (901, semitones, -24...24), fine tuning (902, cents, -99...99), pan
/// (903, -1...1), and ``globalTuningParameterID`` (cents, -2400...2400, AVAudioUnitSampler's
/// `globalTuning`).
///
/// Thread safety: ``load(_:)`` and the other control-plane calls build the new instrument off the
/// render thread (a new FluidSynth synthesiser, created with its thread-safe API off so that
/// rendering takes no mutex) and hand it to the render thread through an atomic slot; the old one
/// is freed once the render thread no longer uses it. Rendering allocates nothing.
public final class AUSamplerNode: MusicDeviceNode, @unchecked Sendable {
    /// `kAUSamplerParam_Gain`.
    public static let gainParameterID: UInt32 = 900
    /// `kAUSamplerParam_CoarseTuning`.
    public static let coarseTuningParameterID: UInt32 = 901
    /// `kAUSamplerParam_FineTuning`.
    public static let fineTuningParameterID: UInt32 = 902
    /// `kAUSamplerParam_Pan`.
    public static let panParameterID: UInt32 = 903
    /// The node-local ID of the global tuning in cents (AVAudioUnitSampler's `globalTuning`).
    public static let globalTuningParameterID: UInt32 = 0x5354_0001

    /// Output level in dB (`kAUSamplerParam_Gain`).
    public let gain: NodeParameter
    /// Coarse tuning in semitones (`kAUSamplerParam_CoarseTuning`).
    public let coarseTuning: NodeParameter
    /// Fine tuning in cents (`kAUSamplerParam_FineTuning`).
    public let fineTuning: NodeParameter
    /// Stereo pan, -1 (left) ... 1 (right) (`kAUSamplerParam_Pan`).
    public let pan: NodeParameter
    /// Tuning of every note in cents (AVAudioUnitSampler's `globalTuning`).
    public let globalTuning: NodeParameter

    private let engineSlot = Atomic<UnsafeMutableRawPointer?>(nil)
    private let engineInUse = Atomic<UnsafeMutableRawPointer?>(nil)
    private let control = Locked<AUSamplerInstrument>(.sine)

    /// Creates a sampler with a stereo output that plays `instrument` (built when the node is
    /// prepared, or now at 48 kHz).
    public init(name: String = "sampler", instrument: AUSamplerInstrument = .sine) throws(AudioError) {
        let g = NodeParameter(id: Self.gainParameterID, name: "gain", unit: .decibels, range: -90...12, defaultValue: 0)
        let coarse = NodeParameter(id: Self.coarseTuningParameterID, name: "coarse tuning", unit: .generic, range: -24...24, defaultValue: 0)
        let fine = NodeParameter(id: Self.fineTuningParameterID, name: "fine tuning", unit: .cents, range: -99...99, defaultValue: 0)
        let p = NodeParameter(id: Self.panParameterID, name: "pan", unit: .pan, range: -1...1, defaultValue: 0)
        let global = NodeParameter(id: Self.globalTuningParameterID, name: "global tuning", unit: .cents, range: -2400...2400, defaultValue: 0)
        gain = g
        coarseTuning = coarse
        fineTuning = fine
        pan = p
        globalTuning = global
        super.init(name: name, outputChannels: 2, parameters: [g, coarse, fine, p, global])
        try load(instrument)
    }

    deinit {
        if let p = engineSlot.exchange(nil, ordering: .sequentiallyConsistent) {
            Unmanaged<SamplerEngine>.fromOpaque(p).release()
        }
    }

    /// A General MIDI SoundFont installed on the system (Debian's `default-GM.sf2` alternative,
    /// TimGM6mb, FluidR3), which the MIDI synth plays when no bank is set (Apple's plays its
    /// built-in bank); nil when none is installed.
    public static var defaultSoundBankPath: String? {
        let candidates = ["/usr/share/sounds/sf2/default-GM.sf2", "/usr/share/sounds/sf2/TimGM6mb.sf2", "/usr/share/sounds/sf2/FluidR3_GM.sf2",
                          "/usr/share/soundfonts/default.sf2", "/usr/share/soundfonts/FluidR3_GM.sf2"]
        return candidates.first { access($0, R_OK) == 0 }
    }

    /// The instrument loaded last.
    public var instrument: AUSamplerInstrument { control.withLock { $0 } }

    /// Control plane: loads `instrument` (reads and decodes the bank now, at the node's sample
    /// rate) and makes it the one the render thread plays; notes sounding on the old one stop.
    /// Throws when FluidSynth is not installed, the bank is missing or unreadable (the message
    /// names the path), or the preset is not in the bank.
    public func load(_ instrument: AUSamplerInstrument) throws(AudioError) {
        try control.withLock { (current: inout AUSamplerInstrument) throws(AudioError) in
            let engine = try SamplerEngine(instrument, sampleRate: sampleRate)
            publish(engine)
            current = instrument
        }
    }

    /// Builds the instrument again at the graph's rate; calls `super`.
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        try control.withLock { (current: inout AUSamplerInstrument) throws(AudioError) in
            let p = engineSlot.load(ordering: .sequentiallyConsistent)
            if let p, Unmanaged<SamplerEngine>.fromOpaque(p).takeUnretainedValue().sampleRate == sampleRate { return }
            publish(try SamplerEngine(current, sampleRate: sampleRate))
        }
    }

    /// Sounding voices (FluidSynth's count, or the node's own voices): 0 once every note has
    /// decayed. Any thread (a snapshot).
    public var activeVoiceCount: Int {
        guard let p = engineSlot.load(ordering: .sequentiallyConsistent) else { return 0 }
        return Unmanaged<SamplerEngine>.fromOpaque(p).takeUnretainedValue().activeVoices
    }

    private func publish(_ engine: SamplerEngine) {
        let new = Unmanaged.passRetained(engine).toOpaque()
        let old = engineSlot.exchange(new, ordering: .sequentiallyConsistent)
        guard let old else { return }
        while engineInUse.load(ordering: .sequentiallyConsistent) == old { sleep(seconds: 0.0005) }
        Unmanaged<SamplerEngine>.fromOpaque(old).release()
    }

    /// Render thread: the current engine, marked in use for the duration of `body`.
    @inline(__always)
    private func withEngine(_ body: (SamplerEngine) -> Void) {
        var p = engineSlot.load(ordering: .sequentiallyConsistent)
        while true {
            engineInUse.store(p, ordering: .sequentiallyConsistent)
            let q = engineSlot.load(ordering: .sequentiallyConsistent)
            if q == p { break }
            p = q
        }
        if let p { Unmanaged<SamplerEngine>.fromOpaque(p)._withUnsafeGuaranteedRef(body) }
        engineInUse.store(nil, ordering: .sequentiallyConsistent)
    }

    /// Render thread: applies a channel message to the instrument.
    public override func handle(_ event: MIDIChannelEvent) {
        withEngine { $0.handle(event) }
    }

    /// Render thread: applies a System Exclusive message (FluidSynth's GM/GS/XG and tuning
    /// messages; the audio-file instrument ignores them).
    public override func handleSysEx(_ bytes: UnsafeBufferPointer<UInt8>) {
        withEngine { $0.handleSysEx(bytes) }
    }

    /// Render thread: renders the instrument into `output`, then applies gain, tuning and pan.
    public override func synthesize(into output: AUBufferList, from: Int, count: Int) {
        let cents = coarseTuning.value * 100 + fineTuning.value + globalTuning.value
        let linear = gain.value <= -90 ? 0 : powf(10, gain.value / 20)
        let p = pan.value
        var rendered = false
        withEngine { engine in
            engine.render(into: output, from: from, count: count, cents: cents)
            rendered = true
        }
        if !rendered {
            for c in 0..<output.channelCount { (output[c] + from).update(repeating: 0, count: count) }
            return
        }
        let left = linear * (p > 0 ? 1 - p : 1)
        let right = linear * (p < 0 ? 1 + p : 1)
        if output.channelCount == 1 {
            let o = output[0] + from
            for i in 0..<count { o[i] *= linear }
        } else {
            let l = output[0] + from, r = output[1] + from
            for i in 0..<count { l[i] *= left; r[i] *= right }
            for c in 2..<max(2, output.channelCount) { (output[c] + from).update(repeating: 0, count: count) }
        }
    }
}

/// The render-side half of one loaded instrument: a FluidSynth synthesiser or the node's own
/// voices. Created and destroyed on the control plane; used by one render thread at a time.
final class SamplerEngine: @unchecked Sendable {
    let sampleRate: Double
    private var synth: OpaquePointer?
    private var settings: OpaquePointer?
    private var appliedCents: Float = 0
    /// Per channel: the bank MSB last selected (Apple's 0x78 / 0x79 conventions).
    private var bankMSB = [UInt8](repeating: 0x79, count: 16)
    // Own voices (sine and zones).
    private let voices: UnsafeMutablePointer<SamplerVoice>
    private static let voiceCount = 64
    private let zoneInfo: UnsafeMutablePointer<ZoneInfo>
    private let zoneCount: Int
    private let sampleData: UnsafeMutablePointer<Float>
    private let isSine: Bool
    private var bend = [Float](repeating: 0, count: 16)   // semitones
    private var volume = [Float](repeating: 1, count: 16)
    private var expression = [Float](repeating: 1, count: 16)
    private var sustain = [Bool](repeating: false, count: 16)
    private var bendRange = [Float](repeating: 2, count: 16)
    private var rpn = [Int](repeating: 0x3FFF, count: 16)

    struct ZoneInfo {
        var start: Int
        var frames: Int
        var channels: Int
        var rate: Double
        var root: Int
        var low: Int
        var high: Int
    }

    init(_ instrument: AUSamplerInstrument, sampleRate: Double) throws(AudioError) {
        self.sampleRate = sampleRate
        voices = .allocate(capacity: Self.voiceCount)
        voices.initialize(repeating: SamplerVoice(), count: Self.voiceCount)
        var zones: [AUSamplerZone] = []
        var sine = false
        switch instrument {
        case .sine: sine = true
        case .zones(let z): zones = z
        case .soundBank, .bankPreset: break
        }
        isSine = sine
        zoneCount = zones.count
        zoneInfo = .allocate(capacity: max(1, zones.count))
        let total = zones.reduce(0) { $0 + ($1.channels.first?.count ?? 0) * $1.channels.count }
        sampleData = .allocate(capacity: max(1, total))
        var at = 0
        for (i, z) in zones.enumerated() {
            let frames = z.channels.map(\.count).min() ?? 0
            let ch = max(1, min(2, z.channels.count))
            zoneInfo[i] = ZoneInfo(start: at, frames: frames, channels: ch, rate: z.sampleRate, root: Int(z.rootKey),
                                   low: Int(z.keyRange.lowerBound), high: Int(z.keyRange.upperBound))
            for c in 0..<ch {
                z.channels[c].withUnsafeBufferPointer { (sampleData + at + c * frames).update(from: $0.baseAddress!, count: frames) }
            }
            at += frames * ch
        }
        switch instrument {
        case .soundBank(let path):
            try makeSynth(path: path)
        case .bankPreset(let path, let program, let msb, let lsb):
            let id = try makeSynth(path: path)
            let bank = msb == 0x78 ? 128 : (msb == 0x79 ? Int(lsb) : Int(msb) * 128 + Int(lsb))
            for chan in 0..<16 {
                fluid_synth_set_channel_type(synth, Int32(chan), Int32(bank == 128 ? 1 : 0))
                if fluid_synth_program_select(synth, Int32(chan), id, Int32(bank), Int32(program)) != FLUID_OK {
                    destroy()
                    throw AudioError(.invalidArgument, component: "AUSamplerNode",
                                     "\(path) has no preset \(program) in bank MSB \(msb) LSB \(lsb) (SoundFont bank \(bank))",
                                     osStatus: -10851)
                }
                bankMSB[chan] = msb
            }
        default: break
        }
    }

    deinit {
        destroy()
        voices.deallocate()
        zoneInfo.deallocate()
        sampleData.deallocate()
    }

    private func destroy() {
        if let synth { delete_fluid_synth(synth) }
        if let settings { delete_fluid_settings(settings) }
        synth = nil
        settings = nil
    }

    @discardableResult
    private func makeSynth(path: String) throws(AudioError) -> Int32 {
        if let why = oat_fluidsynth_load() {
            throw AudioError(.unsupportedFormat, component: "AUSamplerNode", "cannot play \(path): " + String(cString: why), osStatus: -10871)
        }
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw AudioError(.io, component: "AUSamplerNode", "the sound bank \(path) does not exist", underlying: String(cString: strerror(errno)), osStatus: -43)
        }
        guard (st.st_mode & 0o170000) == 0o100000 else {
            throw AudioError(.invalidArgument, component: "AUSamplerNode", "the sound bank \(path) is not a regular file", osStatus: -10871)
        }
        settings = new_fluid_settings()
        // The render thread must not take FluidSynth's mutex: each synthesiser is used by one
        // thread at a time (built here, then rendered), so its thread-safe API is off.
        fluid_settings_setint(settings, "synth.threadsafe-api", 0)
        fluid_settings_setnum(settings, "synth.sample-rate", sampleRate)
        fluid_settings_setint(settings, "synth.audio-channels", 1)
        fluid_settings_setint(settings, "synth.cpu-cores", 1)
        fluid_settings_setint(settings, "synth.reverb.active", 0)
        fluid_settings_setint(settings, "synth.chorus.active", 0)
        fluid_settings_setnum(settings, "synth.gain", 0.5)
        fluid_settings_setint(settings, "synth.polyphony", 256)
        synth = new_fluid_synth(settings)
        guard synth != nil else {
            destroy()
            throw AudioError(.invalidState, component: "AUSamplerNode", "FluidSynth could not create a synthesiser at \(sampleRate) Hz", osStatus: -10875)
        }
        oat_fluidsynth_clear_error()
        let id = fluid_synth_sfload(synth, path, 1)
        guard id != FLUID_FAILED else {
            let why = String(cString: oat_fluidsynth_last_error())
            destroy()
            throw AudioError(.invalidData, component: "AUSamplerNode", "\(path) is not a SoundFont 2 or DLS bank FluidSynth can read",
                             underlying: why.isEmpty ? nil : why, osStatus: -10871)
        }
        return id
    }

    var activeVoices: Int {
        if let synth { return Int(fluid_synth_get_active_voice_count(synth)) }
        var n = 0
        for i in 0..<Self.voiceCount where voices[i].active { n += 1 }
        return n
    }

    // MARK: Render thread

    func handle(_ e: MIDIChannelEvent) {
        let chan = Int(e.status & 0x0F)
        let kind = e.status & 0xF0
        if let synth {
            let c = Int32(chan)
            switch kind {
            case 0x80: fluid_synth_noteoff(synth, c, Int32(e.data1))
            case 0x90:
                if e.data2 == 0 { fluid_synth_noteoff(synth, c, Int32(e.data1)) } else { fluid_synth_noteon(synth, c, Int32(e.data1), Int32(e.data2)) }
            case 0xA0: fluid_synth_key_pressure(synth, c, Int32(e.data1), Int32(e.data2))
            case 0xB0:
                if e.data1 == 0 {
                    // Apple's bank MSBs: 0x78 percussion, 0x79 melodic; taken at the next
                    // program change, as MIDI's bank select is.
                    bankMSB[chan] = e.data2
                    if e.data2 == 0x78 {
                        fluid_synth_set_channel_type(synth, c, 1)
                    } else {
                        fluid_synth_set_channel_type(synth, c, 0)
                        fluid_synth_cc(synth, c, 0, e.data2 == 0x79 ? 0 : Int32(e.data2))
                    }
                } else if e.data1 == 32, bankMSB[chan] == 0x79 {
                    fluid_synth_cc(synth, c, 0, Int32(e.data2))
                } else {
                    fluid_synth_cc(synth, c, Int32(e.data1), Int32(e.data2))
                }
            case 0xC0: fluid_synth_program_change(synth, c, Int32(e.data1))
            case 0xD0: fluid_synth_channel_pressure(synth, c, Int32(e.data1))
            case 0xE0: fluid_synth_pitch_bend(synth, c, Int32(e.data2) << 7 | Int32(e.data1))
            default: break
            }
            return
        }
        switch kind {
        case 0x80: noteOff(chan, Int(e.data1))
        case 0x90: if e.data2 == 0 { noteOff(chan, Int(e.data1)) } else { noteOn(chan, Int(e.data1), Int(e.data2)) }
        case 0xB0:
            switch e.data1 {
            case 7: volume[chan] = Float(e.data2) / 127
            case 11: expression[chan] = Float(e.data2) / 127
            case 64:
                sustain[chan] = e.data2 >= 64
                if !sustain[chan] {
                    for i in 0..<Self.voiceCount where voices[i].active && voices[i].channel == chan && voices[i].sustained {
                        voices[i].sustained = false
                        voices[i].releasing = true
                    }
                }
            case 100: rpn[chan] = (rpn[chan] & 0x3F80) | Int(e.data2)
            case 101: rpn[chan] = (rpn[chan] & 0x7F) | Int(e.data2) << 7
            case 6: if rpn[chan] == 0 { bendRange[chan] = Float(e.data2) }
            case 120, 123:
                for i in 0..<Self.voiceCount where voices[i].active && voices[i].channel == chan {
                    if e.data1 == 120 { voices[i].active = false } else { voices[i].releasing = true }
                }
            case 121:
                bend[chan] = 0; volume[chan] = 1; expression[chan] = 1; sustain[chan] = false
            default: break
            }
        case 0xE0:
            let v = Int(e.data2) << 7 | Int(e.data1)
            bend[chan] = Float(v - 8192) / 8192 * bendRange[chan]
        default: break
        }
    }

    func handleSysEx(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let synth, bytes.count > 2, let base = bytes.baseAddress else { return }
        var handled: Int32 = 0
        base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { p in
            _ = fluid_synth_sysex(synth, p + 1, Int32(bytes.count - 2), nil, nil, &handled, 0)
        }
    }

    private func noteOn(_ chan: Int, _ key: Int, _ velocity: Int) {
        var zone = -1
        if !isSine {
            for z in 0..<zoneCount where key >= zoneInfo[z].low && key <= zoneInfo[z].high { zone = z; break }
            if zone < 0 { return }
        }
        // A free voice, else the oldest.
        var slot = 0
        var oldest = UInt64.max
        for i in 0..<Self.voiceCount {
            if !voices[i].active { slot = i; oldest = 0; break }
            if voices[i].age < oldest { oldest = voices[i].age; slot = i }
        }
        var v = SamplerVoice()
        v.active = true
        v.channel = chan
        v.key = key
        v.zone = zone
        let amplitude = Float(velocity) / 127
        v.gain = amplitude * amplitude
        v.envelope = 0
        v.age = clock
        clock &+= 1
        voices[slot] = v
    }

    private var clock: UInt64 = 0

    private func noteOff(_ chan: Int, _ key: Int) {
        for i in 0..<Self.voiceCount where voices[i].active && !voices[i].releasing && voices[i].channel == chan && voices[i].key == key {
            if sustain[chan] { voices[i].sustained = true } else { voices[i].releasing = true }
        }
    }

    func render(into output: AUBufferList, from: Int, count: Int, cents: Float) {
        if let synth {
            if cents != appliedCents {
                let coarse = (cents / 100).rounded()
                let fine = cents - coarse * 100
                for c in 0..<Int32(16) {
                    fluid_synth_set_gen(synth, c, Int32(GEN_COARSETUNE.rawValue), coarse)
                    fluid_synth_set_gen(synth, c, Int32(GEN_FINETUNE.rawValue), fine)
                }
                appliedCents = cents
            }
            let left = output[0] + from
            let right = output.channelCount > 1 ? output[1] + from : left
            if output.channelCount > 1 {
                fluid_synth_write_float(synth, Int32(count), left, 0, 1, right, 0, 1)
            } else {
                // Mono: the left and right mixes interleaved into the channel, then summed.
                let half = count
                var done = 0
                while done < half {
                    var pair: (Float, Float) = (0, 0)
                    withUnsafeMutableBytes(of: &pair) { raw in
                        let p = raw.baseAddress!
                        _ = fluid_synth_write_float(synth, 1, p, 0, 2, p, 1, 2)
                    }
                    left[done] = (pair.0 + pair.1) * 0.5
                    done += 1
                }
            }
            return
        }
        let l = output[0] + from
        let r = output.channelCount > 1 ? output[1] + from : l
        l.update(repeating: 0, count: count)
        if output.channelCount > 1 { r.update(repeating: 0, count: count) }
        let attack = Float(1 / (0.002 * sampleRate))
        let release = Float(1 / ((isSine ? 0.1 : 0.25) * sampleRate))
        let tuning = cents / 1200
        for i in 0..<Self.voiceCount where voices[i].active {
            var v = voices[i]
            let chan = v.channel
            let level = v.gain * volume[chan] * expression[chan]
            if isSine {
                let hz = 440 * powf(2, (Float(v.key - 69) + bend[chan]) / 12 + tuning)
                let step = Double(hz) / sampleRate
                for n in 0..<count {
                    if v.releasing { v.envelope -= release; if v.envelope <= 0 { v.active = false; break } }
                    else if v.envelope < 1 { v.envelope = min(1, v.envelope + attack) }
                    let s = sinf(Float(2 * Double.pi * v.position)) * 0.5 * level * v.envelope
                    l[n] += s
                    if output.channelCount > 1 { r[n] += s }
                    v.position += step
                    if v.position >= 1 { v.position -= 1 }
                }
            } else {
                let z = zoneInfo[v.zone]
                let step = z.rate / sampleRate * Double(powf(2, (Float(v.key - z.root) + bend[chan]) / 12 + tuning))
                let data = sampleData + z.start
                for n in 0..<count {
                    if v.releasing { v.envelope -= release; if v.envelope <= 0 { v.active = false; break } }
                    else if v.envelope < 1 { v.envelope = min(1, v.envelope + attack) }
                    let index = Int(v.position)
                    if index + 1 >= z.frames { v.active = false; break }
                    let frac = Float(v.position - Double(index))
                    let g = level * v.envelope
                    let a = data[index] + (data[index + 1] - data[index]) * frac
                    if z.channels == 2 {
                        let d2 = data + z.frames
                        let b = d2[index] + (d2[index + 1] - d2[index]) * frac
                        if output.channelCount > 1 { l[n] += a * g; r[n] += b * g } else { l[n] += (a + b) * 0.5 * g }
                    } else {
                        l[n] += a * g
                        if output.channelCount > 1 { r[n] += a * g }
                    }
                    v.position += step
                }
            }
            voices[i] = v
        }
    }
}

/// One of the node's own voices (sine or an audio-file zone).
struct SamplerVoice {
    var active = false
    var releasing = false
    var sustained = false
    var channel = 0
    var key = 60
    var zone = -1
    var position: Double = 0
    var gain: Float = 1
    var envelope: Float = 0
    var age: UInt64 = 0
}
