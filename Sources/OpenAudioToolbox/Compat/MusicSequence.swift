// Audio Toolbox–compatible MusicPlayer.h, part 1: sequences, tracks, events and iterators, and
// Standard MIDI Files in and out (MusicPlayback.swift has the player).

import OATCore
import OATFiles
import OATUnits
import Foundation

// MARK: - Types

/// A time in beats (Apple's `MusicTimeStamp`, `Float64`).
public typealias MusicTimeStamp = Float64
/// A kind of track event (Apple's `MusicEventType`, `UInt32`).
public typealias MusicEventType = UInt32
/// A sequence (Apple's `MusicSequence`, an opaque pointer).
public typealias MusicSequence = OpaquePointer
/// A track of a sequence (Apple's `MusicTrack`, an opaque pointer).
public typealias MusicTrack = OpaquePointer
/// A player (Apple's `MusicPlayer`, an opaque pointer).
public typealias MusicPlayer = OpaquePointer
/// An iterator over a track's events (Apple's `MusicEventIterator`, an opaque pointer).
public typealias MusicEventIterator = OpaquePointer
/// Apple's `CFData` stand-in: Foundation's `NSData` (`data as CFData` works as on Apple).
public typealias CFData = NSData

/// No event (Apple's `kMusicEventType_NULL`).
public let kMusicEventType_NULL: UInt32 = 0
/// A note with variable parameters (Apple's `kMusicEventType_ExtendedNote`).
public let kMusicEventType_ExtendedNote: UInt32 = 1
/// A tempo change, `ExtendedTempoEvent` (Apple's `kMusicEventType_ExtendedTempo`).
public let kMusicEventType_ExtendedTempo: UInt32 = 3
/// User data, `MusicEventUserData` (Apple's `kMusicEventType_User`).
public let kMusicEventType_User: UInt32 = 4
/// A Standard MIDI File meta event, `MIDIMetaEvent` (Apple's `kMusicEventType_Meta`).
public let kMusicEventType_Meta: UInt32 = 5
/// A note with its duration, `MIDINoteMessage` (Apple's `kMusicEventType_MIDINoteMessage`).
public let kMusicEventType_MIDINoteMessage: UInt32 = 6
/// A channel message, `MIDIChannelMessage` (Apple's `kMusicEventType_MIDIChannelMessage`).
public let kMusicEventType_MIDIChannelMessage: UInt32 = 7
/// Raw MIDI (System Exclusive), `MIDIRawData` (Apple's `kMusicEventType_MIDIRawData`).
public let kMusicEventType_MIDIRawData: UInt32 = 8
/// An audio unit parameter change, `ParameterEvent` (Apple's `kMusicEventType_Parameter`).
public let kMusicEventType_Parameter: UInt32 = 9
/// An audio unit preset (Apple's `kMusicEventType_AUPreset`). Different: not taken here
/// (`kAudioToolboxErr_InvalidEventType`): there are no preset dictionaries to apply.
public let kMusicEventType_AUPreset: UInt32 = 10

/// Track property: `MusicTrackLoopInfo` (Apple's `kSequenceTrackProperty_LoopInfo`).
public let kSequenceTrackProperty_LoopInfo: UInt32 = 0
/// Track property: the beat the track starts at, `MusicTimeStamp` (Apple's `kSequenceTrackProperty_OffsetTime`).
public let kSequenceTrackProperty_OffsetTime: UInt32 = 1
/// Track property: muted, `Boolean` (Apple's `kSequenceTrackProperty_MuteStatus`).
public let kSequenceTrackProperty_MuteStatus: UInt32 = 2
/// Track property: soloed, `Boolean` (Apple's `kSequenceTrackProperty_SoloStatus`).
public let kSequenceTrackProperty_SoloStatus: UInt32 = 3
/// Track property: parameter automation only, `UInt32` (Apple's `kSequenceTrackProperty_AutomatedParameters`).
public let kSequenceTrackProperty_AutomatedParameters: UInt32 = 4
/// Track property: the length in beats, `MusicTimeStamp` (Apple's `kSequenceTrackProperty_TrackLength`).
public let kSequenceTrackProperty_TrackLength: UInt32 = 5
/// Tempo track property: ticks per quarter note for files, `SInt16` (Apple's `kSequenceTrackProperty_TimeResolution`).
public let kSequenceTrackProperty_TimeResolution: UInt32 = 6

/// The sequence type is not one of `MusicSequenceType` (Apple's `kAudioToolboxErr_InvalidSequenceType`).
public let kAudioToolboxErr_InvalidSequenceType: OSStatus = -10846
/// No track at that index (Apple's `kAudioToolboxErr_TrackIndexError`).
public let kAudioToolboxErr_TrackIndexError: OSStatus = -10859
/// The track is not in the sequence (Apple's `kAudioToolboxErr_TrackNotFound`).
public let kAudioToolboxErr_TrackNotFound: OSStatus = -10858
/// The iterator is past the last event (Apple's `kAudioToolboxErr_EndOfTrack`).
public let kAudioToolboxErr_EndOfTrack: OSStatus = -10857
/// The iterator is before the first event (Apple's `kAudioToolboxErr_StartOfTrack`).
public let kAudioToolboxErr_StartOfTrack: OSStatus = -10856
/// The destination is not a node of the sequence's graph (Apple's `kAudioToolboxErr_IllegalTrackDestination`).
public let kAudioToolboxErr_IllegalTrackDestination: OSStatus = -10855
/// The player has no sequence (Apple's `kAudioToolboxErr_NoSequence`).
public let kAudioToolboxErr_NoSequence: OSStatus = -10854
/// The event type is not one of `kMusicEventType_*` or not taken here (Apple's `kAudioToolboxErr_InvalidEventType`).
public let kAudioToolboxErr_InvalidEventType: OSStatus = -10853
/// Not possible in the player's state (Apple's `kAudioToolboxErr_InvalidPlayerState`).
public let kAudioToolboxErr_InvalidPlayerState: OSStatus = -10852
/// Not possible now (Apple's `kAudioToolboxErr_CannotDoInCurrentContext`).
public let kAudioToolboxErr_CannotDoInCurrentContext: OSStatus = -10863
/// The track has no destination (Apple's `kAudioToolboxError_NoTrackDestination`).
public let kAudioToolboxError_NoTrackDestination: OSStatus = -66720

/// How a sequence counts time (Apple's `MusicSequenceType`).
public enum MusicSequenceType: UInt32, Sendable {
    /// Beats, with the tempo track's tempo (the default).
    case beats = 0x6265_6174 // 'beat'
    /// Seconds: the tempo is fixed at 60 bpm.
    case seconds = 0x7365_6373 // 'secs'
    /// Samples: the tempo is fixed at 60 x the graph's sample rate.
    case samples = 0x7361_6D70 // 'samp'
}

/// File types a sequence reads and writes (Apple's `MusicSequenceFileTypeID`).
public enum MusicSequenceFileTypeID: UInt32, Sendable {
    /// Any type the data can be read as.
    case anyType = 0
    /// A Standard MIDI File (`'midi'`).
    case midiType = 0x6D69_6469
    /// iMelody (`'imel'`). Different: not read or written here.
    case iMelodyType = 0x696D_656C
}

/// How files load into a sequence (Apple's `MusicSequenceLoadFlags`).
public struct MusicSequenceLoadFlags: OptionSet, Sendable {
    /// The flags' bits.
    public var rawValue: UInt32
    /// Creates flags.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// One track of the sequence per track of the file (the default).
    public static var smf_PreserveTracks: MusicSequenceLoadFlags { MusicSequenceLoadFlags(rawValue: 0) }
    /// One track per MIDI channel found, then one for System Exclusive and meta events.
    public static var smf_ChannelsToTracks: MusicSequenceLoadFlags { MusicSequenceLoadFlags(rawValue: 1) }
}

/// How files are written (Apple's `MusicSequenceFileFlags`; none set, `[]`: an existing file is an error).
public struct MusicSequenceFileFlags: OptionSet, Sendable {
    /// The flags' bits.
    public var rawValue: UInt32
    /// Creates flags.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Replace an existing file.
    public static var eraseFile: MusicSequenceFileFlags { MusicSequenceFileFlags(rawValue: 1) }
}

/// The user-event callback of a sequence (Apple's `MusicSequenceUserCallback`): client data,
/// sequence, track, the event's beat, its data, and the beats of the slice being played.
public typealias MusicSequenceUserCallback = @convention(c) (UnsafeMutableRawPointer?, MusicSequence, MusicTrack, MusicTimeStamp,
                                                             UnsafePointer<MusicEventUserData>, MusicTimeStamp, MusicTimeStamp) -> Void

