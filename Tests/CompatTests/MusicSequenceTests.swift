// Issue 26 §1: MusicSequence and MusicPlayer as MusicPlayer.h gives them. Sequences built with
// the C calls, written to and read back from Standard MIDI Files, walked with iterators; the
// beat-to-second map through tempo changes; and a player driving a music device in an AUGraph
// rendered offline with AudioUnitRender, where each note must start on the frame its beat maps
// to (a test instrument writes one impulse per note-on, so the onset frame is exact).
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import OATTestSupport
import Testing

// MARK: - The test instrument (OATTestSupport.ImpulseInstrument) as a component

private let impulseDescription = AudioComponentDescription(componentType: kAudioUnitType_MusicDevice, componentSubType: 0x696D_7073, // 'imps'
                                                          componentManufacturer: 0x4F41_5474, componentFlags: 0, componentFlagsMask: 0) // 'OATt'
private let registerImpulse: Void = {
    var d = impulseDescription
    _ = AudioComponentRegister(&d, "OAT tests: impulse instrument", 1) { _ in ImpulseInstrument() }
}()

/// A graph: the impulse instrument into a generic output, opened and initialised.
private struct OfflineMusicGraph {
    let graph: AUGraph
    let synthNode: AUNode
    let output: AudioUnit
    let sampleRate: Double

    init() throws {
        _ = registerImpulse
        var g: AUGraph?
        #expect(NewAUGraph(&g) == noErr)
        graph = try #require(g)
        var synth = impulseDescription
        var out = AudioComponentDescription(componentType: kAudioUnitType_Output, componentSubType: kAudioUnitSubType_GenericOutput,
                                            componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        var s: AUNode = 0, o: AUNode = 0
        #expect(AUGraphAddNode(graph, &synth, &s) == noErr)
        #expect(AUGraphAddNode(graph, &out, &o) == noErr)
        #expect(AUGraphConnectNodeInput(graph, s, 0, o, 0) == noErr)
        #expect(AUGraphOpen(graph) == noErr)
        var unit: AudioUnit?
        #expect(AUGraphNodeInfo(graph, o, nil, &unit) == noErr)
        output = try #require(unit)
        #expect(AUGraphInitialize(graph) == noErr)
        var format = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioUnitGetProperty(output, kAudioUnitProperty_StreamFormat, kAudioUnitScope_Output, 0, &format, &size) == noErr)
        sampleRate = format.mSampleRate
        synthNode = s
    }

    /// A new sequence that plays on this graph.
    func makeSequence() throws -> MusicSequence {
        var seq: MusicSequence?
        #expect(NewMusicSequence(&seq) == noErr)
        let s = try #require(seq)
        #expect(MusicSequenceSetAUGraph(s, graph) == noErr)
        return s
    }

    /// Renders `frames` frames in slices of `slice`, channel 0.
    func render(frames: Int, slice: Int, from start: Double = 0) -> [Float] {
        var out: [Float] = []
        out.reserveCapacity(frames)
        var left = [Float](repeating: 0, count: slice), right = [Float](repeating: 0, count: slice)
        let list = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(list.unsafeMutablePointer) }
        var time = AudioTimeStamp()
        time.mFlags = kAudioTimeStampSampleTimeValid
        time.mSampleTime = start
        var done = 0
        while done < frames {
            let n = min(slice, frames - done)
            let status = left.withUnsafeMutableBytes { lb in
                right.withUnsafeMutableBytes { rb -> OSStatus in
                    list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(n * 4), mData: lb.baseAddress)
                    list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(n * 4), mData: rb.baseAddress)
                    var flags = AudioUnitRenderActionFlags()
                    return AudioUnitRender(output, &flags, &time, 0, UInt32(n), list.unsafeMutablePointer)
                }
            }
            #expect(status == noErr)
            out += left[0..<n]
            time.mSampleTime += Double(n)
            done += n
        }
        return out
    }
}

/// A new player of `sequence`.
private func makePlayer(_ sequence: MusicSequence) throws -> MusicPlayer {
    var player: MusicPlayer?
    #expect(NewMusicPlayer(&player) == noErr)
    let p = try #require(player)
    #expect(MusicPlayerSetSequence(p, sequence) == noErr)
    return p
}

private func onsets(_ samples: [Float]) -> [Int] { samples.indices.filter { samples[$0] > 0 } }

