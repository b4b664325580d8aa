// AVAudioSequencer and AVMusicTrack: a MusicSequence and its MusicPlayer (OpenAudioToolbox's
// MusicPlayer.h) over an AVAudioEngine, as AVFAudio's are. Tracks play on the engine's music
// instruments (the first one attached, or a track's destinationAudioUnit), each event on the
// frame its beat maps to.

import OpenAudioToolbox
internal import OATUnits
import Foundation

/// A time in beats (Apple's `AVMusicTimeStamp`).
public typealias AVMusicTimeStamp = Double

/// A range of beats (Apple's `AVBeatRange`, `_AVBeatRange`).
public typealias AVBeatRange = _AVBeatRange

/// A range of beats: start and length (Apple's `_AVBeatRange`).
public struct _AVBeatRange: Sendable, Equatable {
    /// The first beat.
    public var start: AVMusicTimeStamp
    /// Beats in the range.
    public var length: AVMusicTimeStamp
    /// An empty range at 0.
    public init() {
        start = 0
        length = 0
    }
    /// A range.
    public init(start: AVMusicTimeStamp, length: AVMusicTimeStamp) {
        self.start = start
        self.length = length
    }
}

/// Makes a beat range (Apple's `AVMakeBeatRange`).
public func AVMakeBeatRange(_ startBeat: AVMusicTimeStamp, _ lengthInBeats: AVMusicTimeStamp) -> AVBeatRange {
    AVBeatRange(start: startBeat, length: lengthInBeats)
}

/// How files load into a sequencer (Apple's `AVMusicSequenceLoadOptions`).
public struct AVMusicSequenceLoadOptions: OptionSet, Sendable {
    /// The options' bits.
    public var rawValue: UInt
    /// Creates options.
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// One track per MIDI channel found, then one for System Exclusive and meta events.
    public static var smf_ChannelsToTracks: AVMusicSequenceLoadOptions { AVMusicSequenceLoadOptions(rawValue: 1) }
}

/// Keep the file's tracks as they are (Apple's `AVMusicSequenceLoadSMF_PreserveTracks`).
public let AVMusicSequenceLoadSMF_PreserveTracks = AVMusicSequenceLoadOptions(rawValue: 0)

/// Loop counts of a track (Apple's `AVMusicTrackLoopCount`).
public enum AVMusicTrackLoopCount: Int, Sendable {
    /// Loop for ever.
    case forever = -1
}

/// Called as user events play (Apple's `AVAudioSequencerUserCallback`): the track, the event's
/// bytes and its beat. It runs on the sequencer's own thread, never the render thread.
public typealias AVAudioSequencerUserCallback = (AVMusicTrack, Data, AVMusicTimeStamp) -> Void

/// A track of a sequencer (Apple's `AVMusicTrack`).
open class AVMusicTrack: NSObject, @unchecked Sendable {
    let handle: MusicTrack
    weak var sequencer: AVAudioSequencer?
    private var destination: AVAudioUnit?
    private var loopEnabled = false
    private var range = AVBeatRange()
    private var loops = 0

    init(handle: MusicTrack, sequencer: AVAudioSequencer) {
        self.handle = handle
        self.sequencer = sequencer
        super.init()
    }

    private func get<T: BitwiseCopyable>(_ id: UInt32, _ initial: T) -> T {
        var v = initial
        var size = UInt32(MemoryLayout<T>.size)
        _ = MusicTrackGetProperty(handle, id, &v, &size)
        return v
    }

    private func set<T: BitwiseCopyable>(_ id: UInt32, _ value: T) {
        var v = value
        _ = MusicTrackSetProperty(handle, id, &v, UInt32(MemoryLayout<T>.size))
    }

    /// The unit the track plays on (nil: the engine's first music instrument).
    open var destinationAudioUnit: AVAudioUnit? {
        get { destination }
        set { destination = newValue }
    }

    /// The beats that loop (Apple: start 0, the track's length, by default).
    open var loopRange: AVBeatRange {
        get { range.length > 0 ? range : AVBeatRange(start: 0, length: lengthInBeats) }
        set {
            range = newValue
            applyLoop()
        }
    }

    /// Whether the track loops.
    open var isLoopingEnabled: Bool {
        get { loopEnabled }
        set {
            loopEnabled = newValue
            applyLoop()
        }
    }

