// A Standard MIDI File played by AVAudioSequencer through an AVAudioUnitSampler (a General MIDI
// SoundFont), the sampler placed in 3-D by an AVAudioEnvironmentNode and moved from the
// listener's left to the right while it plays. Written as iOS/macOS code is; only the import
// differs.
//
//   porting-midi-3d-demo [FILE.mid] [--bank BANK.sf2] [--program N] [--seconds S] [--algorithm hrtf|hrtfhq|sphere|equalpower]
//
// Without a file it writes its own (a C major arpeggio, 4 notes a second at 120 bpm) with the
// MusicSequence C calls and plays that. It prints what it played, then the source's path.
#if canImport(AVFoundation)
import AVFoundation
#else
import OpenAVFAudio
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write((message + "\n").data(using: .utf8)!)
    exit(2)
}

func check(_ status: OSStatus, _ what: String) {
    if status != noErr { fail("\(what): OSStatus \(status)") }
}

var midiPath: String?
var bankPath = "/usr/share/sounds/sf2/TimGM6mb.sf2"
var program: UInt8 = 0
var seconds: Double?
var algorithm = AVAudio3DMixingRenderingAlgorithm.HRTFHQ
var args = Array(CommandLine.arguments.dropFirst())
while !args.isEmpty {
    let a = args.removeFirst()
    switch a {
    case "--bank":
        guard !args.isEmpty else { fail("--bank needs a path") }
        bankPath = args.removeFirst()
    case "--program":
        guard let p = UInt8(args.isEmpty ? "" : args.removeFirst()), p < 128 else { fail("--program needs 0...127") }
        program = p
    case "--seconds":
        guard let s = Double(args.isEmpty ? "" : args.removeFirst()), s > 0 else { fail("--seconds needs a number above 0") }
        seconds = s
    case "--algorithm":
        switch args.isEmpty ? "" : args.removeFirst() {
        case "hrtf": algorithm = .HRTF
        case "hrtfhq": algorithm = .HRTFHQ
        case "sphere": algorithm = .sphericalHead
        case "equalpower": algorithm = .equalPowerPanning
        default: fail("--algorithm is one of hrtf, hrtfhq, sphere, equalpower")
        }
    default:
        if a.hasPrefix("--") { fail("unknown option \(a)") }
        midiPath = a
    }
}

/// Writes the demo's own file: an arpeggio C4 E4 G4 C5, up and down, eighth notes at 120 bpm.
func writeDemoFile() -> URL {
    var sequence: MusicSequence?
    check(NewMusicSequence(&sequence), "NewMusicSequence")
    var tempo: MusicTrack?
    check(MusicSequenceGetTempoTrack(sequence!, &tempo), "MusicSequenceGetTempoTrack")
    check(MusicTrackNewExtendedTempoEvent(tempo!, 0, 120), "MusicTrackNewExtendedTempoEvent")
    var track: MusicTrack?
    check(MusicSequenceNewTrack(sequence!, &track), "MusicSequenceNewTrack")
    let keys: [UInt8] = [60, 64, 67, 72, 67, 64]
    for bar in 0..<3 {
        for (i, key) in keys.enumerated() {
            var note = MIDINoteMessage(channel: 0, note: key, velocity: 100, releaseVelocity: 0, duration: 0.45)
            check(MusicTrackNewMIDINoteEvent(track!, Double(bar * keys.count + i) * 0.5, &note), "MusicTrackNewMIDINoteEvent")
        }
    }
    let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("porting-midi-3d-demo-\(getpid()).mid")
    check(MusicSequenceFileCreate(sequence!, url as CFURL, .midiType, .eraseFile, 480), "MusicSequenceFileCreate")
    DisposeMusicSequence(sequence!)
    return url
}

let ownFile = midiPath == nil
let midiURL = midiPath.map { URL(fileURLWithPath: $0) } ?? writeDemoFile()
defer { if ownFile { try? FileManager.default.removeItem(at: midiURL) } }

let engine = AVAudioEngine()
let sampler = AVAudioUnitSampler()
let environment = AVAudioEnvironmentNode()
engine.attach(sampler)
engine.attach(environment)
// A 3-D source is mono; the environment renders it for the listener's two ears.
let mono = AVAudioFormat(standardFormatWithSampleRate: engine.outputNode.outputFormat(forBus: 0).sampleRate, channels: 1)!
engine.connect(sampler, to: environment, format: mono)
engine.connect(environment, to: engine.mainMixerNode, format: nil)
do {
    try sampler.loadSoundBankInstrument(at: URL(fileURLWithPath: bankPath), program: program,
                                        bankMSB: UInt8(kAUSampler_DefaultMelodicBankMSB), bankLSB: UInt8(kAUSampler_DefaultBankLSB))
} catch {
    fail("cannot load the bank \(bankPath): \(error)")
}
sampler.renderingAlgorithm = algorithm
environment.listenerPosition = AVAudio3DPoint(x: 0, y: 0, z: 0)
environment.listenerAngularOrientation = AVAudio3DAngularOrientation(yaw: 0, pitch: 0, roll: 0)
let radius: Float = 2

/// The source on a half circle in front of the listener: -90 degrees (left) to +90 (right).
func place(_ fraction: Double) {
    let angle = (-90 + 180 * min(1, max(0, fraction))) * Double.pi / 180
    sampler.position = AVAudio3DPoint(x: radius * Float(sin(angle)), y: 0, z: -radius * Float(cos(angle)))
}
place(0)

let sequencer = AVAudioSequencer(audioEngine: engine)
do { try sequencer.load(from: midiURL, options: []) } catch { fail("cannot load \(midiURL.path): \(error)") }
let length = sequencer.tracks.map { $0.lengthInSeconds }.max() ?? 0
let duration = seconds ?? (length + 0.5)

engine.prepare()
do { try engine.start() } catch { fail("cannot start the engine: \(error)") }
sequencer.prepareToPlay()
do { try sequencer.start() } catch { fail("cannot start the sequencer: \(error)") }
let start = Date()
while true {
    let t = Date().timeIntervalSince(start)
    if t >= duration { break }
    place(t / max(0.001, min(duration, length)))
    usleep(10_000)
}
sequencer.stop()
engine.stop()
print("porting-midi-3d-demo: played \(midiURL.lastPathComponent) (\(sequencer.tracks.count) tracks, \(String(format: "%.2f", length)) s) for \(String(format: "%.2f", duration)) s with program \(program) of \(bankPath); the source moved from 90 degrees left to 90 degrees right at \(radius) m")