private func note(_ key: UInt8, channel: UInt8 = 0, velocity: UInt8 = 100, duration: Float = 0.25) -> MIDINoteMessage {
    MIDINoteMessage(channel: channel, note: key, velocity: velocity, releaseVelocity: 0, duration: duration)
}

@Suite("MusicSequence and MusicPlayer (MusicPlayer.h)", .serialized)
struct MusicSequenceTests {
    @Test("tempo changes map beats to seconds and back")
    func tempoMap() throws {
        var seq: MusicSequence?
        #expect(NewMusicSequence(&seq) == noErr)
        let s = try #require(seq)
        defer { _ = DisposeMusicSequence(s) }
        var seconds: Float64 = 0
        #expect(MusicSequenceGetSecondsForBeats(s, 3, &seconds) == noErr)
        #expect(abs(seconds - 1.5) < 1e-12, "120 bpm by default: \(seconds)")
        var tempo: MusicTrack?
        #expect(MusicSequenceGetTempoTrack(s, &tempo) == noErr)
        let t = try #require(tempo)
        #expect(MusicTrackNewExtendedTempoEvent(t, 0, 90) == noErr)
        #expect(MusicTrackNewExtendedTempoEvent(t, 4, 180) == noErr)
        #expect(MusicTrackNewExtendedTempoEvent(t, 4, 0) == kAudio_ParamError)
        #expect(MusicSequenceGetSecondsForBeats(s, 4, &seconds) == noErr)
        #expect(abs(seconds - 4 * 60 / 90.0) < 1e-12)
        #expect(MusicSequenceGetSecondsForBeats(s, 6, &seconds) == noErr)
        #expect(abs(seconds - (4 * 60 / 90.0 + 2 * 60 / 180.0)) < 1e-12, "\(seconds)")
        var beats: MusicTimeStamp = 0
        #expect(MusicSequenceGetBeatsForSeconds(s, seconds, &beats) == noErr)
        #expect(abs(beats - 6) < 1e-9, "\(beats)")
        #expect(MusicSequenceGetBeatsForSeconds(s, 1, &beats) == noErr)
        #expect(abs(beats - 1.5) < 1e-9)
        // Seconds type: a beat is a second.
        #expect(MusicSequenceSetSequenceType(s, .seconds) == noErr)
        #expect(MusicSequenceGetSecondsForBeats(s, 6, &seconds) == noErr)
        #expect(abs(seconds - 6) < 1e-12)
        var type = MusicSequenceType.beats
        #expect(MusicSequenceGetSequenceType(s, &type) == noErr && type == .seconds)
    }

    @Test("bars and beats follow the tempo track's time signatures")
    func barBeatTime() throws {
        var seq: MusicSequence?
        #expect(NewMusicSequence(&seq) == noErr)
        let s = try #require(seq)
        defer { _ = DisposeMusicSequence(s) }
        var bbt = CABarBeatTime()
        #expect(MusicSequenceBeatsToBarBeatTime(s, 9.5, 480, &bbt) == noErr)
        #expect(bbt.bar == 3 && bbt.beat == 2 && bbt.subbeat == 240, "4/4: \(bbt)")
        // 3/4 from beat 8 (bar 3).
        var tempo: MusicTrack?
        #expect(MusicSequenceGetTempoTrack(s, &tempo) == noErr)
        let bytes: [UInt8] = [3, 2, 24, 8]
        let meta = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
        defer { meta.deallocate() }
        meta.storeBytes(of: MIDIMetaEvent(metaEventType: 0x58, unused1: 0, unused2: 0, unused3: 0, dataLength: 4, data: 0), as: MIDIMetaEvent.self)
        for (i, b) in bytes.enumerated() { meta.storeBytes(of: b, toByteOffset: 8 + i, as: UInt8.self) }
        #expect(MusicTrackNewMetaEvent(try #require(tempo), 8, meta.assumingMemoryBound(to: MIDIMetaEvent.self)) == noErr)
        #expect(MusicSequenceBeatsToBarBeatTime(s, 14, 4, &bbt) == noErr)
        #expect(bbt.bar == 5 && bbt.beat == 1 && bbt.subbeat == 0, "3/4 after bar 3: \(bbt)")
        var back: MusicTimeStamp = 0
        bbt = CABarBeatTime(bar: 5, beat: 3, subbeat: 2, subbeatDivisor: 4, reserved: 0)
        #expect(MusicSequenceBarBeatTimeToBeats(s, &bbt, &back) == noErr)
        #expect(abs(back - 16.5) < 1e-9, "\(back)")
    }