    /// Times the loop plays (`AVMusicTrackLoopCount.forever.rawValue` for ever).
    open var numberOfLoops: Int {
        get { loops }
        set {
            loops = newValue
            applyLoop()
        }
    }

    private func applyLoop() {
        let r = loopRange
        // The C track loops from its start: the range's start is its offset into the events.
        let count = loops == AVMusicTrackLoopCount.forever.rawValue ? 0 : max(1, loops)
        set(kSequenceTrackProperty_LoopInfo, MusicTrackLoopInfo(loopDuration: loopEnabled ? max(0, r.start + r.length) : 0,
                                                                 numberOfLoops: Int32(clamping: count)))
    }

    /// The beat the track starts at.
    open var offsetTime: AVMusicTimeStamp {
        get { get(kSequenceTrackProperty_OffsetTime, 0.0) }
        set { set(kSequenceTrackProperty_OffsetTime, newValue) }
    }

    /// Whether the track is muted.
    open var isMuted: Bool {
        get { get(kSequenceTrackProperty_MuteStatus, UInt8(0)) != 0 }
        set { set(kSequenceTrackProperty_MuteStatus, UInt8(newValue ? 1 : 0)) }
    }

    /// Whether the track is soloed.
    open var isSoloed: Bool {
        get { get(kSequenceTrackProperty_SoloStatus, UInt8(0)) != 0 }
        set { set(kSequenceTrackProperty_SoloStatus, UInt8(newValue ? 1 : 0)) }
    }

    /// The track's length in beats.
    open var lengthInBeats: AVMusicTimeStamp {
        get { get(kSequenceTrackProperty_TrackLength, 0.0) }
        set { set(kSequenceTrackProperty_TrackLength, newValue) }
    }

    /// The track's length in seconds, through the tempo track.
    open var lengthInSeconds: TimeInterval {
        get { sequencer?.seconds(forBeats: offsetTime + lengthInBeats) ?? lengthInBeats / 2 }
        set { lengthInBeats = max(0, (sequencer?.beats(forSeconds: newValue) ?? newValue * 2) - offsetTime) }
    }

    /// Ticks per quarter note of the file the sequencer loaded (the tempo track's).
    open var timeResolution: Int {
        guard let s = sequencer else { return 480 }
        var tempo: MusicTrack?
        _ = MusicSequenceGetTempoTrack(s.sequence, &tempo)
        var v: Int16 = 480
        var size = UInt32(2)
        if let tempo { _ = MusicTrackGetProperty(tempo, kSequenceTrackProperty_TimeResolution, &v, &size) }
        return Int(v)
    }

    /// Whether the track only automates parameters.
    open var usesAutomatedParameters: Bool {
        get { get(kSequenceTrackProperty_AutomatedParameters, UInt32(0)) != 0 }
        set { set(kSequenceTrackProperty_AutomatedParameters, UInt32(newValue ? 1 : 0)) }
    }
}

/// Plays a collection of MIDI tracks on an engine's instruments (Apple's `AVAudioSequencer`).
open class AVAudioSequencer: NSObject, @unchecked Sendable {
    let sequence: MusicSequence
    let player: MusicPlayer
    private weak var engine: AVAudioEngine?
    private var trackObjects: [AVMusicTrack] = []
    private var tempoObject: AVMusicTrack?
    private var callback: AVAudioSequencerUserCallback?
    private var playRate: Float = 1

    /// A sequencer connected to no engine (its tracks play nowhere).
    public override init() {
        var s: MusicSequence?
        var p: MusicPlayer?
        _ = NewMusicSequence(&s)
        _ = NewMusicPlayer(&p)
        sequence = s!
        player = p!
        super.init()
        _ = MusicPlayerSetSequence(player, sequence)
        musicPlayerSetHost(player, sampleRate: { [weak self] in self?.engineSampleRate }, destination: { [weak self] in self?.destination(for: $0) })
    }

    /// A sequencer that plays on `engine`'s instruments.
    public convenience init(audioEngine engine: AVAudioEngine) {
        self.init()
        self.engine = engine
    }

    deinit {
        _ = DisposeMusicPlayer(player)
        _ = DisposeMusicSequence(sequence)
    }

    private var engineSampleRate: Double? {
        guard let engine else { return nil }
        return engine.graph?.sampleRate ?? engine.outputNode.outputFormat(forBus: 0).sampleRate
    }

