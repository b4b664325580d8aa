// Audio Toolbox–compatible MusicPlayer.h, part 2: the player. Starting it turns the sequence
// into one fixed schedule per music device (frames from the first slice the graph renders after
// the start, through the tempo map and the play rate), which each device reads on its render
// thread: events land on the frame their beat maps to, in a graph a device paces or one a host
// renders offline with AudioUnitRender. User events, parameter events and System Exclusive go
// through a control thread that follows the devices' rendered frames.

import OATCore
import OATUnits
import Foundation
import Synchronization

/// A scheduled event that is not a channel message: run on the player's control thread.
struct MusicControlEntry: @unchecked Sendable {
    enum Kind {
        case user(track: MusicTrack, bytes: [UInt8])
        case parameter(unit: AudioUnit, ParameterEvent)
        case sysex(MusicDeviceNode, [UInt8])
    }
    var frame: Int64
    var beat: Double
    var kind: Kind
}

/// The player (Apple's `MusicPlayer`).
final class CompatMusicPlayer: @unchecked Sendable {
    var handle: MusicPlayer?
    var sequence: CompatMusicSequence?
    private(set) var playing = false
    var rate = 1.0
    private var stoppedBeat = 0.0
    // While playing:
    private var startBeat = 0.0
    private var startSeconds = 0.0
    private var startHost: UInt64 = 0
    private var clock = MIDIScheduleClock()
    private var sampleRate = 44100.0
    private var devices: [MusicDeviceNode] = []
    private var thread: JoinableThread?
    private var tempo = MusicTempoMap(changes: [])
    private final class Flag: Sendable { let value = Atomic<Bool>(false) }
    private let stopFlag = Flag()
    /// Set by a host that is not an AUGraph (AVAudioSequencer over an AVAudioEngine): where each
    /// track plays and at what rate; the player then leaves graphs alone.
    var hostDestinations: ((CompatMusicTrack) -> MusicDeviceNode?)?
    var hostSampleRate: (() -> Double?)?
    /// True while the control thread is in a user callback (which may stop the player: the
    /// thread is then let go instead of joined from itself).
    private let inCallback = Flag()

    /// Seconds played since the start: the devices' rendered frames (host time when there are none).
    private var elapsedSeconds: Double {
        guard playing else { return 0 }
        if devices.isEmpty { return HostTime.seconds(ticks: HostTime.now() &- startHost) }
        return Double(clock.renderedFrames) / sampleRate
    }

    /// The beat playing now.
    var currentBeat: Double {
        guard playing else { return stoppedBeat }
        return tempo.beats(forSeconds: startSeconds + elapsedSeconds * rate)
    }

    func setTime(_ beat: Double) {
        if playing {
            stopPlaying(silence: true)
            stoppedBeat = beat
            _ = startPlaying()
        } else {
            stoppedBeat = beat
        }
    }

    func setRate(_ r: Double) {
        if playing {
            let beat = currentBeat
            stopPlaying(silence: false, keepSources: true)
            stoppedBeat = beat
            rate = r
            _ = startPlaying()
        } else {
            rate = r
        }
    }

    /// The sequence was edited while playing: the schedule is rebuilt from the current beat.
    func sequenceChanged() {
        guard playing else { return }
        let beat = currentBeat
        stopPlaying(silence: false, keepSources: true)
        stoppedBeat = beat
        _ = startPlaying()
    }

    /// Initialises (and, on a device output, starts) the sequence's graph, builds the schedules
    /// and hands them to the devices.
    func startPlaying() -> OSStatus {
        guard let s = sequence else { return kAudioToolboxErr_NoSequence }
        if playing { return noErr }
        if s.graph == nil, hostDestinations == nil { _ = makeDefaultMusicGraph(s) }
        var cg: CompatGraph?
        if hostDestinations == nil, let g = s.graph, let graph = compatGraph(g) {
            if !graph.opened { _ = AUGraphOpen(g) }
            if !graph.initialized {
                let status = AUGraphInitialize(g)
                guard status == noErr else { return status }
            }
            let generic = graph.units.contains { u in
                if case .output(generic: true) = u.unit.component.kind { return true }
                return false
            }
            if !graph.running, !generic {
                let status = AUGraphStart(g)
                guard status == noErr else { return status }
            }
            cg = graph
            sampleRate = graph.graph?.sampleRate ?? 44100
        }
        if let rate = hostSampleRate?() { sampleRate = rate }
        startBeat = stoppedBeat
        tempo = s.tempoMap
        startSeconds = tempo.seconds(forBeats: startBeat)
        clock = MIDIScheduleClock()
        let (perDevice, control) = buildSchedule(s, cg)
        devices = perDevice.map(\.node)
        for (node, entries) in perDevice { node.setEventSource(MIDISchedule(entries: entries, clock: clock)) }
        startHost = HostTime.now()
        playing = true
        stopFlag.value.store(false, ordering: .releasing)
        startControlThread(s, control)
        return noErr
    }