    @Test("events, iterators and track edits")
    func iterators() throws {
        var seq: MusicSequence?
        #expect(NewMusicSequence(&seq) == noErr)
        let s = try #require(seq)
        defer { _ = DisposeMusicSequence(s) }
        var track: MusicTrack?
        #expect(MusicSequenceNewTrack(s, &track) == noErr)
        let t = try #require(track)
        var n1 = note(60), n2 = note(64, duration: 2), n3 = note(67)
        #expect(MusicTrackNewMIDINoteEvent(t, 2, &n2) == noErr)
        #expect(MusicTrackNewMIDINoteEvent(t, 0, &n1) == noErr)
        #expect(MusicTrackNewMIDINoteEvent(t, 2, &n3) == noErr)
        var bad = note(200)
        #expect(MusicTrackNewMIDINoteEvent(t, 0, &bad) == kAudio_ParamError)
        var program = MIDIChannelMessage(status: 0xC0, data1: 5, data2: 0, reserved: 0)
        #expect(MusicTrackNewMIDIChannelEvent(t, 1, &program) == noErr)
        var count: UInt32 = 0
        #expect(MusicSequenceGetTrackCount(s, &count) == noErr && count == 1)
        var length: MusicTimeStamp = 0
        var size = UInt32(8)
        #expect(MusicTrackGetProperty(t, kSequenceTrackProperty_TrackLength, &length, &size) == noErr)
        #expect(length == 4, "the end of the 2-beat note at beat 2: \(length)")

        var iterator: MusicEventIterator?
        #expect(NewMusicEventIterator(t, &iterator) == noErr)
        let it = try #require(iterator)
        defer { _ = DisposeMusicEventIterator(it) }
        var times: [MusicTimeStamp] = []
        var keys: [UInt8] = []
        var has: DarwinBoolean = false
        #expect(MusicEventIteratorHasCurrentEvent(it, &has) == noErr)
        while has.boolValue {
            var time: MusicTimeStamp = 0, type: MusicEventType = 0, data: UnsafeRawPointer?, dataSize: UInt32 = 0
            #expect(MusicEventIteratorGetEventInfo(it, &time, &type, &data, &dataSize) == noErr)
            times.append(time)
            if type == kMusicEventType_MIDINoteMessage { keys.append(data!.load(as: MIDINoteMessage.self).note) }
            #expect(MusicEventIteratorNextEvent(it) == noErr)
            #expect(MusicEventIteratorHasCurrentEvent(it, &has) == noErr)
        }
        #expect(times == [0, 1, 2, 2] && keys == [60, 64, 67], "stable order at equal beats: \(times) \(keys)")
        #expect(MusicEventIteratorNextEvent(it) == kAudioToolboxErr_EndOfTrack)
        var time: MusicTimeStamp = 0, type: MusicEventType = 0, data: UnsafeRawPointer?, dataSize: UInt32 = 0
        #expect(MusicEventIteratorGetEventInfo(it, &time, &type, &data, &dataSize) == kAudioToolboxErr_EndOfTrack)
        #expect(MusicEventIteratorSeek(it, 1.5) == noErr)
        #expect(MusicEventIteratorGetEventInfo(it, &time, &type, &data, &dataSize) == noErr && time == 2)
        #expect(MusicEventIteratorSetEventTime(it, 3) == noErr)
        #expect(MusicEventIteratorGetEventInfo(it, &time, &type, &data, &dataSize) == noErr && time == 3)
        #expect(MusicEventIteratorDeleteEvent(it) == noErr)
        #expect(MusicEventIteratorSeek(it, 0) == noErr)
        #expect(MusicEventIteratorPreviousEvent(it) == kAudioToolboxErr_StartOfTrack)
        // Cut [0, 1): the note at 0 goes, the rest move back a beat.
        #expect(MusicTrackCut(t, 0, 1) == noErr)
        #expect(MusicEventIteratorSeek(it, 0) == noErr)
        #expect(MusicEventIteratorGetEventInfo(it, &time, &type, &data, &dataSize) == noErr && time == 0 && type == kMusicEventType_MIDIChannelMessage)
        var index: UInt32 = 9
        #expect(MusicSequenceGetTrackIndex(s, t, &index) == noErr && index == 0)
        var other: MusicTrack?
        #expect(MusicSequenceGetIndTrack(s, 3, &other) == kAudioToolboxErr_TrackIndexError)
        #expect(MusicSequenceDisposeTrack(s, t) == noErr)
        #expect(MusicSequenceDisposeTrack(s, t) == kAudioToolboxErr_TrackNotFound)
    }