// MARK: - The objects

/// One event of a track: its beat, type and data in Apple's C layout (kept at a fixed address
/// until the event is deleted, so an iterator's data pointer stays valid).
final class CompatMusicEvent: @unchecked Sendable {
    var time: MusicTimeStamp
    let type: MusicEventType
    let data: UnsafeMutableRawPointer
    let size: Int

    init(time: MusicTimeStamp, type: MusicEventType, bytes: UnsafeRawPointer, size: Int) {
        self.time = time
        self.type = type
        self.size = size
        data = .allocate(byteCount: max(1, size), alignment: 8)
        data.copyMemory(from: bytes, byteCount: size)
    }

    convenience init<T: BitwiseCopyable>(time: MusicTimeStamp, type: MusicEventType, value: T) {
        let bytes = withUnsafeBytes(of: value) { Array($0) }
        self.init(time: time, type: type, bytes: bytes, size: bytes.count)
    }

    /// A variable-length event: `headerSize` bytes of `header`, then `payload` (its length field
    /// set by the caller).
    convenience init(time: MusicTimeStamp, type: MusicEventType, header: UnsafeRawPointer, headerSize: Int, payload: [UInt8]) {
        let total = headerSize + payload.count
        let tmp = UnsafeMutableRawPointer.allocate(byteCount: max(1, total), alignment: 8)
        defer { tmp.deallocate() }
        tmp.copyMemory(from: header, byteCount: headerSize)
        payload.withUnsafeBytes { if let b = $0.baseAddress { (tmp + headerSize).copyMemory(from: b, byteCount: payload.count) } }
        self.init(time: time, type: type, bytes: tmp, size: total)
    }

    func copy(at time: MusicTimeStamp) -> CompatMusicEvent { CompatMusicEvent(time: time, type: type, bytes: data, size: size) }

    deinit { data.deallocate() }

    func load<T: BitwiseCopyable>(_: T.Type) -> T { data.loadUnaligned(as: T.self) }

    /// The bytes after a variable-length event's header.
    func payload(headerSize: Int, length: Int) -> [UInt8] {
        let n = max(0, min(length, size - headerSize))
        return Array(UnsafeRawBufferPointer(start: data + headerSize, count: n))
    }

    /// Where the event ends (a note's release, otherwise its beat).
    var end: MusicTimeStamp {
        switch type {
        case kMusicEventType_MIDINoteMessage: return time + Double(max(0, load(MIDINoteMessage.self).duration))
        default: return time
        }
    }
}

/// A track: its events in time order and its properties.
final class CompatMusicTrack: @unchecked Sendable {
    weak var sequence: CompatMusicSequence?
    var handle: MusicTrack?
    var events: [CompatMusicEvent] = []
    var loopInfo = MusicTrackLoopInfo(loopDuration: 0, numberOfLoops: 0)
    var offsetTime: MusicTimeStamp = 0
    var muted = false
    var soloed = false
    var automatedParameters: UInt32 = 0
    var explicitLength: MusicTimeStamp = 0
    var timeResolution: Int16 = 480
    /// `MusicTrackSetDestNode` (nil: the sequence's default, its graph's first music device).
    var destinationNode: AUNode?

    /// The track's length: the end of its last event, or the length set, whichever is later.
    var length: MusicTimeStamp { max(explicitLength, events.reduce(0) { max($0, $1.end) }) }

    /// Inserts after every event at the same beat (stable).
    func insert(_ e: CompatMusicEvent) {
        var lo = 0
        var hi = events.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if events[mid].time <= e.time { lo = mid + 1 } else { hi = mid }
        }
        events.insert(e, at: lo)
    }

    func resort() {
        events = events.enumerated().sorted { $0.element.time != $1.element.time ? $0.element.time < $1.element.time : $0.offset < $1.offset }.map(\.element)
    }
}

/// A sequence: a tempo track, tracks, a graph and a user callback.
final class CompatMusicSequence: @unchecked Sendable {
    var handle: MusicSequence?
    let tempoTrack = CompatMusicTrack()
    var tracks: [CompatMusicTrack] = []
    var graph: AUGraph?
    var ownsGraph = false
    var type: MusicSequenceType = .beats
    var userCallback: MusicSequenceUserCallback?
    var userClientData: UnsafeMutableRawPointer?
    weak var player: CompatMusicPlayer?

    init() { tempoTrack.sequence = self }

    deinit {
        for t in tracks + [tempoTrack] { if let h = t.handle { _ = CompatHandles.remove(h, as: CompatMusicTrack.self) } }
        if ownsGraph, let g = graph {
            AUGraphStop(g)
            DisposeAUGraph(g)
        }
    }

    func newTrack() -> CompatMusicTrack {
        let t = CompatMusicTrack()
        t.sequence = self
        t.handle = CompatHandles.make(t)
        tracks.append(t)
        return t
    }

    // MARK: Tempo map

    /// The tempo changes: (beat, bpm), in time order; the tempo before the first is 120 bpm.
    var tempoChanges: [(beat: Double, bpm: Double)] {
        switch type {
        case .seconds: return [(0, 60)]
        case .samples: return [(0, 60 * sampleRateForSamples)]
        case .beats:
            var out: [(Double, Double)] = []
            for e in tempoTrack.events where e.type == kMusicEventType_ExtendedTempo {
                let bpm = e.load(ExtendedTempoEvent.self).bpm
                if bpm.isFinite, bpm > 0 { out.append((e.time, bpm)) }
            }
            return out
        }
    }

    var sampleRateForSamples: Double {
        if let g = graph, let cg = compatGraph(g), let out = cg.units.first(where: { $0.unit.isOutput })?.unit {
            let r = out.format(kAudioUnitScope_Input, 0).mSampleRate
            if r > 0 { return r }
        }
        return 44100
    }

    /// The beat-to-second map as it is now.
    var tempoMap: MusicTempoMap { MusicTempoMap(changes: tempoChanges) }

    /// Seconds from beat 0 to `beats`.
    func seconds(forBeats beats: Double) -> Double { tempoMap.seconds(forBeats: beats) }

    /// Beats from second 0 to `seconds`.
    func beats(forSeconds seconds: Double) -> Double { tempoMap.beats(forSeconds: seconds) }

    /// Where each meter of the tempo track starts (beat and bar), its beats per bar and its beat
    /// in quarters: 4/4 from bar 1 at beat 0 until the first time signature, a signature's bars
    /// counted from the one before.
    var meters: [(beat: Double, bar: Int, numerator: Int, quarters: Double)] {
        var out: [(beat: Double, bar: Int, numerator: Int, quarters: Double)] = [(0, 1, 4, 1)]
        for sig in timeSignatures {
            let last = out[out.count - 1]
            if sig.beat <= last.beat {
                out[out.count - 1] = (last.beat, last.bar, sig.numerator, sig.quarters)
                continue
            }
            let bar = last.bar + Int(((sig.beat - last.beat) / (Double(last.numerator) * last.quarters)).rounded(.down))
            out.append((sig.beat, bar, sig.numerator, sig.quarters))
        }
        return out
    }

    /// The time signatures of the tempo track: (beat, beats per bar, beat unit in quarters).
    var timeSignatures: [(beat: Double, numerator: Int, quarters: Double)] {
        var out: [(Double, Int, Double)] = []
        for e in tempoTrack.events where e.type == kMusicEventType_Meta {
            let m = e.load(MIDIMetaEvent.self)
            guard m.metaEventType == 0x58 else { continue }
            let p = e.payload(headerSize: metaHeaderSize, length: Int(m.dataLength))
            guard p.count >= 2, p[0] > 0, p[1] < 8 else { continue }
            out.append((e.time, Int(p[0]), 4.0 / Double(1 << Int(p[1]))))
        }
        return out
    }
}

/// A tempo map: tempo changes (beat, bpm) in time order, 120 bpm before the first.
struct MusicTempoMap: Sendable {
    let changes: [(beat: Double, bpm: Double)]

    private var initialBPM: Double {
        if let first = changes.first, first.beat <= 0 { return first.bpm }
        return 120
    }

    /// Seconds from beat 0 to `beats`.
    func seconds(forBeats beats: Double) -> Double {
        var bpm = initialBPM
        if beats < 0 { return beats * 60 / bpm }
        var beat = 0.0
        var seconds = 0.0
        for c in changes where c.beat > 0 {
            if c.beat >= beats { break }
            seconds += (c.beat - beat) * 60 / bpm
            beat = c.beat
            bpm = c.bpm
        }
        return seconds + (beats - beat) * 60 / bpm
    }