    /// Stops: the devices' schedules are removed and, with `silence`, every channel gets All
    /// Notes Off (its notes release as a note-off would).
    func stopPlaying(silence: Bool = true, keepSources: Bool = false) {
        guard playing else { return }
        stoppedBeat = currentBeat
        stopFlag.value.store(true, ordering: .releasing)
        if inCallback.value.load(ordering: .acquiring) { thread?.detach() } else { thread?.join() }
        thread = nil
        for d in devices {
            if !keepSources { d.setEventSource(nil) }
            if silence {
                for ch in UInt8(0)..<16 { d.send(MIDIChannelEvent(offset: 0, status: 0xB0 | ch, data1: 123, data2: 0)) }
            }
        }
        // With keepSources the next start replaces the sources; notes still sounding get their
        // note-offs from the new schedule.
        devices = []
        playing = false
    }

    private func frame(_ s: CompatMusicSequence, beat: Double) -> Int64 {
        let f = ((tempo.seconds(forBeats: beat) - startSeconds) / rate * sampleRate).rounded()
        return f.isFinite ? Int64(max(0, min(f, 9e15))) : 0
    }

    /// The schedule of each music device and the control events, from the start beat on.
    private func buildSchedule(_ s: CompatMusicSequence, _ cg: CompatGraph?) -> ([(node: MusicDeviceNode, entries: [MIDISchedule.Entry])], [MusicControlEntry]) {
        var perDevice: [ObjectIdentifier: (node: MusicDeviceNode, entries: [MIDISchedule.Entry])] = [:]
        var order: [ObjectIdentifier] = []
        var control: [MusicControlEntry] = []
        let anySolo = s.tracks.contains { $0.soloed }
        // Infinite loops are laid out two hours ahead (or 4 M events per device).
        let horizon = Int64(7200 * sampleRate)
        let maxEntries = 4_000_000
        for t in s.tracks {
            if t.muted || (anySolo && !t.soloed) { continue }
            let destID = t.destinationNode ?? s.defaultMusicDeviceNode
            let unit = destID.flatMap { cg?.unit($0) }
            let node = hostDestinations.map { $0(t) } ?? destID.flatMap { id in cg?.liveNodes[id] ?? unit?.node } as? MusicDeviceNode
            var entries: [MIDISchedule.Entry] = []
            let loopLength = t.loopInfo.loopDuration
            let passes = loopLength > 0 ? (t.loopInfo.numberOfLoops == 0 ? Int.max : Int(t.loopInfo.numberOfLoops)) : 1
            var pass = 0
            var chased: [MIDISchedule.Entry] = []
            outer: while pass < passes {
                let base = t.offsetTime + Double(pass) * loopLength
                if loopLength > 0, base >= startBeat + 1, frame(s, beat: base) > horizon, t.loopInfo.numberOfLoops == 0 { break }
                for e in t.events {
                    if loopLength > 0, e.time >= loopLength { break }
                    let beat = base + e.time
                    switch e.type {
                    case kMusicEventType_MIDINoteMessage:
                        let n = e.load(MIDINoteMessage.self)
                        let end = beat + Double(max(0, n.duration))
                        if end < startBeat { continue }
                        if beat >= startBeat {
                            entries.append(.init(frame: frame(s, beat: beat), status: 0x90 | (n.channel & 0x0F), data1: n.note & 0x7F, data2: max(1, n.velocity & 0x7F)))
                        }
                        entries.append(.init(frame: frame(s, beat: end), status: 0x80 | (n.channel & 0x0F), data1: n.note & 0x7F, data2: n.releaseVelocity & 0x7F))
                    case kMusicEventType_MIDIChannelMessage:
                        let m = e.load(MIDIChannelMessage.self)
                        guard m.status >= 0x80, m.status < 0xF0 else { continue }
                        let entry = MIDISchedule.Entry(frame: 0, status: m.status, data1: m.data1 & 0x7F, data2: m.data2 & 0x7F)
                        if beat < startBeat {
                            // Chased: programs, controllers and bends before the start play at frame 0.
                            if m.status & 0xF0 != 0x90, m.status & 0xF0 != 0x80 { chased.append(entry) }
                        } else {
                            var x = entry
                            x.frame = frame(s, beat: beat)
                            entries.append(x)
                        }
                    case kMusicEventType_User:
                        guard beat >= startBeat, let h = t.handle else { continue }
                        let len = Int(e.load(MIDIRawData.self).length)
                        control.append(MusicControlEntry(frame: frame(s, beat: beat), beat: beat, kind: .user(track: h, bytes: e.payload(headerSize: rawHeaderSize, length: len))))
                    case kMusicEventType_Parameter:
                        guard beat >= startBeat, let u = unit else { continue }
                        control.append(MusicControlEntry(frame: frame(s, beat: beat), beat: beat, kind: .parameter(unit: u.handle, e.load(ParameterEvent.self))))
                    case kMusicEventType_MIDIRawData:
                        guard beat >= startBeat, let node else { continue }
                        let len = Int(e.load(MIDIRawData.self).length)
                        control.append(MusicControlEntry(frame: frame(s, beat: beat), beat: beat, kind: .sysex(node, e.payload(headerSize: rawHeaderSize, length: len))))
                    default:
                        continue
                    }
                    if entries.count > maxEntries { break outer }
                }
                pass += 1
                if loopLength <= 0 { break }
            }
            guard let node else { continue }
            let id = ObjectIdentifier(node)
            if perDevice[id] == nil {
                perDevice[id] = (node, [])
                order.append(id)
            }
            perDevice[id]!.entries += chased + entries
        }
        control.sort { $0.frame < $1.frame }
        return (order.map { perDevice[$0]! }, control)
    }