    private func destination(for track: MusicTrack) -> MusicDeviceNode? {
        guard let engine else { return nil }
        if let t = trackObjects.first(where: { $0.handle == track }), let unit = t.destinationAudioUnit {
            return unit.unit as? MusicDeviceNode
        }
        return engine.attachedNodesInOrder.lazy.compactMap { $0.unit as? MusicDeviceNode }.first
    }

    private func rebuildTracks() {
        var count: UInt32 = 0
        _ = MusicSequenceGetTrackCount(sequence, &count)
        var out: [AVMusicTrack] = []
        for i in 0..<count {
            var t: MusicTrack?
            _ = MusicSequenceGetIndTrack(sequence, i, &t)
            guard let t else { continue }
            out.append(trackObjects.first { $0.handle == t } ?? AVMusicTrack(handle: t, sequencer: self))
        }
        trackObjects = out
    }

    /// Adds the Standard MIDI File's tracks (Apple's `load(from:options:)`).
    open func load(from fileURL: URL, options: AVMusicSequenceLoadOptions = []) throws {
        try check(MusicSequenceFileLoad(sequence, fileURL as CFURL, .anyType, MusicSequenceLoadFlags(rawValue: UInt32(options.rawValue))),
                  "AVAudioSequencer: cannot load \(fileURL.path)")
        rebuildTracks()
    }

    /// Adds the tracks of Standard MIDI File bytes (Apple's `load(from:options:)`).
    open func load(from data: Data, options: AVMusicSequenceLoadOptions = []) throws {
        try check(MusicSequenceFileLoadData(sequence, data as CFData, .anyType, MusicSequenceLoadFlags(rawValue: UInt32(options.rawValue))),
                  "AVAudioSequencer: the data is not a Standard MIDI File")
        rebuildTracks()
    }

    /// Writes the sequence as a Standard MIDI File at `resolution` ticks per quarter note (0:
    /// the loaded file's) (Apple's `write(to:smpteResolution:replaceExisting:)`).
    open func write(to fileURL: URL, smpteResolution resolution: Int, replaceExisting replace: Bool) throws {
        try check(MusicSequenceFileCreate(sequence, fileURL as CFURL, .midiType, replace ? .eraseFile : [], Int16(clamping: resolution)),
                  "AVAudioSequencer: cannot write \(fileURL.path)")
    }

    /// The sequence as Standard MIDI File bytes (Apple's `data(withSMPTEResolution:error:)`).
    open func data(withSMPTEResolution SMPTEResolution: Int, error outError: NSErrorPointer) -> Data {
        var out: Unmanaged<CFData>?
        let status = MusicSequenceFileCreateData(sequence, .midiType, [], Int16(clamping: SMPTEResolution), &out)
        guard status == noErr, let out else {
            outError?.pointee = avError(status, "AVAudioSequencer: cannot write the sequence")
            return Data()
        }
        return out.takeRetainedValue() as Data
    }

    /// Seconds from beat 0 to `beats` (Apple's `seconds(forBeats:)`).
    open func seconds(forBeats beats: AVMusicTimeStamp) -> TimeInterval {
        var s: Float64 = 0
        _ = MusicSequenceGetSecondsForBeats(sequence, beats, &s)
        return s
    }

    /// The beat at `seconds` (Apple's `beats(forSeconds:)`).
    open func beats(forSeconds seconds: TimeInterval) -> AVMusicTimeStamp {
        var b: MusicTimeStamp = 0
        _ = MusicSequenceGetBeatsForSeconds(sequence, seconds, &b)
        return b
    }

    /// The host time `inBeats` plays at; only while playing (Apple's `hostTime(forBeats:error:)`).
    open func hostTime(forBeats inBeats: AVMusicTimeStamp, error outError: NSErrorPointer) -> UInt64 {
        var h: UInt64 = 0
        let status = MusicPlayerGetHostTimeForBeats(player, inBeats, &h)
        if status != noErr { outError?.pointee = avError(status, "AVAudioSequencer: not playing") }
        return h
    }

    /// The beat that plays at a host time; only while playing (Apple's `beats(forHostTime:error:)`).
    open func beats(forHostTime inHostTime: UInt64, error outError: NSErrorPointer) -> AVMusicTimeStamp {
        var b: MusicTimeStamp = 0
        let status = MusicPlayerGetBeatsForHostTime(player, inHostTime, &b)
        if status != noErr { outError?.pointee = avError(status, "AVAudioSequencer: not playing") }
        return b
    }

    /// The tracks, the tempo track not counted.
    open var tracks: [AVMusicTrack] { trackObjects }