    /// Beats from second 0 to `target` seconds.
    func beats(forSeconds target: Double) -> Double {
        var bpm = initialBPM
        if target < 0 { return target * bpm / 60 }
        var beat = 0.0
        var seconds = 0.0
        for c in changes where c.beat > 0 {
            let at = seconds + (c.beat - beat) * 60 / bpm
            if at >= target { break }
            seconds = at
            beat = c.beat
            bpm = c.bpm
        }
        return beat + (target - seconds) * bpm / 60
    }
}

/// An iterator: a track and a position in its events.
final class CompatMusicEventIterator: @unchecked Sendable {
    let track: CompatMusicTrack
    var index = 0
    init(track: CompatMusicTrack) { self.track = track }
}

func compatSequence(_ s: MusicSequence?) -> CompatMusicSequence? { CompatHandles.object(s, as: CompatMusicSequence.self) }
func compatTrack(_ t: MusicTrack?) -> CompatMusicTrack? { CompatHandles.object(t, as: CompatMusicTrack.self) }

/// Offset of `data` in `MIDIMetaEvent`, `MIDIRawData` and `MusicEventUserData`.
let metaHeaderSize = MemoryLayout<MIDIMetaEvent>.offset(of: \MIDIMetaEvent.data)!
let rawHeaderSize = MemoryLayout<MIDIRawData>.offset(of: \MIDIRawData.data)!

// MARK: - Sequences

/// Creates an empty sequence: a tempo track and no other (Apple's `NewMusicSequence`).
@discardableResult
public func NewMusicSequence(_ outSequence: UnsafeMutablePointer<MusicSequence?>) -> OSStatus {
    let s = CompatMusicSequence()
    let h = CompatHandles.make(s)
    s.handle = h
    s.tempoTrack.handle = CompatHandles.make(s.tempoTrack)
    outSequence.pointee = h
    return noErr
}

/// Disposes of a sequence and its tracks (Apple's `DisposeMusicSequence`); a player that has it
/// stops and lets it go. A graph the sequence made for itself is disposed of with it.
@discardableResult
public func DisposeMusicSequence(_ inSequence: MusicSequence) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    if let p = s.player {
        p.stopPlaying()
        p.sequence = nil
    }
    _ = CompatHandles.remove(inSequence, as: CompatMusicSequence.self)
    return noErr
}

/// Adds a track at the end (Apple's `MusicSequenceNewTrack`).
@discardableResult
public func MusicSequenceNewTrack(_ inSequence: MusicSequence, _ outTrack: UnsafeMutablePointer<MusicTrack?>) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    outTrack.pointee = s.newTrack().handle
    return noErr
}

/// Removes a track (Apple's `MusicSequenceDisposeTrack`); the tempo track cannot be removed.
@discardableResult
public func MusicSequenceDisposeTrack(_ inSequence: MusicSequence, _ inTrack: MusicTrack) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    guard let t = compatTrack(inTrack), let i = s.tracks.firstIndex(where: { $0 === t }) else { return kAudioToolboxErr_TrackNotFound }
    s.tracks.remove(at: i)
    _ = CompatHandles.remove(inTrack, as: CompatMusicTrack.self)
    return noErr
}

/// The number of tracks, the tempo track not counted (Apple's `MusicSequenceGetTrackCount`).
@discardableResult
public func MusicSequenceGetTrackCount(_ inSequence: MusicSequence, _ outNumberOfTracks: UnsafeMutablePointer<UInt32>) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    outNumberOfTracks.pointee = UInt32(s.tracks.count)
    return noErr
}

/// The track at an index (Apple's `MusicSequenceGetIndTrack`).
@discardableResult
public func MusicSequenceGetIndTrack(_ inSequence: MusicSequence, _ inTrackIndex: UInt32, _ outTrack: UnsafeMutablePointer<MusicTrack?>) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    guard Int(inTrackIndex) < s.tracks.count else { return kAudioToolboxErr_TrackIndexError }
    outTrack.pointee = s.tracks[Int(inTrackIndex)].handle
    return noErr
}

/// A track's index (Apple's `MusicSequenceGetTrackIndex`).
@discardableResult
public func MusicSequenceGetTrackIndex(_ inSequence: MusicSequence, _ inTrack: MusicTrack, _ outTrackIndex: UnsafeMutablePointer<UInt32>) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    guard let t = compatTrack(inTrack), let i = s.tracks.firstIndex(where: { $0 === t }) else { return kAudioToolboxErr_TrackNotFound }
    outTrackIndex.pointee = UInt32(i)
    return noErr
}

/// The tempo track (Apple's `MusicSequenceGetTempoTrack`): its tempo events set the beat-to-
/// second map, its time signature meta events the bars.
@discardableResult
public func MusicSequenceGetTempoTrack(_ inSequence: MusicSequence, _ outTrack: UnsafeMutablePointer<MusicTrack?>) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    outTrack.pointee = s.tempoTrack.handle
    return noErr
}

/// Sets the graph the sequence plays (Apple's `MusicSequenceSetAUGraph`): tracks without a
/// destination of their own play on its first music device.
@discardableResult
public func MusicSequenceSetAUGraph(_ inSequence: MusicSequence, _ inGraph: AUGraph?) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    if let g = inGraph, compatGraph(g) == nil { return kAudio_ParamError }
    if s.ownsGraph, let old = s.graph, old != inGraph {
        AUGraphStop(old)
        DisposeAUGraph(old)
    }
    s.graph = inGraph
    s.ownsGraph = false
    return noErr
}

/// The sequence's graph (Apple's `MusicSequenceGetAUGraph`); without one, makes the default: a
/// General MIDI synth (`kAudioUnitSubType_MIDISynth` with the system's GM bank) into the
/// default output, opened, as Apple's default DLS synth graph is.
@discardableResult
public func MusicSequenceGetAUGraph(_ inSequence: MusicSequence, _ outGraph: UnsafeMutablePointer<AUGraph?>) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    if s.graph == nil {
        let status = makeDefaultMusicGraph(s)
        guard status == noErr else { return status }
    }
    outGraph.pointee = s.graph
    return noErr
}

func makeDefaultMusicGraph(_ s: CompatMusicSequence) -> OSStatus {
    var graph: AUGraph?
    guard NewAUGraph(&graph) == noErr, let graph else { return kAudio_ParamError }
    var synth = AudioComponentDescription(componentType: kAudioUnitType_MusicDevice, componentSubType: kAudioUnitSubType_MIDISynth,
                                          componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
    var out = AudioComponentDescription(componentType: kAudioUnitType_Output, componentSubType: kAudioUnitSubType_DefaultOutput,
                                        componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
    var synthNode: AUNode = 0
    var outNode: AUNode = 0
    var status = AUGraphAddNode(graph, &synth, &synthNode)
    if status == noErr { status = AUGraphAddNode(graph, &out, &outNode) }
    if status == noErr { status = AUGraphConnectNodeInput(graph, synthNode, 0, outNode, 0) }
    if status == noErr { status = AUGraphOpen(graph) }
    guard status == noErr else {
        DisposeAUGraph(graph)
        return status
    }
    s.graph = graph
    s.ownsGraph = true
    return noErr
}

/// Sets how the sequence counts time (Apple's `MusicSequenceSetSequenceType`).
@discardableResult
public func MusicSequenceSetSequenceType(_ inSequence: MusicSequence, _ inType: MusicSequenceType) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    s.type = inType
    return noErr
}

/// How the sequence counts time (Apple's `MusicSequenceGetSequenceType`).
@discardableResult
public func MusicSequenceGetSequenceType(_ inSequence: MusicSequence, _ outType: UnsafeMutablePointer<MusicSequenceType>) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    outType.pointee = s.type
    return noErr
}

/// Seconds from beat 0 to a beat, through the tempo track (Apple's `MusicSequenceGetSecondsForBeats`).
@discardableResult
public func MusicSequenceGetSecondsForBeats(_ inSequence: MusicSequence, _ inBeats: MusicTimeStamp, _ outSeconds: UnsafeMutablePointer<Float64>) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    guard inBeats.isFinite else { return kAudio_ParamError }
    outSeconds.pointee = s.seconds(forBeats: inBeats)
    return noErr
}