    private func startControlThread(_ s: CompatMusicSequence, _ control: [MusicControlEntry]) {
        guard !control.isEmpty, let seqHandle = s.handle else { return }
        let context = UncheckedSendable((control: control, callback: s.userCallback, clientData: s.userClientData, sequence: seqHandle,
                                         clock: clock, devices: !devices.isEmpty, sampleRate: sampleRate, startHost: startHost,
                                         player: self))
        let stop = stopFlag
        let inCallback = self.inCallback
        thread = try? JoinableThread(name: "oat.musicplayer") {
            let c = context.value
            var i = 0
            var lastBeat = c.control.first?.beat ?? 0
            while !stop.value.load(ordering: .acquiring), i < c.control.count {
                let now: Int64 = c.devices ? c.clock.renderedFrames : Int64(HostTime.seconds(ticks: HostTime.now() &- c.startHost) * c.sampleRate)
                let beatNow = c.player.currentBeat
                while i < c.control.count, c.control[i].frame < now || (!c.devices && c.control[i].frame <= now) {
                    let entry = c.control[i]
                    switch entry.kind {
                    case .user(let track, let bytes):
                        if let cb = c.callback {
                            let size = rawHeaderSize + bytes.count
                            let p = UnsafeMutableRawPointer.allocate(byteCount: max(size, MemoryLayout<MusicEventUserData>.size), alignment: 8)
                            p.storeBytes(of: UInt32(bytes.count), as: UInt32.self)
                            bytes.withUnsafeBytes { if let b = $0.baseAddress { (p + rawHeaderSize).copyMemory(from: b, byteCount: bytes.count) } }
                            inCallback.value.store(true, ordering: .releasing)
                            cb(c.clientData, c.sequence, track, entry.beat, p.assumingMemoryBound(to: MusicEventUserData.self), lastBeat, max(beatNow, entry.beat))
                            inCallback.value.store(false, ordering: .releasing)
                            p.deallocate()
                        }
                    case .parameter(let unit, let p):
                        _ = AudioUnitSetParameter(unit, p.parameterID, p.scope, p.element, p.value, 0)
                    case .sysex(let node, let bytes):
                        bytes.withUnsafeBufferPointer { _ = node.sendSysEx($0) }
                    }
                    i += 1
                }
                lastBeat = beatNow
                sleep(seconds: 0.002)
            }
        }
    }
}