    /// The tempo track.
    open var tempoTrack: AVMusicTrack {
        if let t = tempoObject { return t }
        var h: MusicTrack?
        _ = MusicSequenceGetTempoTrack(sequence, &h)
        let t = AVMusicTrack(handle: h!, sequencer: self)
        tempoObject = t
        return t
    }

    /// The sequence's info dictionary (copyright, title, tempo).
    open var userInfo: [String: Any] {
        (MusicSequenceGetInfoDictionary(sequence) as? [String: Any]) ?? [:]
    }

    /// The playing position in seconds; setting it moves playing there.
    open var currentPositionInSeconds: TimeInterval {
        get { seconds(forBeats: currentPositionInBeats) }
        set { currentPositionInBeats = beats(forSeconds: newValue) }
    }

    /// The playing position in beats; setting it moves playing there.
    open var currentPositionInBeats: TimeInterval {
        get {
            var t: MusicTimeStamp = 0
            _ = MusicPlayerGetTime(player, &t)
            return t
        }
        set { _ = MusicPlayerSetTime(player, max(0, newValue)) }
    }

    /// Whether the sequencer is playing.
    open var isPlaying: Bool {
        var b: DarwinBoolean = false
        _ = MusicPlayerIsPlaying(player, &b)
        return b.boolValue
    }

    /// The play rate (1 as written).
    open var rate: Float {
        get { playRate }
        set {
            guard newValue > 0, newValue.isFinite else { return }
            playRate = newValue
            _ = MusicPlayerSetPlayRateScalar(player, Double(newValue))
        }
    }

    /// Gets ready to play (Apple's `prepareToPlay()`).
    open func prepareToPlay() {}

    /// Starts playing from the current position (Apple's `start()`): the engine must be running
    /// (or in manual rendering mode, started); the first slice it renders after this is the
    /// start's.
    open func start() throws {
        guard let engine else { throw avError(kAudioToolboxError_NoTrackDestination, "AVAudioSequencer: no engine to play on") }
        guard engine.isRunning else { throw avError(kAudioToolboxErr_InvalidPlayerState, "AVAudioSequencer: the engine is not running") }
        try check(MusicPlayerStart(player), "AVAudioSequencer: cannot start")
    }

    /// Stops playing; sounding notes are released (Apple's `stop()`).
    open func stop() { _ = MusicPlayerStop(player) }

    /// Adds an empty track (Apple's `createAndAppendTrack()`).
    open func createAndAppendTrack() -> AVMusicTrack {
        var t: MusicTrack?
        _ = MusicSequenceNewTrack(sequence, &t)
        rebuildTracks()
        return trackObjects.first { $0.handle == t } ?? AVMusicTrack(handle: t!, sequencer: self)
    }

    /// Removes a track (Apple's `removeTrack(_:)`); false when it is not one of ``tracks``.
    open func removeTrack(_ track: AVMusicTrack) -> Bool {
        guard MusicSequenceDisposeTrack(sequence, track.handle) == noErr else { return false }
        rebuildTracks()
        return true
    }

    /// Reverses every track's events in time (Apple's `reverseEvents()`).
    open func reverseEvents() { _ = MusicSequenceReverse(sequence) }

    /// Sets the callback for user events (Apple's `setUserCallback(_:)`); nil removes it.
    open func setUserCallback(_ userCallback: AVAudioSequencerUserCallback?) {
        callback = userCallback
        if userCallback == nil {
            _ = MusicSequenceSetUserCallback(sequence, nil, nil)
        } else {
            _ = MusicSequenceSetUserCallback(sequence, sequencerUserCallback, Unmanaged.passUnretained(self).toOpaque())
        }
    }

    fileprivate func deliverUserEvent(track: MusicTrack, data: Data, beat: MusicTimeStamp) {
        guard let callback, let t = trackObjects.first(where: { $0.handle == track }) else { return }
        callback(t, data, beat)
    }
}

private let sequencerUserCallback: MusicSequenceUserCallback = { client, _, track, beat, data, _, _ in
    guard let client else { return }
    let sequencer = Unmanaged<AVAudioSequencer>.fromOpaque(client).takeUnretainedValue()
    let length = Int(data.pointee.length)
    let bytes = Data(bytes: UnsafeRawPointer(data) + 4, count: length)
    sequencer.deliverUserEvent(track: track, data: bytes, beat: beat)
}