/// The beat at a time in seconds, through the tempo track (Apple's `MusicSequenceGetBeatsForSeconds`).
@discardableResult
public func MusicSequenceGetBeatsForSeconds(_ inSequence: MusicSequence, _ inSeconds: Float64, _ outBeats: UnsafeMutablePointer<MusicTimeStamp>) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    guard inSeconds.isFinite else { return kAudio_ParamError }
    outBeats.pointee = s.beats(forSeconds: inSeconds)
    return noErr
}

/// A beat as bar, beat and sub-beat, through the tempo track's time signatures (4/4 before the
/// first) (Apple's `MusicSequenceBeatsToBarBeatTime`).
@discardableResult
public func MusicSequenceBeatsToBarBeatTime(_ inSequence: MusicSequence, _ inBeats: MusicTimeStamp, _ inSubbeatDivisor: UInt32,
                                            _ outBarBeatTime: UnsafeMutablePointer<CABarBeatTime>) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    guard inBeats.isFinite, inBeats >= 0, inSubbeatDivisor > 0, inSubbeatDivisor <= UInt32(UInt16.max) else { return kAudio_ParamError }
    let meters = s.meters
    let m = meters.last { $0.beat <= inBeats } ?? meters[0]
    let barLength = Double(m.numerator) * m.quarters
    let bars = ((inBeats - m.beat) / barLength).rounded(.down)
    let bar = m.bar + Int(bars)
    let inBar = (inBeats - m.beat - bars * barLength) / m.quarters
    let beat = Int(inBar.rounded(.down))
    let sub = Int(((inBar - Double(beat)) * Double(inSubbeatDivisor)).rounded(.down))
    outBarBeatTime.pointee = CABarBeatTime(bar: Int32(clamping: bar), beat: UInt16(clamping: beat + 1), subbeat: UInt16(clamping: sub),
                                           subbeatDivisor: UInt16(inSubbeatDivisor), reserved: 0)
    return noErr
}

/// A bar-beat time as beats (Apple's `MusicSequenceBarBeatTimeToBeats`).
@discardableResult
public func MusicSequenceBarBeatTimeToBeats(_ inSequence: MusicSequence, _ inBarBeatTime: UnsafePointer<CABarBeatTime>,
                                            _ outBeats: UnsafeMutablePointer<MusicTimeStamp>) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    let t = inBarBeatTime.pointee
    guard t.bar >= 1, t.beat >= 1, t.subbeatDivisor > 0 else { return kAudio_ParamError }
    let meters = s.meters
    let m = meters.last { $0.bar <= Int(t.bar) } ?? meters[0]
    let beats = m.beat + Double(Int(t.bar) - m.bar) * Double(m.numerator) * m.quarters
        + (Double(t.beat - 1) + Double(t.subbeat) / Double(t.subbeatDivisor)) * m.quarters
    outBeats.pointee = beats
    return noErr
}

/// Sets the callback for the sequence's user events (Apple's `MusicSequenceSetUserCallback`):
/// a player calls it on its own thread, never the render thread, as each user event's beat
/// is played.
@discardableResult
public func MusicSequenceSetUserCallback(_ inSequence: MusicSequence, _ inCallback: MusicSequenceUserCallback?,
                                         _ inClientData: UnsafeMutableRawPointer?) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    s.userCallback = inCallback
    s.userClientData = inClientData
    return noErr
}

/// Reverses the order of every track's events in time (Apple's `MusicSequenceReverse`).
@discardableResult
public func MusicSequenceReverse(_ inSequence: MusicSequence) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    let length = s.tracks.reduce(0) { max($0, $1.length) }
    for t in s.tracks {
        for e in t.events { e.time = max(0, length - e.end) }
        t.resort()
    }
    return noErr
}

/// The sequence's info dictionary (Apple's `MusicSequenceGetInfoDictionary`): the tempo
/// track's copyright and name meta events and the tempo, under `kAFInfoDictionary_*` keys.
public func MusicSequenceGetInfoDictionary(_ inSequence: MusicSequence) -> CFDictionary {
    guard let s = compatSequence(inSequence) else { return NSDictionary() }
    var info: [String: String] = [:]
    for e in (s.tracks.first?.events ?? []) + s.tempoTrack.events where e.type == kMusicEventType_Meta {
        let m = e.load(MIDIMetaEvent.self)
        let text = String(decoding: e.payload(headerSize: metaHeaderSize, length: Int(m.dataLength)), as: UTF8.self)
        switch m.metaEventType {
        case 0x02: info[kAFInfoDictionary_Copyright] = info[kAFInfoDictionary_Copyright] ?? text
        case 0x03: info[kAFInfoDictionary_Title] = info[kAFInfoDictionary_Title] ?? text
        default: break
        }
    }
    if let first = s.tempoChanges.first { info[kAFInfoDictionary_Tempo] = String(first.bpm) }
    return NSDictionary(dictionary: info)
}

// MARK: - Files

/// Reads a Standard MIDI File into the sequence (Apple's `MusicSequenceFileLoad`); errors name
/// what is wrong and where (the message goes to standard error, the status is Apple's).
@discardableResult
public func MusicSequenceFileLoad(_ inSequence: MusicSequence, _ inFileRef: CFURL, _ inFileTypeHint: MusicSequenceFileTypeID,
                                  _ inFlags: MusicSequenceLoadFlags) -> OSStatus {
    guard compatSequence(inSequence) != nil else { return kAudio_ParamError }
    guard let data = FileManager.default.contents(atPath: inFileRef.path) else {
        compatLog("MusicSequenceFileLoad: cannot read \(inFileRef.path)")
        return kAudio_FileNotFoundError
    }
    return loadSMF(inSequence, [UInt8](data), inFileTypeHint, inFlags, what: inFileRef.path)
}

/// Reads Standard MIDI File bytes into the sequence (Apple's `MusicSequenceFileLoadData`).
@discardableResult
public func MusicSequenceFileLoadData(_ inSequence: MusicSequence, _ inData: CFData, _ inFileTypeHint: MusicSequenceFileTypeID,
                                      _ inFlags: MusicSequenceLoadFlags) -> OSStatus {
    guard compatSequence(inSequence) != nil else { return kAudio_ParamError }
    return loadSMF(inSequence, [UInt8](inData as Data), inFileTypeHint, inFlags, what: "data")
}

func loadSMF(_ handle: MusicSequence, _ bytes: [UInt8], _ hint: MusicSequenceFileTypeID, _ flags: MusicSequenceLoadFlags, what: String) -> OSStatus {
    guard let s = compatSequence(handle) else { return kAudio_ParamError }
    guard hint != .iMelodyType else {
        compatLog("MusicSequenceFileLoad: \(what): iMelody files are not read here")
        return kAudioFileUnsupportedFileTypeError
    }
    let file: StandardMIDIFile
    do throws(AudioError) { file = try StandardMIDIFile(bytes: bytes) } catch {
        compatLog("MusicSequenceFileLoad: \(what): \(error.message)")
        return error.code == .unsupportedFormat ? kAudioFileUnsupportedFileTypeError : kAudioFileInvalidFileError
    }
    s.importFile(file, channelsToTracks: flags.contains(.smf_ChannelsToTracks))
    return noErr
}