    @Test("a sequence written as a Standard MIDI File reads back the same")
    func fileRoundTrip() throws {
        var seq: MusicSequence?
        #expect(NewMusicSequence(&seq) == noErr)
        let s = try #require(seq)
        defer { _ = DisposeMusicSequence(s) }
        var tempo: MusicTrack?
        #expect(MusicSequenceGetTempoTrack(s, &tempo) == noErr)
        #expect(MusicTrackNewExtendedTempoEvent(try #require(tempo), 0, 100) == noErr)
        #expect(MusicTrackNewExtendedTempoEvent(try #require(tempo), 8, 150) == noErr)
        var notes: [(Double, MIDINoteMessage)] = []
        for track in 0..<2 {
            var tr: MusicTrack?
            #expect(MusicSequenceNewTrack(s, &tr) == noErr)
            let t = try #require(tr)
            for i in 0..<20 {
                var n = MIDINoteMessage(channel: UInt8(track), note: UInt8(48 + (i * 7) % 30), velocity: UInt8(30 + i * 3), releaseVelocity: UInt8(i),
                                        duration: Float(0.25 + Double(i % 3) * 0.5))
                let beat = Double(i) * 0.75 + Double(track) * 0.125
                #expect(MusicTrackNewMIDINoteEvent(t, beat, &n) == noErr)
                if track == 0 { notes.append((beat, n)) }
            }
            var bend = MIDIChannelMessage(status: 0xE0 | UInt8(track), data1: 0, data2: 80, reserved: 0)
            #expect(MusicTrackNewMIDIChannelEvent(t, 3, &bend) == noErr)
        }
        var data: Unmanaged<CFData>?
        #expect(MusicSequenceFileCreateData(s, .midiType, [], 480, &data) == noErr)
        let bytes = try #require(data).takeRetainedValue() as Data
        #expect(bytes.prefix(4) == Data("MThd".utf8))

        var again: MusicSequence?
        #expect(NewMusicSequence(&again) == noErr)
        let r = try #require(again)
        defer { _ = DisposeMusicSequence(r) }
        #expect(MusicSequenceFileLoadData(r, bytes as CFData, .anyType, []) == noErr)
        var count: UInt32 = 0
        #expect(MusicSequenceGetTrackCount(r, &count) == noErr)
        #expect(count == 2, "tracks: \(count)")
        var seconds: Float64 = 0
        #expect(MusicSequenceGetSecondsForBeats(r, 10, &seconds) == noErr)
        #expect(abs(seconds - (8 * 0.6 + 2 * 0.4)) < 1e-4, "tempo 100 then 150: \(seconds)")
        var first: MusicTrack?
        #expect(MusicSequenceGetIndTrack(r, 0, &first) == noErr)
        var iterator: MusicEventIterator?
        #expect(NewMusicEventIterator(try #require(first), &iterator) == noErr)
        let it = try #require(iterator)
        defer { _ = DisposeMusicEventIterator(it) }
        var read: [(Double, MIDINoteMessage)] = []
        var bends = 0
        var has: DarwinBoolean = false
        #expect(MusicEventIteratorHasCurrentEvent(it, &has) == noErr)
        while has.boolValue {
            var time: MusicTimeStamp = 0, type: MusicEventType = 0, ptr: UnsafeRawPointer?, size: UInt32 = 0
            #expect(MusicEventIteratorGetEventInfo(it, &time, &type, &ptr, &size) == noErr)
            if type == kMusicEventType_MIDINoteMessage { read.append((time, ptr!.load(as: MIDINoteMessage.self))) }
            if type == kMusicEventType_MIDIChannelMessage, ptr!.load(as: MIDIChannelMessage.self).status == 0xE0 { bends += 1 }
            _ = MusicEventIteratorNextEvent(it)
            #expect(MusicEventIteratorHasCurrentEvent(it, &has) == noErr)
        }
        #expect(bends == 1)
        #expect(read.count == notes.count)
        for (a, b) in zip(notes.sorted { $0.0 < $1.0 }, read) {
            #expect(abs(a.0 - b.0) < 1.0 / 480 && a.1.note == b.1.note && a.1.velocity == b.1.velocity && a.1.releaseVelocity == b.1.releaseVelocity
                    && abs(a.1.duration - b.1.duration) < 1.0 / 480, "\(a) vs \(b)")
        }
        // Through a file too.
        let url = URL(fileURLWithPath: NSTemporaryDirectory() + "oat-seq-\(getpid()).mid")
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(MusicSequenceFileCreate(s, url as CFURL, .midiType, .eraseFile, 0) == noErr)
        #expect(MusicSequenceFileCreate(s, url as CFURL, .midiType, [], 0) != noErr, "an existing file needs .eraseFile")
        var third: MusicSequence?
        #expect(NewMusicSequence(&third) == noErr)
        let f = try #require(third)
        defer { _ = DisposeMusicSequence(f) }
        #expect(MusicSequenceFileLoad(f, url as CFURL, .midiType, .smf_ChannelsToTracks) == noErr)
        #expect(MusicSequenceGetTrackCount(f, &count) == noErr && count == 2, "one track per channel: \(count)")
    }

    @Test("a type 0 file written byte by byte: running status, note-on velocity 0, tempo and System Exclusive")
    func handWrittenFile() throws {
        // 96 ticks per quarter; tempo 500000 us (120 bpm); program 10; C4 for a quarter with
        // running status and velocity-0 note-off; SysEx; E4 an eighth later.
        let track: [UInt8] = [0x00, 0xFF, 0x51, 0x03, 0x07, 0xA1, 0x20,
                              0x00, 0xC0, 0x0A,
                              0x00, 0x90, 0x3C, 0x64,
                              0x60, 0x3C, 0x00,
                              0x00, 0xF0, 0x03, 0x7E, 0x7F, 0xF7,
                              0x30, 0x90, 0x40, 0x50,
                              0x81, 0x40, 0x80, 0x40, 0x00,
                              0x00, 0xFF, 0x2F, 0x00]
        var file: [UInt8] = Array("MThd".utf8) + [0, 0, 0, 6, 0, 0, 0, 1, 0, 96] + Array("MTrk".utf8)
        file += [0, 0, 0, UInt8(track.count)] + track
        var seq: MusicSequence?
        #expect(NewMusicSequence(&seq) == noErr)
        let s = try #require(seq)
        defer { _ = DisposeMusicSequence(s) }
        #expect(MusicSequenceFileLoadData(s, Data(file) as CFData, .midiType, []) == noErr)
        var t: MusicTrack?
        #expect(MusicSequenceGetIndTrack(s, 0, &t) == noErr)
        var it: MusicEventIterator?
        #expect(NewMusicEventIterator(try #require(t), &it) == noErr)
        defer { _ = DisposeMusicEventIterator(it!) }
        var got: [String] = []
        var has: DarwinBoolean = false
        _ = MusicEventIteratorHasCurrentEvent(it!, &has)
        while has.boolValue {
            var time: MusicTimeStamp = 0, type: MusicEventType = 0, ptr: UnsafeRawPointer?, size: UInt32 = 0
            _ = MusicEventIteratorGetEventInfo(it!, &time, &type, &ptr, &size)
            switch type {
            case kMusicEventType_MIDINoteMessage:
                let n = ptr!.load(as: MIDINoteMessage.self)
                got.append("note \(n.note) v\(n.velocity) at \(time) for \(n.duration)")
            case kMusicEventType_MIDIChannelMessage:
                let m = ptr!.load(as: MIDIChannelMessage.self)
                got.append("channel \(String(m.status, radix: 16)) \(m.data1) at \(time)")
            case kMusicEventType_MIDIRawData:
                let length = ptr!.load(as: UInt32.self)
                got.append("raw \(length) at \(time)")
            default:
                got.append("type \(type) at \(time)")
            }
            _ = MusicEventIteratorNextEvent(it!)
            _ = MusicEventIteratorHasCurrentEvent(it!, &has)
        }
        #expect(got == ["channel c0 10 at 0.0", "note 60 v100 at 0.0 for 1.0", "raw 4 at 1.0", "note 64 v80 at 1.5 for 2.0"], "\(got)")
        var seconds: Float64 = 0
        #expect(MusicSequenceGetSecondsForBeats(s, 2, &seconds) == noErr && abs(seconds - 1) < 1e-9)
    }

    @Test("broken and hostile files are refused with an error, never a trap")
    func hostileFiles() throws {
        var seq: MusicSequence?
        #expect(NewMusicSequence(&seq) == noErr)
        let s = try #require(seq)
        defer { _ = DisposeMusicSequence(s) }
        #expect(MusicSequenceFileLoadData(s, Data("RIFFxxxxWAVE".utf8) as CFData, .anyType, []) == kAudioFileInvalidFileError)
        let header: [UInt8] = Array("MThd".utf8) + [0, 0, 0, 6, 0, 1, 0, 2, 1, 224]
        #expect(MusicSequenceFileLoadData(s, Data(header) as CFData, .anyType, []) == kAudioFileInvalidFileError, "two tracks declared, none there")
        let missing = URL(fileURLWithPath: "/nonexistent/oat/none.mid")
        #expect(MusicSequenceFileLoad(s, missing as CFURL, .anyType, []) == kAudio_FileNotFoundError)
        // Mutations of a valid file: each either loads or fails with a status.
        var good: MusicSequence?
        #expect(NewMusicSequence(&good) == noErr)
        defer { _ = DisposeMusicSequence(good!) }
        var tr: MusicTrack?
        #expect(MusicSequenceNewTrack(good!, &tr) == noErr)
        for i in 0..<40 {
            var n = note(UInt8(40 + i), duration: 0.5)
            #expect(MusicTrackNewMIDINoteEvent(tr!, Double(i) * 0.25, &n) == noErr)
        }
        var data: Unmanaged<CFData>?
        #expect(MusicSequenceFileCreateData(good!, .midiType, [], 96, &data) == noErr)
        let bytes = [UInt8](data!.takeRetainedValue() as Data)
        var rng = SystemRandomNumberGenerator()
        var loaded = 0
        for _ in 0..<3000 {
            var m = bytes
            for _ in 0..<Int.random(in: 1...6, using: &rng) { m[Int.random(in: 0..<m.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng) }
            if Bool.random(using: &rng) { m = Array(m.prefix(Int.random(in: 0..<m.count, using: &rng))) }
            var x: MusicSequence?
            _ = NewMusicSequence(&x)
            if MusicSequenceFileLoadData(x!, Data(m) as CFData, .anyType, []) == noErr { loaded += 1 }
            _ = DisposeMusicSequence(x!)
        }
        #expect(loaded > 0 && loaded < 3000, "\(loaded) of 3000 mutants loaded")
    }

    @Test("the player puts each note on the frame its beat maps to, through tempo changes, offline")
    func sampleAccuratePlayback() throws {
        let g = try OfflineMusicGraph()
        defer { _ = DisposeAUGraph(g.graph) }
        let s = try g.makeSequence()
        defer { _ = DisposeMusicSequence(s) }
        var tempo: MusicTrack?
        #expect(MusicSequenceGetTempoTrack(s, &tempo) == noErr)
        #expect(MusicTrackNewExtendedTempoEvent(try #require(tempo), 0, 133) == noErr)
        #expect(MusicTrackNewExtendedTempoEvent(try #require(tempo), 2, 71) == noErr)
        var tr: MusicTrack?
        #expect(MusicSequenceNewTrack(s, &tr) == noErr)
        let t = try #require(tr)
        let beats: [Double] = [0, 0.5, 1.3, 2, 2.77, 3.5]
        for (i, b) in beats.enumerated() {
            var n = note(UInt8(60 + i), velocity: UInt8(60 + i * 10))
            #expect(MusicTrackNewMIDINoteEvent(t, b, &n) == noErr)
        }
        var destination: AUNode = 0
        #expect(MusicTrackGetDestNode(t, &destination) == noErr && destination == g.synthNode, "the graph's first music device")
        var player: MusicPlayer?
        #expect(NewMusicPlayer(&player) == noErr)
        let p = try #require(player)
        defer { _ = DisposeMusicPlayer(p) }
        #expect(MusicPlayerStart(p) == kAudioToolboxErr_NoSequence)
        #expect(MusicPlayerSetSequence(p, s) == noErr)
        #expect(MusicPlayerStart(p) == noErr)
        var playing: DarwinBoolean = false
        #expect(MusicPlayerIsPlaying(p, &playing) == noErr && playing.boolValue)

        var expected: [Int] = []
        for b in beats {
            var sec: Float64 = 0
            _ = MusicSequenceGetSecondsForBeats(s, b, &sec)
            expected.append(Int((sec * g.sampleRate).rounded()))
        }
        let total = expected.last! + 4096
        let audio = g.render(frames: total, slice: 317)
        #expect(onsets(audio) == expected, "onsets \(onsets(audio)) expected \(expected)")
        for (i, at) in expected.enumerated() { #expect(abs(audio[at] - Float(60 + i * 10) / 127) < 1e-6) }
        var now: MusicTimeStamp = 0
        #expect(MusicPlayerGetTime(p, &now) == noErr)
        var sec: Float64 = 0
        _ = MusicSequenceGetBeatsForSeconds(s, Double(total) / g.sampleRate, &sec)
        #expect(abs(now - sec) < 1e-6, "player time \(now) after \(total) frames: \(sec)")
        var host: UInt64 = 0
        #expect(MusicPlayerGetHostTimeForBeats(p, now + 1, &host) == noErr && host > AudioGetCurrentHostTime())
        #expect(MusicPlayerStop(p) == noErr)
        #expect(MusicPlayerGetHostTimeForBeats(p, 1, &host) == kAudioToolboxErr_InvalidPlayerState)
        #expect(MusicPlayerIsPlaying(p, &playing) == noErr && !playing.boolValue)
    }

    @Test("play rate, a start time, loops, mute and solo change what plays where")
    func rateTimeLoopsMute() throws {
        let g = try OfflineMusicGraph()
        defer { _ = DisposeAUGraph(g.graph) }
        let s = try g.makeSequence()
        defer { _ = DisposeMusicSequence(s) }
        var a: MusicTrack?, b: MusicTrack?
        #expect(MusicSequenceNewTrack(s, &a) == noErr)
        #expect(MusicSequenceNewTrack(s, &b) == noErr)
        for beat in [0.0, 1, 2, 3] {
            var n = note(60, velocity: 127)
            #expect(MusicTrackNewMIDINoteEvent(a!, beat, &n) == noErr)
        }
        var m = note(72, velocity: 64)
        #expect(MusicTrackNewMIDINoteEvent(b!, 0.5, &m) == noErr)
        let p = try makePlayer(s)
        defer { _ = DisposeMusicPlayer(p) }
        let beat = g.sampleRate / 2 // frames per beat at 120 bpm

        // Rate 2 from beat 1: beats 1, 2, 3 (track a) at 0, 0.5 and 1 beat-lengths.
        #expect(MusicPlayerSetPlayRateScalar(p, 0) == kAudio_ParamError)
        #expect(MusicPlayerSetPlayRateScalar(p, 2) == noErr)
        #expect(MusicPlayerSetTime(p, 1) == noErr)
        #expect(MusicPlayerStart(p) == noErr)
        var audio = g.render(frames: Int(beat * 2), slice: 512)
        #expect(onsets(audio) == [0, Int(beat / 2), Int(beat)], "\(onsets(audio))")
        #expect(MusicPlayerStop(p) == noErr)

        // Muting a, then soloing b: only b's note at 0.5.
        var on: UInt8 = 1
        #expect(MusicPlayerSetPlayRateScalar(p, 1) == noErr)
        #expect(MusicTrackSetProperty(a!, kSequenceTrackProperty_MuteStatus, &on, 1) == noErr)
        #expect(MusicPlayerSetTime(p, 0) == noErr)
        #expect(MusicPlayerStart(p) == noErr)
        audio = g.render(frames: Int(beat * 4), slice: 512)
        #expect(onsets(audio) == [Int(beat / 2)], "\(onsets(audio))")
        #expect(MusicPlayerStop(p) == noErr)
        var off: UInt8 = 0
        #expect(MusicTrackSetProperty(a!, kSequenceTrackProperty_MuteStatus, &off, 1) == noErr)
        #expect(MusicTrackSetProperty(b!, kSequenceTrackProperty_SoloStatus, &on, 1) == noErr)
        #expect(MusicPlayerSetTime(p, 0) == noErr)
        #expect(MusicPlayerStart(p) == noErr)
        audio = g.render(frames: Int(beat * 4), slice: 512)
        #expect(onsets(audio) == [Int(beat / 2)], "\(onsets(audio))")
        #expect(MusicPlayerStop(p) == noErr)
        #expect(MusicTrackSetProperty(b!, kSequenceTrackProperty_SoloStatus, &off, 1) == noErr)

        // Loop b's first beat three times, offset by a quarter beat: 0.75, 1.75, 2.75.
        var loop = MusicTrackLoopInfo(loopDuration: 1, numberOfLoops: 3)
        #expect(MusicTrackSetProperty(b!, kSequenceTrackProperty_LoopInfo, &loop, UInt32(MemoryLayout<MusicTrackLoopInfo>.size)) == noErr)
        var offset: MusicTimeStamp = 0.25
        #expect(MusicTrackSetProperty(b!, kSequenceTrackProperty_OffsetTime, &offset, 8) == noErr)
        #expect(MusicTrackSetProperty(a!, kSequenceTrackProperty_MuteStatus, &on, 1) == noErr)
        #expect(MusicPlayerSetTime(p, 0) == noErr)
        #expect(MusicPlayerStart(p) == noErr)
        audio = g.render(frames: Int(beat * 5), slice: 480)
        #expect(onsets(audio) == [0.75, 1.75, 2.75].map { Int(($0 * beat).rounded()) }, "\(onsets(audio))")
        #expect(MusicPlayerStop(p) == noErr)
        var got = MusicTrackLoopInfo()
        var size = UInt32(MemoryLayout<MusicTrackLoopInfo>.size)
        #expect(MusicTrackGetProperty(b!, kSequenceTrackProperty_LoopInfo, &got, &size) == noErr && got.numberOfLoops == 3)
    }

    @Test("user events reach the sequence's callback at their beat; stop releases the notes")
    func userEventsAndStop() throws {
        let g = try OfflineMusicGraph()
        defer { _ = DisposeAUGraph(g.graph) }
        let s = try g.makeSequence()
        defer { _ = DisposeMusicSequence(s) }
        var tr: MusicTrack?
        #expect(MusicSequenceNewTrack(s, &tr) == noErr)
        let payload: [UInt8] = [0, 0, 0, 0, 0x41, 0x42, 0x43]
        let raw = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
        defer { raw.deallocate() }
        raw.storeBytes(of: UInt32(3), as: UInt32.self)
        for i in 4..<7 { raw.storeBytes(of: payload[i], toByteOffset: i, as: UInt8.self) }
        #expect(MusicTrackNewUserEvent(tr!, 1, raw.assumingMemoryBound(to: MusicEventUserData.self)) == noErr)
        var long = note(50, duration: 100)
        #expect(MusicTrackNewMIDINoteEvent(tr!, 0, &long) == noErr)
        let box = UserEventBox()
        #expect(MusicSequenceSetUserCallback(s, userEventCallback, Unmanaged.passUnretained(box).toOpaque()) == noErr)
        let p = try makePlayer(s)
        defer { _ = DisposeMusicPlayer(p) }
        #expect(MusicPlayerStart(p) == noErr)
        _ = g.render(frames: Int(g.sampleRate * 0.6), slice: 512)
        let deadline = Date().addingTimeInterval(2)
        while box.events.isEmpty, Date() < deadline { usleep(2000) }
        let events = box.events
        #expect(events.count == 1 && events.first?.beat == 1 && events.first?.bytes == [0x41, 0x42, 0x43], "\(events)")
        #expect(MusicPlayerStop(p) == noErr)
        let instrument = ImpulseInstrument.last
        _ = g.render(frames: 512, slice: 512)
        #expect((instrument?.allNotesOff.load(ordering: .relaxed) ?? 0) == 16, "All Notes Off on the 16 channels after stop")
    }
}

final class UserEventBox: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [(beat: Double, bytes: [UInt8])] = []
    func append(_ e: (beat: Double, bytes: [UInt8])) { lock.lock(); list.append(e); lock.unlock() }
    var events: [(beat: Double, bytes: [UInt8])] { lock.lock(); defer { lock.unlock() }; return list }
}

private let userEventCallback: MusicSequenceUserCallback = { client, _, _, beat, data, _, _ in
    let box = Unmanaged<UserEventBox>.fromOpaque(client!).takeUnretainedValue()
    let length = Int(data.pointee.length)
    let bytes = Array(UnsafeRawBufferPointer(start: UnsafeRawPointer(data) + 4, count: length))
    box.append((beat, bytes))
}