func compatPlayer(_ p: MusicPlayer) -> CompatMusicPlayer? { CompatHandles.object(p, as: CompatMusicPlayer.self) }

/// Creates a player (Apple's `NewMusicPlayer`).
@discardableResult
public func NewMusicPlayer(_ outPlayer: UnsafeMutablePointer<MusicPlayer?>) -> OSStatus {
    let p = CompatMusicPlayer()
    let h = CompatHandles.make(p)
    p.handle = h
    outPlayer.pointee = h
    return noErr
}

/// Disposes of a player, stopping it (Apple's `DisposeMusicPlayer`).
@discardableResult
public func DisposeMusicPlayer(_ inPlayer: MusicPlayer) -> OSStatus {
    guard let p = CompatHandles.remove(inPlayer, as: CompatMusicPlayer.self) else { return kAudio_ParamError }
    p.stopPlaying()
    p.sequence?.player = nil
    return noErr
}

/// Sets the sequence the player plays (Apple's `MusicPlayerSetSequence`); nil detaches it. A
/// playing player stops first.
@discardableResult
public func MusicPlayerSetSequence(_ inPlayer: MusicPlayer, _ inSequence: MusicSequence?) -> OSStatus {
    guard let p = compatPlayer(inPlayer) else { return kAudio_ParamError }
    let s = inSequence.flatMap(compatSequence)
    if inSequence != nil, s == nil { return kAudio_ParamError }
    if let s, let other = s.player, other !== p {
        other.stopPlaying()
        other.sequence = nil
    }
    p.stopPlaying()
    p.sequence?.player = nil
    p.sequence = s
    s?.player = p
    p.setTime(0)
    return noErr
}

/// The player's sequence (Apple's `MusicPlayerGetSequence`): `kAudioToolboxErr_NoSequence` without one.
@discardableResult
public func MusicPlayerGetSequence(_ inPlayer: MusicPlayer, _ outSequence: UnsafeMutablePointer<MusicSequence?>) -> OSStatus {
    guard let p = compatPlayer(inPlayer) else { return kAudio_ParamError }
    guard let s = p.sequence else { return kAudioToolboxErr_NoSequence }
    outSequence.pointee = s.handle
    return noErr
}

/// Sets the beat to play from (Apple's `MusicPlayerSetTime`); while playing, playing jumps there.
@discardableResult
public func MusicPlayerSetTime(_ inPlayer: MusicPlayer, _ inTime: MusicTimeStamp) -> OSStatus {
    guard let p = compatPlayer(inPlayer) else { return kAudio_ParamError }
    guard inTime.isFinite, inTime >= 0 else { return kAudio_ParamError }
    p.setTime(inTime)
    return noErr
}

/// The beat playing now (Apple's `MusicPlayerGetTime`): while playing, from the frames the
/// sequence's devices have rendered since the start, through the tempo map and play rate.
@discardableResult
public func MusicPlayerGetTime(_ inPlayer: MusicPlayer, _ outTime: UnsafeMutablePointer<MusicTimeStamp>) -> OSStatus {
    guard let p = compatPlayer(inPlayer) else { return kAudio_ParamError }
    guard p.sequence != nil else { return kAudioToolboxErr_NoSequence }
    outTime.pointee = p.currentBeat
    return noErr
}

/// The host time a beat plays at (Apple's `MusicPlayerGetHostTimeForBeats`); only while playing
/// (`kAudioToolboxErr_InvalidPlayerState` otherwise).
@discardableResult
public func MusicPlayerGetHostTimeForBeats(_ inPlayer: MusicPlayer, _ inBeats: MusicTimeStamp, _ outHostTime: UnsafeMutablePointer<UInt64>) -> OSStatus {
    guard let p = compatPlayer(inPlayer) else { return kAudio_ParamError }
    guard p.playing, let s = p.sequence else { return kAudioToolboxErr_InvalidPlayerState }
    guard inBeats.isFinite else { return kAudio_ParamError }
    let now = HostTime.now()
    let delta = (s.seconds(forBeats: inBeats) - s.seconds(forBeats: p.currentBeat)) / p.rate
    outHostTime.pointee = delta >= 0 ? now &+ HostTime.ticks(seconds: delta) : now &- HostTime.ticks(seconds: -delta)
    return noErr
}