extension CompatMusicSequence {
    /// Adds the file's tracks: tempo and time-signature meta events (from every track in a type
    /// 1 file's first track, or wherever they are) go to the tempo track, tempo metas as
    /// `ExtendedTempoEvent`s as Apple does; note on/off pairs become `MIDINoteMessage`s.
    func importFile(_ file: StandardMIDIFile, channelsToTracks: Bool) {
        let tpq = Double(file.ticksPerQuarter)
        tempoTrack.timeResolution = Int16(clamping: file.ticksPerQuarter)
        func beats(_ tick: Int) -> Double { Double(tick) / tpq }
        var channelTracks: [UInt8: CompatMusicTrack] = [:]
        var metaTrack: CompatMusicTrack?
        for (index, events) in file.tracks.enumerated() {
            // A type 1 file's first track is the conductor: its meta events go to the tempo track
            // (as Apple loads it), and a track is made for it only if it holds MIDI too.
            let conductor = file.format == 1 && index == 0 && file.tracks.count > 1
            let holdsMIDI = events.contains { if case .meta = $0.message { return false } else { return true } }
            let own: CompatMusicTrack? = channelsToTracks || (conductor && !holdsMIDI) ? nil : newTrack()
            if let own, index < file.trackLengths.count { own.explicitLength = beats(file.trackLengths[index]) }
            // Open notes: (channel, note) -> stack of (start tick, velocity).
            var open: [UInt16: [(Int, UInt8)]] = [:]
            func target(channel: UInt8?) -> CompatMusicTrack {
                if let own { return own }
                if let c = channel {
                    if let t = channelTracks[c] { return t }
                    let t = CompatMusicTrack()
                    t.sequence = self
                    channelTracks[c] = t
                    return t
                }
                if let m = metaTrack { return m }
                let m = CompatMusicTrack()
                m.sequence = self
                metaTrack = m
                return m
            }
            for e in events {
                switch e.message {
                case .meta(let type, let data):
                    if type == 0x51, data.count == 3 {
                        let micros = Int(data[0]) << 16 | Int(data[1]) << 8 | Int(data[2])
                        if micros > 0 {
                            tempoTrack.insert(CompatMusicEvent(time: beats(e.tick), type: kMusicEventType_ExtendedTempo,
                                                               value: ExtendedTempoEvent(bpm: 60_000_000 / Double(micros))))
                        }
                    } else if type == 0x58 || type == 0x59 || type == 0x54 || conductor {
                        tempoTrack.insert(metaEvent(time: beats(e.tick), type: type, data: data))
                    } else {
                        target(channel: nil).insert(metaEvent(time: beats(e.tick), type: type, data: data))
                    }
                case .sysex(let data):
                    var raw = MIDIRawData(length: UInt32(data.count), data: 0)
                    target(channel: nil).insert(CompatMusicEvent(time: beats(e.tick), type: kMusicEventType_MIDIRawData, header: &raw,
                                                                 headerSize: rawHeaderSize, payload: data))
                case .channel(let status, let d1, let d2):
                    let ch = status & 0x0F
                    let kind = status & 0xF0
                    let key = UInt16(ch) << 8 | UInt16(d1)
                    if kind == 0x90, d2 > 0 {
                        open[key, default: []].append((e.tick, d2))
                    } else if kind == 0x80 || (kind == 0x90 && d2 == 0) {
                        guard var stack = open[key], !stack.isEmpty else { continue }
                        let (start, velocity) = stack.removeFirst()
                        open[key] = stack
                        let note = MIDINoteMessage(channel: ch, note: d1, velocity: velocity, releaseVelocity: kind == 0x80 ? d2 : 0,
                                                   duration: Float(beats(e.tick - start)))
                        target(channel: ch).insert(CompatMusicEvent(time: beats(start), type: kMusicEventType_MIDINoteMessage, value: note))
                    } else {
                        let m = MIDIChannelMessage(status: status, data1: d1, data2: d2, reserved: 0)
                        target(channel: ch).insert(CompatMusicEvent(time: beats(e.tick), type: kMusicEventType_MIDIChannelMessage, value: m))
                    }
                }
            }
            // Notes never released end with the track.
            let end = index < file.trackLengths.count ? file.trackLengths[index] : (events.last?.tick ?? 0)
            for (key, stack) in open {
                for (start, velocity) in stack {
                    let note = MIDINoteMessage(channel: UInt8(key >> 8), note: UInt8(key & 0xFF), velocity: velocity, releaseVelocity: 0,
                                               duration: Float(beats(max(start, end) - start)))
                    target(channel: UInt8(key >> 8)).insert(CompatMusicEvent(time: beats(start), type: kMusicEventType_MIDINoteMessage, value: note))
                }
            }
        }
        if channelsToTracks {
            for c in channelTracks.keys.sorted() {
                let t = channelTracks[c]!
                t.handle = CompatHandles.make(t)
                tracks.append(t)
            }
            if let m = metaTrack {
                m.handle = CompatHandles.make(m)
                tracks.append(m)
            }
        }
    }

    func metaEvent(time: Double, type: UInt8, data: [UInt8]) -> CompatMusicEvent {
        var m = MIDIMetaEvent(metaEventType: type, unused1: 0, unused2: 0, unused3: 0, dataLength: UInt32(data.count), data: 0)
        return CompatMusicEvent(time: time, type: kMusicEventType_Meta, header: &m, headerSize: metaHeaderSize, payload: data)
    }

    /// The sequence as a type 1 Standard MIDI File at `resolution` ticks per quarter note: the
    /// tempo track first (tempo events as tempo metas), then one track per track.
    func exportFile(resolution: Int) -> StandardMIDIFile {
        let tpq = Double(resolution)
        func tick(_ beats: Double) -> Int { Int((max(0, beats) * tpq).rounded()) }
        func events(of track: CompatMusicTrack) -> [StandardMIDIFile.Event] {
            var out: [StandardMIDIFile.Event] = []
            for e in track.events {
                let t = tick(e.time + track.offsetTime)
                switch e.type {
                case kMusicEventType_MIDINoteMessage:
                    let n = e.load(MIDINoteMessage.self)
                    out.append(.init(tick: t, message: .channel(status: 0x90 | (n.channel & 0x0F), data1: n.note & 0x7F, data2: max(1, n.velocity & 0x7F))))
                    out.append(.init(tick: tick(e.time + track.offsetTime + Double(max(0, n.duration))),
                                     message: .channel(status: 0x80 | (n.channel & 0x0F), data1: n.note & 0x7F, data2: n.releaseVelocity & 0x7F)))
                case kMusicEventType_MIDIChannelMessage:
                    let m = e.load(MIDIChannelMessage.self)
                    if m.status >= 0x80, m.status < 0xF0 { out.append(.init(tick: t, message: .channel(status: m.status, data1: m.data1, data2: m.data2))) }
                case kMusicEventType_MIDIRawData:
                    let r = e.load(MIDIRawData.self)
                    out.append(.init(tick: t, message: .sysex(e.payload(headerSize: rawHeaderSize, length: Int(r.length)))))
                case kMusicEventType_Meta:
                    let m = e.load(MIDIMetaEvent.self)
                    out.append(.init(tick: t, message: .meta(type: m.metaEventType, data: e.payload(headerSize: metaHeaderSize, length: Int(m.dataLength)))))
                case kMusicEventType_ExtendedTempo:
                    let bpm = e.load(ExtendedTempoEvent.self).bpm
                    guard bpm > 0, bpm.isFinite else { continue }
                    let micros = min(0xFF_FFFF, max(1, Int((60_000_000 / bpm).rounded())))
                    out.append(.init(tick: t, message: .meta(type: 0x51, data: [UInt8(micros >> 16), UInt8((micros >> 8) & 0xFF), UInt8(micros & 0xFF)])))
                default:
                    continue // user, parameter and extended events have no SMF form
                }
            }
            // Stable by tick, note-offs before note-ons at the same tick.
            return out.enumerated().sorted { a, b in
                if a.element.tick != b.element.tick { return a.element.tick < b.element.tick }
                func off(_ e: StandardMIDIFile.Event) -> Bool { if case .channel(let s, _, _) = e.message { return s & 0xF0 == 0x80 } ; return false }
                if off(a.element) != off(b.element) { return off(a.element) }
                return a.offset < b.offset
            }.map(\.element)
        }
        var tracksOut = [events(of: tempoTrack)]
        var lengths = [tick(tempoTrack.length)]
        for t in tracks {
            tracksOut.append(events(of: t))
            lengths.append(tick(t.length + t.offsetTime))
        }
        return StandardMIDIFile(format: 1, division: .ticksPerQuarter(resolution), tracks: tracksOut, trackLengths: lengths)
    }
}

/// Writes the sequence as a Standard MIDI File (Apple's `MusicSequenceFileCreate`): type 1,
/// `inResolution` ticks per quarter note (0: the tempo track's time resolution, 480 by default).
/// An existing file is replaced only with `.eraseFile`.
@discardableResult
public func MusicSequenceFileCreate(_ inSequence: MusicSequence, _ inFileRef: CFURL, _ inFileType: MusicSequenceFileTypeID,
                                    _ inFlags: MusicSequenceFileFlags, _ inResolution: Int16) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    guard inFileType == .midiType else { return kAudioFileUnsupportedFileTypeError }
    guard inResolution >= 0 else { return kAudio_ParamError }
    let path = inFileRef.path
    if FileManager.default.fileExists(atPath: path), !inFlags.contains(.eraseFile) {
        compatLog("MusicSequenceFileCreate: \(path) exists (pass .eraseFile to replace it)")
        return kAudio_FilePermissionError
    }
    let resolution = inResolution > 0 ? Int(inResolution) : Int(max(1, s.tempoTrack.timeResolution))
    let bytes = s.exportFile(resolution: resolution).bytes()
    guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
        compatLog("MusicSequenceFileCreate: cannot write \(path)")
        return kAudio_FilePermissionError
    }
    return noErr
}

/// The sequence as Standard MIDI File bytes (Apple's `MusicSequenceFileCreateData`), +1 for the
/// caller (`takeRetainedValue()`).
@discardableResult
public func MusicSequenceFileCreateData(_ inSequence: MusicSequence, _ inFileType: MusicSequenceFileTypeID, _ inFlags: MusicSequenceFileFlags,
                                        _ inResolution: Int16, _ outData: UnsafeMutablePointer<Unmanaged<CFData>?>) -> OSStatus {
    guard let s = compatSequence(inSequence) else { return kAudio_ParamError }
    guard inFileType == .midiType else { return kAudioFileUnsupportedFileTypeError }
    guard inResolution >= 0 else { return kAudio_ParamError }
    let resolution = inResolution > 0 ? Int(inResolution) : Int(max(1, s.tempoTrack.timeResolution))
    let bytes = s.exportFile(resolution: resolution).bytes()
    outData.pointee = Unmanaged.passRetained(NSData(bytes: bytes, length: bytes.count))
    return noErr
}

// MARK: - Tracks

/// The sequence a track belongs to (Apple's `MusicTrackGetSequence`).
@discardableResult
public func MusicTrackGetSequence(_ inTrack: MusicTrack, _ outSequence: UnsafeMutablePointer<MusicSequence?>) -> OSStatus {
    guard let t = compatTrack(inTrack) else { return kAudio_ParamError }
    guard let s = t.sequence else { return kAudioToolboxErr_TrackNotFound }
    outSequence.pointee = s.handle
    return noErr
}

/// Sends the track's events to a node of the sequence's graph (Apple's `MusicTrackSetDestNode`).
@discardableResult
public func MusicTrackSetDestNode(_ inTrack: MusicTrack, _ inNode: AUNode) -> OSStatus {
    guard let t = compatTrack(inTrack) else { return kAudio_ParamError }
    guard let s = t.sequence, let g = s.graph, let cg = compatGraph(g) else { return kAudioToolboxErr_IllegalTrackDestination }
    guard cg.unit(inNode) != nil else { return kAudioToolboxErr_IllegalTrackDestination }
    t.destinationNode = inNode
    s.player?.sequenceChanged()
    return noErr
}

/// The node the track plays on (Apple's `MusicTrackGetDestNode`): its own, or the graph's first
/// music device; `kAudioToolboxError_NoTrackDestination` when there is neither.
@discardableResult
public func MusicTrackGetDestNode(_ inTrack: MusicTrack, _ outNode: UnsafeMutablePointer<AUNode>) -> OSStatus {
    guard let t = compatTrack(inTrack) else { return kAudio_ParamError }
    if let n = t.destinationNode {
        outNode.pointee = n
        return noErr
    }
    guard let s = t.sequence, let n = s.defaultMusicDeviceNode else { return kAudioToolboxError_NoTrackDestination }
    outNode.pointee = n
    return noErr
}

extension CompatMusicSequence {
    /// The graph's first music device node.
    var defaultMusicDeviceNode: AUNode? {
        guard let g = graph, let cg = compatGraph(g) else { return nil }
        return cg.units.first { $0.unit.component.description.componentType == kAudioUnitType_MusicDevice }?.id
    }
}

/// Sets a track property (Apple's `MusicTrackSetProperty`).
@discardableResult
public func MusicTrackSetProperty(_ inTrack: MusicTrack, _ inPropertyID: UInt32, _ inData: UnsafeMutableRawPointer, _ inLength: UInt32) -> OSStatus {
    guard let t = compatTrack(inTrack) else { return kAudio_ParamError }
    func need(_ n: Int) -> Bool { Int(inLength) >= n }
    switch inPropertyID {
    case kSequenceTrackProperty_LoopInfo:
        guard need(MemoryLayout<MusicTrackLoopInfo>.size) else { return kAudio_ParamError }
        let info = inData.loadUnaligned(as: MusicTrackLoopInfo.self)
        guard info.loopDuration.isFinite, info.loopDuration >= 0, info.numberOfLoops >= 0 else { return kAudio_ParamError }
        t.loopInfo = info
    case kSequenceTrackProperty_OffsetTime:
        guard need(8) else { return kAudio_ParamError }
        let v = inData.loadUnaligned(as: MusicTimeStamp.self)
        guard v.isFinite else { return kAudio_ParamError }
        t.offsetTime = v
    case kSequenceTrackProperty_MuteStatus:
        guard need(1) else { return kAudio_ParamError }
        t.muted = inData.load(as: UInt8.self) != 0
    case kSequenceTrackProperty_SoloStatus:
        guard need(1) else { return kAudio_ParamError }
        t.soloed = inData.load(as: UInt8.self) != 0
    case kSequenceTrackProperty_AutomatedParameters:
        guard need(4) else { return kAudio_ParamError }
        t.automatedParameters = inData.loadUnaligned(as: UInt32.self)
    case kSequenceTrackProperty_TrackLength:
        guard need(8) else { return kAudio_ParamError }
        let v = inData.loadUnaligned(as: MusicTimeStamp.self)
        guard v.isFinite, v >= 0 else { return kAudio_ParamError }
        t.explicitLength = v
    case kSequenceTrackProperty_TimeResolution:
        // Read-only on Apple (set by loading a file).
        return kAudioUnitErr_PropertyNotWritable
    default:
        return kAudioUnitErr_InvalidProperty
    }
    t.sequence?.player?.sequenceChanged()
    return noErr
}

/// Reads a track property (Apple's `MusicTrackGetProperty`); with a null `outData`, only its size.
@discardableResult
public func MusicTrackGetProperty(_ inTrack: MusicTrack, _ inPropertyID: UInt32, _ outData: UnsafeMutableRawPointer?,
                                  _ ioLength: UnsafeMutablePointer<UInt32>) -> OSStatus {
    guard let t = compatTrack(inTrack) else { return kAudio_ParamError }
    func put<T>(_ v: T) -> OSStatus {
        let size = MemoryLayout<T>.size
        guard let outData else {
            ioLength.pointee = UInt32(size)
            return noErr
        }
        guard Int(ioLength.pointee) >= size else { return kAudio_ParamError }
        outData.storeBytes(of: v, as: T.self)
        ioLength.pointee = UInt32(size)
        return noErr
    }
    switch inPropertyID {
    case kSequenceTrackProperty_LoopInfo: return put(t.loopInfo)
    case kSequenceTrackProperty_OffsetTime: return put(t.offsetTime)
    case kSequenceTrackProperty_MuteStatus: return put(UInt8(t.muted ? 1 : 0))
    case kSequenceTrackProperty_SoloStatus: return put(UInt8(t.soloed ? 1 : 0))
    case kSequenceTrackProperty_AutomatedParameters: return put(t.automatedParameters)
    case kSequenceTrackProperty_TrackLength: return put(t.length)
    case kSequenceTrackProperty_TimeResolution:
        guard t.sequence?.tempoTrack === t else { return kAudioUnitErr_InvalidProperty }
        return put(t.timeResolution)
    default: return kAudioUnitErr_InvalidProperty
    }
}

/// Moves the events in `[inStartTime, inEndTime)` by `inMoveTime` beats (Apple's `MusicTrackMoveEvents`).
@discardableResult
public func MusicTrackMoveEvents(_ inTrack: MusicTrack, _ inStartTime: MusicTimeStamp, _ inEndTime: MusicTimeStamp, _ inMoveTime: MusicTimeStamp) -> OSStatus {
    guard let t = compatTrack(inTrack), inStartTime.isFinite, inEndTime.isFinite, inMoveTime.isFinite else { return kAudio_ParamError }
    guard inStartTime <= inEndTime else { return kAudio_ParamError }
    for e in t.events where e.time >= inStartTime && e.time < inEndTime { e.time = max(0, e.time + inMoveTime) }
    t.resort()
    t.sequence?.player?.sequenceChanged()
    return noErr
}

/// Removes the events in `[inStartTime, inEndTime)` (Apple's `MusicTrackClear`).
@discardableResult
public func MusicTrackClear(_ inTrack: MusicTrack, _ inStartTime: MusicTimeStamp, _ inEndTime: MusicTimeStamp) -> OSStatus {
    guard let t = compatTrack(inTrack), inStartTime.isFinite, inEndTime.isFinite, inStartTime <= inEndTime else { return kAudio_ParamError }
    t.events.removeAll { $0.time >= inStartTime && $0.time < inEndTime }
    t.sequence?.player?.sequenceChanged()
    return noErr
}