/// The beat that plays at a host time (Apple's `MusicPlayerGetBeatsForHostTime`); only while playing.
@discardableResult
public func MusicPlayerGetBeatsForHostTime(_ inPlayer: MusicPlayer, _ inHostTime: UInt64, _ outBeats: UnsafeMutablePointer<MusicTimeStamp>) -> OSStatus {
    guard let p = compatPlayer(inPlayer) else { return kAudio_ParamError }
    guard p.playing, let s = p.sequence else { return kAudioToolboxErr_InvalidPlayerState }
    let now = HostTime.now()
    let delta = inHostTime >= now ? HostTime.seconds(ticks: inHostTime - now) : -HostTime.seconds(ticks: now - inHostTime)
    outBeats.pointee = s.beats(forSeconds: s.seconds(forBeats: p.currentBeat) + delta * p.rate)
    return noErr
}

/// Prepares the sequence's graph (opened and initialised) so a start is quick (Apple's `MusicPlayerPreroll`).
@discardableResult
public func MusicPlayerPreroll(_ inPlayer: MusicPlayer) -> OSStatus {
    guard let p = compatPlayer(inPlayer) else { return kAudio_ParamError }
    guard let s = p.sequence else { return kAudioToolboxErr_NoSequence }
    if s.graph == nil { _ = makeDefaultMusicGraph(s) }
    if let g = s.graph, let cg = compatGraph(g) {
        if !cg.opened { _ = AUGraphOpen(g) }
        if !cg.initialized { return AUGraphInitialize(g) }
    }
    return noErr
}

/// Starts playing from the player's time (Apple's `MusicPlayerStart`): the sequence's graph is
/// initialised, and started when its output is a device (a generic output is the host's to
/// render). The first slice the graph renders after this is the start beat's.
@discardableResult
public func MusicPlayerStart(_ inPlayer: MusicPlayer) -> OSStatus {
    guard let p = compatPlayer(inPlayer) else { return kAudio_ParamError }
    return p.startPlaying()
}

/// Stops playing; sounding notes are released (Apple's `MusicPlayerStop`). The time stays where it stopped.
@discardableResult
public func MusicPlayerStop(_ inPlayer: MusicPlayer) -> OSStatus {
    guard let p = compatPlayer(inPlayer) else { return kAudio_ParamError }
    p.stopPlaying()
    return noErr
}

/// Whether the player is playing (Apple's `MusicPlayerIsPlaying`).
@discardableResult
public func MusicPlayerIsPlaying(_ inPlayer: MusicPlayer, _ outIsPlaying: UnsafeMutablePointer<DarwinBoolean>) -> OSStatus {
    guard let p = compatPlayer(inPlayer) else { return kAudio_ParamError }
    outIsPlaying.pointee = DarwinBoolean(p.playing)
    return noErr
}

/// Sets the play rate, 1 as written (Apple's `MusicPlayerSetPlayRateScalar`); it must be above 0.
@discardableResult
public func MusicPlayerSetPlayRateScalar(_ inPlayer: MusicPlayer, _ inScaleRate: Float64) -> OSStatus {
    guard let p = compatPlayer(inPlayer) else { return kAudio_ParamError }
    guard inScaleRate.isFinite, inScaleRate > 0 else { return kAudio_ParamError }
    p.setRate(inScaleRate)
    return noErr
}

/// The play rate (Apple's `MusicPlayerGetPlayRateScalar`).
@discardableResult
public func MusicPlayerGetPlayRateScalar(_ inPlayer: MusicPlayer, _ outScaleRate: UnsafeMutablePointer<Float64>) -> OSStatus {
    guard let p = compatPlayer(inPlayer) else { return kAudio_ParamError }
    outScaleRate.pointee = p.rate
    return noErr
}

// MARK: - Hosts other than AUGraph (AVAudioSequencer)

/// Makes `player` play its sequence on the music devices `destination` names for each track (nil:
/// the track is silent) at `sampleRate()`'s rate, leaving AUGraphs alone: what AVAudioSequencer
/// does over an AVAudioEngine.
package func musicPlayerSetHost(_ player: MusicPlayer, sampleRate: @escaping () -> Double?,
                                destination: @escaping (MusicTrack) -> MusicDeviceNode?) {
    guard let p = compatPlayer(player) else { return }
    p.hostSampleRate = sampleRate
    p.hostDestinations = { track in track.handle.flatMap(destination) }
}