/// Removes the events in `[inStartTime, inEndTime)` and moves later ones back by the range's
/// length (Apple's `MusicTrackCut`).
@discardableResult
public func MusicTrackCut(_ inTrack: MusicTrack, _ inStartTime: MusicTimeStamp, _ inEndTime: MusicTimeStamp) -> OSStatus {
    guard let t = compatTrack(inTrack), inStartTime.isFinite, inEndTime.isFinite, inStartTime <= inEndTime else { return kAudio_ParamError }
    t.events.removeAll { $0.time >= inStartTime && $0.time < inEndTime }
    for e in t.events where e.time >= inEndTime { e.time -= inEndTime - inStartTime }
    t.sequence?.player?.sequenceChanged()
    return noErr
}

/// Copies the source's events in `[inSourceStartTime, inSourceEndTime)` into the destination at
/// `inDestInsertTime`, moving the destination's later events on by the range's length (Apple's
/// `MusicTrackCopyInsert`).
@discardableResult
public func MusicTrackCopyInsert(_ inSourceTrack: MusicTrack, _ inSourceStartTime: MusicTimeStamp, _ inSourceEndTime: MusicTimeStamp,
                                 _ inDestTrack: MusicTrack, _ inDestInsertTime: MusicTimeStamp) -> OSStatus {
    guard let src = compatTrack(inSourceTrack), let dst = compatTrack(inDestTrack),
          inSourceStartTime.isFinite, inSourceEndTime.isFinite, inDestInsertTime.isFinite, inSourceStartTime <= inSourceEndTime else { return kAudio_ParamError }
    let copies = src.events.filter { $0.time >= inSourceStartTime && $0.time < inSourceEndTime }
        .map { $0.copy(at: $0.time - inSourceStartTime + inDestInsertTime) }
    for e in dst.events where e.time >= inDestInsertTime { e.time += inSourceEndTime - inSourceStartTime }
    dst.resort()
    for c in copies { dst.insert(c) }
    dst.sequence?.player?.sequenceChanged()
    return noErr
}

/// Copies the source's events in `[inSourceStartTime, inSourceEndTime)` into the destination at
/// `inDestInsertTime`, among its events (Apple's `MusicTrackMerge`).
@discardableResult
public func MusicTrackMerge(_ inSourceTrack: MusicTrack, _ inSourceStartTime: MusicTimeStamp, _ inSourceEndTime: MusicTimeStamp,
                            _ inDestTrack: MusicTrack, _ inDestInsertTime: MusicTimeStamp) -> OSStatus {
    guard let src = compatTrack(inSourceTrack), let dst = compatTrack(inDestTrack),
          inSourceStartTime.isFinite, inSourceEndTime.isFinite, inDestInsertTime.isFinite, inSourceStartTime <= inSourceEndTime else { return kAudio_ParamError }
    let copies = src.events.filter { $0.time >= inSourceStartTime && $0.time < inSourceEndTime }
        .map { $0.copy(at: $0.time - inSourceStartTime + inDestInsertTime) }
    for c in copies { dst.insert(c) }
    dst.sequence?.player?.sequenceChanged()
    return noErr
}

// MARK: Adding events

func addEvent(_ inTrack: MusicTrack, _ time: MusicTimeStamp, _ make: () -> CompatMusicEvent?) -> OSStatus {
    guard let t = compatTrack(inTrack) else { return kAudio_ParamError }
    guard time.isFinite, time >= 0 else { return kAudio_ParamError }
    guard let e = make() else { return kAudio_ParamError }
    t.insert(e)
    t.sequence?.player?.sequenceChanged()
    return noErr
}

/// Adds an event of `type` whose `length` bytes follow its header (`headerSize` bytes) in memory.
func addVariableEvent<Header>(_ track: MusicTrack, _ time: MusicTimeStamp, _ type: MusicEventType, _ event: UnsafePointer<Header>,
                              length: Int, headerSize: Int) -> OSStatus {
    guard length <= 1 << 20 else { return kAudio_ParamError }
    let bytes = UnsafeRawPointer(event)
    let payload = Array(UnsafeRawBufferPointer(start: bytes + headerSize, count: length))
    return addEvent(track, time) { CompatMusicEvent(time: time, type: type, header: bytes, headerSize: headerSize, payload: payload) }
}

/// Adds a note with its duration (Apple's `MusicTrackNewMIDINoteEvent`).
@discardableResult
public func MusicTrackNewMIDINoteEvent(_ inTrack: MusicTrack, _ inTimeStamp: MusicTimeStamp, _ inMessage: UnsafePointer<MIDINoteMessage>) -> OSStatus {
    let m = inMessage.pointee
    guard m.channel < 16, m.note < 128, m.velocity < 128, m.releaseVelocity < 128, m.duration.isFinite, m.duration >= 0 else { return kAudio_ParamError }
    return addEvent(inTrack, inTimeStamp) { CompatMusicEvent(time: inTimeStamp, type: kMusicEventType_MIDINoteMessage, value: m) }
}

/// Adds a channel message (Apple's `MusicTrackNewMIDIChannelEvent`).
@discardableResult
public func MusicTrackNewMIDIChannelEvent(_ inTrack: MusicTrack, _ inTimeStamp: MusicTimeStamp, _ inMessage: UnsafePointer<MIDIChannelMessage>) -> OSStatus {
    let m = inMessage.pointee
    guard m.status >= 0x80, m.status < 0xF0 else { return kAudio_ParamError }
    return addEvent(inTrack, inTimeStamp) { CompatMusicEvent(time: inTimeStamp, type: kMusicEventType_MIDIChannelMessage, value: m) }
}

/// Adds raw MIDI bytes, System Exclusive (Apple's `MusicTrackNewMIDIRawDataEvent`).
@discardableResult
public func MusicTrackNewMIDIRawDataEvent(_ inTrack: MusicTrack, _ inTimeStamp: MusicTimeStamp, _ inRawData: UnsafePointer<MIDIRawData>) -> OSStatus {
    addVariableEvent(inTrack, inTimeStamp, kMusicEventType_MIDIRawData, inRawData, length: Int(inRawData.pointee.length), headerSize: rawHeaderSize)
}

/// Adds a tempo change (Apple's `MusicTrackNewExtendedTempoEvent`); on the tempo track it sets
/// the beat-to-second map.
@discardableResult
public func MusicTrackNewExtendedTempoEvent(_ inTrack: MusicTrack, _ inTimeStamp: MusicTimeStamp, _ inBPM: Float64) -> OSStatus {
    guard inBPM.isFinite, inBPM > 0 else { return kAudio_ParamError }
    return addEvent(inTrack, inTimeStamp) { CompatMusicEvent(time: inTimeStamp, type: kMusicEventType_ExtendedTempo, value: ExtendedTempoEvent(bpm: inBPM)) }
}

/// Adds a meta event (Apple's `MusicTrackNewMetaEvent`).
@discardableResult
public func MusicTrackNewMetaEvent(_ inTrack: MusicTrack, _ inTimeStamp: MusicTimeStamp, _ inMetaEvent: UnsafePointer<MIDIMetaEvent>) -> OSStatus {
    addVariableEvent(inTrack, inTimeStamp, kMusicEventType_Meta, inMetaEvent, length: Int(inMetaEvent.pointee.dataLength), headerSize: metaHeaderSize)
}

/// Adds a user event (Apple's `MusicTrackNewUserEvent`): the sequence's user callback gets it
/// when it plays.
@discardableResult
public func MusicTrackNewUserEvent(_ inTrack: MusicTrack, _ inTimeStamp: MusicTimeStamp, _ inUserData: UnsafePointer<MusicEventUserData>) -> OSStatus {
    addVariableEvent(inTrack, inTimeStamp, kMusicEventType_User, inUserData, length: Int(inUserData.pointee.length), headerSize: rawHeaderSize)
}

/// Adds an audio unit parameter change (Apple's `MusicTrackNewParameterEvent`): played, it sets
/// the parameter on the track's destination unit.
@discardableResult
public func MusicTrackNewParameterEvent(_ inTrack: MusicTrack, _ inTimeStamp: MusicTimeStamp, _ inInfo: UnsafePointer<ParameterEvent>) -> OSStatus {
    let p = inInfo.pointee
    guard p.value.isFinite else { return kAudio_ParamError }
    return addEvent(inTrack, inTimeStamp) { CompatMusicEvent(time: inTimeStamp, type: kMusicEventType_Parameter, value: p) }
}

// MARK: - Iterators

/// Creates an iterator at the track's first event (Apple's `NewMusicEventIterator`).
@discardableResult
public func NewMusicEventIterator(_ inTrack: MusicTrack, _ outIterator: UnsafeMutablePointer<MusicEventIterator?>) -> OSStatus {
    guard let t = compatTrack(inTrack) else { return kAudio_ParamError }
    outIterator.pointee = CompatHandles.make(CompatMusicEventIterator(track: t))
    return noErr
}

/// Disposes of an iterator (Apple's `DisposeMusicEventIterator`).
@discardableResult
public func DisposeMusicEventIterator(_ inIterator: MusicEventIterator) -> OSStatus {
    CompatHandles.remove(inIterator, as: CompatMusicEventIterator.self) == nil ? kAudio_ParamError : noErr
}

func compatIterator(_ i: MusicEventIterator) -> CompatMusicEventIterator? { CompatHandles.object(i, as: CompatMusicEventIterator.self) }

/// Moves to the first event at or after a beat; past the last event when there is none
/// (Apple's `MusicEventIteratorSeek`).
@discardableResult
public func MusicEventIteratorSeek(_ inIterator: MusicEventIterator, _ inTimeStamp: MusicTimeStamp) -> OSStatus {
    guard let it = compatIterator(inIterator), inTimeStamp.isFinite else { return kAudio_ParamError }
    it.index = it.track.events.firstIndex { $0.time >= inTimeStamp } ?? it.track.events.count
    return noErr
}

/// Moves to the next event (Apple's `MusicEventIteratorNextEvent`); past the last one is
/// allowed once, then `kAudioToolboxErr_EndOfTrack`.
@discardableResult
public func MusicEventIteratorNextEvent(_ inIterator: MusicEventIterator) -> OSStatus {
    guard let it = compatIterator(inIterator) else { return kAudio_ParamError }
    guard it.index < it.track.events.count else { return kAudioToolboxErr_EndOfTrack }
    it.index += 1
    return noErr
}

/// Moves to the previous event (Apple's `MusicEventIteratorPreviousEvent`); `kAudioToolboxErr_StartOfTrack` at the first.
@discardableResult
public func MusicEventIteratorPreviousEvent(_ inIterator: MusicEventIterator) -> OSStatus {
    guard let it = compatIterator(inIterator) else { return kAudio_ParamError }
    guard it.index > 0 else { return kAudioToolboxErr_StartOfTrack }
    it.index = min(it.index, it.track.events.count) - 1
    return noErr
}

/// The current event's beat, type and data (Apple's `MusicEventIteratorGetEventInfo`); the
/// data is valid until the event is deleted. `kAudioToolboxErr_EndOfTrack` past the last event.
@discardableResult
public func MusicEventIteratorGetEventInfo(_ inIterator: MusicEventIterator, _ outTimeStamp: UnsafeMutablePointer<MusicTimeStamp>,
                                           _ outEventType: UnsafeMutablePointer<MusicEventType>, _ outEventData: UnsafeMutablePointer<UnsafeRawPointer?>,
                                           _ outEventDataSize: UnsafeMutablePointer<UInt32>) -> OSStatus {
    guard let it = compatIterator(inIterator) else { return kAudio_ParamError }
    guard it.index < it.track.events.count else { return kAudioToolboxErr_EndOfTrack }
    let e = it.track.events[it.index]
    outTimeStamp.pointee = e.time
    outEventType.pointee = e.type
    outEventData.pointee = UnsafeRawPointer(e.data)
    outEventDataSize.pointee = UInt32(e.size)
    return noErr
}

/// Replaces the current event's type and data, its beat kept (Apple's `MusicEventIteratorSetEventInfo`).
@discardableResult
public func MusicEventIteratorSetEventInfo(_ inIterator: MusicEventIterator, _ inEventType: MusicEventType, _ inEventData: UnsafeRawPointer) -> OSStatus {
    guard let it = compatIterator(inIterator) else { return kAudio_ParamError }
    guard it.index < it.track.events.count else { return kAudioToolboxErr_EndOfTrack }
    let time = it.track.events[it.index].time
    let e: CompatMusicEvent
    switch inEventType {
    case kMusicEventType_MIDINoteMessage: e = CompatMusicEvent(time: time, type: inEventType, value: inEventData.loadUnaligned(as: MIDINoteMessage.self))
    case kMusicEventType_MIDIChannelMessage: e = CompatMusicEvent(time: time, type: inEventType, value: inEventData.loadUnaligned(as: MIDIChannelMessage.self))
    case kMusicEventType_ExtendedTempo: e = CompatMusicEvent(time: time, type: inEventType, value: inEventData.loadUnaligned(as: ExtendedTempoEvent.self))
    case kMusicEventType_Parameter: e = CompatMusicEvent(time: time, type: inEventType, value: inEventData.loadUnaligned(as: ParameterEvent.self))
    case kMusicEventType_Meta:
        let n = Int(inEventData.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        guard n <= 1 << 20 else { return kAudio_ParamError }
        e = CompatMusicEvent(time: time, type: inEventType, bytes: inEventData, size: metaHeaderSize + n)
    case kMusicEventType_MIDIRawData, kMusicEventType_User:
        let n = Int(inEventData.loadUnaligned(as: UInt32.self))
        guard n <= 1 << 20 else { return kAudio_ParamError }
        e = CompatMusicEvent(time: time, type: inEventType, bytes: inEventData, size: rawHeaderSize + n)
    default:
        return kAudioToolboxErr_InvalidEventType
    }
    it.track.events[it.index] = e
    it.track.sequence?.player?.sequenceChanged()
    return noErr
}

/// Moves the current event to another beat (Apple's `MusicEventIteratorSetEventTime`); the
/// iterator stays on it.
@discardableResult
public func MusicEventIteratorSetEventTime(_ inIterator: MusicEventIterator, _ inTimeStamp: MusicTimeStamp) -> OSStatus {
    guard let it = compatIterator(inIterator), inTimeStamp.isFinite, inTimeStamp >= 0 else { return kAudio_ParamError }
    guard it.index < it.track.events.count else { return kAudioToolboxErr_EndOfTrack }
    let e = it.track.events.remove(at: it.index)
    e.time = inTimeStamp
    it.track.insert(e)
    it.index = it.track.events.firstIndex { $0 === e } ?? 0
    it.track.sequence?.player?.sequenceChanged()
    return noErr
}

/// Deletes the current event; the iterator moves to the next (Apple's `MusicEventIteratorDeleteEvent`).
@discardableResult
public func MusicEventIteratorDeleteEvent(_ inIterator: MusicEventIterator) -> OSStatus {
    guard let it = compatIterator(inIterator) else { return kAudio_ParamError }
    guard it.index < it.track.events.count else { return kAudioToolboxErr_EndOfTrack }
    it.track.events.remove(at: it.index)
    it.track.sequence?.player?.sequenceChanged()
    return noErr
}

/// Whether there is an event before the current one (Apple's `MusicEventIteratorHasPreviousEvent`).
@discardableResult
public func MusicEventIteratorHasPreviousEvent(_ inIterator: MusicEventIterator, _ outHasPrevEvent: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    guard let it = compatIterator(inIterator) else { return kAudio_ParamError }
    outHasPrevEvent.pointee = DarwinBoolean(it.index > 0 && !it.track.events.isEmpty)
    return noErr
}

/// Whether there is an event after the current one (Apple's `MusicEventIteratorHasNextEvent`).
@discardableResult
public func MusicEventIteratorHasNextEvent(_ inIterator: MusicEventIterator, _ outHasNextEvent: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    guard let it = compatIterator(inIterator) else { return kAudio_ParamError }
    outHasNextEvent.pointee = DarwinBoolean(it.index + 1 < it.track.events.count)
    return noErr
}

/// Whether the iterator is on an event (Apple's `MusicEventIteratorHasCurrentEvent`).
@discardableResult
public func MusicEventIteratorHasCurrentEvent(_ inIterator: MusicEventIterator, _ outHasCurEvent: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    guard let it = compatIterator(inIterator) else { return kAudio_ParamError }
    outHasCurEvent.pointee = DarwinBoolean(it.index < it.track.events.count)
    return noErr
}

/// Says on standard error what a call refused and why (the status it returns is Apple's code,
/// which cannot carry a path or an offset), as Apple's frameworks say it in the system log.
func compatLog(_ message: String) {
    FileHandle.standardError.write(Data(("OpenAudioToolbox: " + message + "\n").utf8))
}
