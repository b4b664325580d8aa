// The info dictionary, markers and regions of AudioFile.h through the C API, read the way macOS
// programs read them (only the import differs): `CFDictionary?`/`Unmanaged<CFDictionary>?` for
// kAudioFilePropertyInfoDictionary, a raw buffer sized by AudioFileGetPropertyInfo for the
// marker and region lists.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Small files written by the tests

private func le32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }
private func le16(_ v: UInt16) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }
private func be32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.bigEndian) { Array($0) } }
private func be16(_ v: UInt16) -> [UInt8] { withUnsafeBytes(of: v.bigEndian) { Array($0) } }
private func be64(_ v: UInt64) -> [UInt8] { withUnsafeBytes(of: v.bigEndian) { Array($0) } }
private func riff(_ id: String, _ body: [UInt8]) -> [UInt8] { Array(id.utf8) + le32(UInt32(body.count)) + body + (body.count & 1 == 1 ? [0] : []) }
private func iff(_ id: String, _ body: [UInt8]) -> [UInt8] { Array(id.utf8) + be32(UInt32(body.count)) + body + (body.count & 1 == 1 ? [0] : []) }
private func caf(_ id: String, _ body: [UInt8]) -> [UInt8] { Array(id.utf8) + be64(UInt64(body.count)) + body }

/// 1 s of 16-bit mono 8 kHz silence in a WAV with three cue points (two named by `labl`) and an
/// `ltxt` segment of 2000 frames from cue 2; the cue and adtl chunks follow the data, as
/// recorders write them.
private func wavWithCues() -> [UInt8] {
    let fmt = le16(1) + le16(1) + le32(8000) + le32(16000) + le16(2) + le16(16)
    var cue = le32(3)
    for (id, frame) in [(1, 100), (2, 4000), (7, 7999)] as [(UInt32, UInt32)] {
        cue += le32(id) + le32(frame) + Array("data".utf8) + le32(0) + le32(0) + le32(frame)
    }
    let adtl = Array("adtl".utf8) + riff("labl", le32(1) + Array("Intro\0".utf8)) + riff("labl", le32(2) + Array("Chorus\0".utf8))
        + riff("ltxt", le32(2) + le32(2000) + Array("rgn ".utf8) + le16(0) + le16(0) + le16(0) + le16(0))
    let body = Array("WAVE".utf8) + riff("fmt ", fmt) + riff("data", [UInt8](repeating: 0, count: 16000)) + riff("cue ", cue) + riff("LIST", adtl)
    return riff("RIFF", body)
}

/// 1000 frames of 16-bit mono AIFF with two markers and a forward sustain loop between them.
private func aiffWithLoop() -> [UInt8] {
    let rate: [UInt8] = [0x40, 0x0B, 0xFA, 0, 0, 0, 0, 0, 0, 0] // 8000 as an 80-bit float
    let comm = be16(1) + be32(1000) + be16(16) + rate
    let mark = be16(2) + be16(1) + be32(100) + [5] + Array("Start".utf8) + be16(2) + be32(900) + [3] + Array("End".utf8)
    let inst: [UInt8] = [60, 0, 0, 127, 0, 127] + be16(0) + be16(1) + be16(1) + be16(2) + be16(0) + be16(0) + be16(0)
    let ssnd = be32(0) + be32(0) + [UInt8](repeating: 0, count: 2000)
    return iff("FORM", Array("AIFF".utf8) + iff("COMM", comm) + iff("MARK", mark) + iff("INST", inst) + iff("SSND", ssnd))
}

/// 1000 frames of 16-bit mono CAF with a marker named through `strg` and a looping region.
private func cafWithRegion() -> [UInt8] {
    let desc = be64(Double(8000).bitPattern) + Array("lpcm".utf8) + be32(2) + be32(2) + be32(1) + be32(1) + be32(16)
    func marker(_ type: String, _ frame: Double, _ id: UInt32) -> [UInt8] {
        Array(type.utf8) + be64(frame.bitPattern) + be32(id) + [UInt8](repeating: 0, count: 8) + be32(0)
    }
    let mark = be32(0) + be32(1) + marker("\0\0\0\0", 250, 42)
    let regn = be32(0) + be32(1) + be32(9) + be32(3) + be32(2) + marker("rbeg", 100, 0) + marker("rend", 600, 0)
    let strg = be32(1) + be32(42) + be64(0) + Array("Cue A\0".utf8)
    let data = be32(0) + [UInt8](repeating: 0, count: 2000)
    return Array("caff".utf8) + be16(1) + be16(0) + caf("desc", desc) + caf("mark", mark) + caf("regn", regn) + caf("strg", strg) + caf("data", data)
}

private func withFile<R>(_ bytes: [UInt8], _ ext: String, _ body: (AudioFileID) throws -> R) throws -> R {
    let path = "/tmp/oat-markers-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).\(ext)"
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    defer { unlink(path) }
    var id: AudioFileID?
    try #require(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &id) == noErr)
    let file = try #require(id)
    defer { AudioFileClose(file) }
    return try body(file)
}

private struct Marker: Equatable {
    var frame: Float64
    var name: String?
    var id: Int32
    var type: UInt32
}

/// Reads kAudioFilePropertyMarkerList as macOS code does: size, raw buffer, list header, markers.
private func markers(_ file: AudioFileID) -> [Marker]? {
    var size: UInt32 = 0
    guard AudioFileGetPropertyInfo(file, kAudioFilePropertyMarkerList, &size, nil) == noErr else { return nil }
    let count = NumBytesToNumAudioFileMarkers(Int(size))
    let raw = UnsafeMutableRawPointer.allocate(byteCount: Int(size), alignment: MemoryLayout<AudioFileMarkerList>.alignment)
    defer { raw.deallocate() }
    guard AudioFileGetProperty(file, kAudioFilePropertyMarkerList, &size, raw) == noErr else { return nil }
    let list = raw.assumingMemoryBound(to: AudioFileMarkerList.self)
    guard Int(list.pointee.mNumberMarkers) == count, NumAudioFileMarkersToNumBytes(count) == Int(size) else { return nil }
    let first = raw.advanced(by: MemoryLayout<AudioFileMarkerList>.offset(of: \AudioFileMarkerList.mMarkers)!).assumingMemoryBound(to: AudioFileMarker.self)
    return UnsafeBufferPointer(start: first, count: count).map { Marker(frame: $0.mFramePosition, name: $0.mName, id: $0.mMarkerID, type: $0.mType) }
}

private struct Region: Equatable {
    var id: UInt32
    var name: String
    var flags: AudioFileRegionFlags
    var markers: [Marker]
}

/// Reads kAudioFilePropertyRegionList, walking it with NextAudioFileRegion.
private func regions(_ file: AudioFileID) -> [Region]? {
    var size: UInt32 = 0
    guard AudioFileGetPropertyInfo(file, kAudioFilePropertyRegionList, &size, nil) == noErr else { return nil }
    let raw = UnsafeMutableRawPointer.allocate(byteCount: Int(size), alignment: MemoryLayout<AudioFileRegionList>.alignment)
    defer { raw.deallocate() }
    guard AudioFileGetProperty(file, kAudioFilePropertyRegionList, &size, raw) == noErr else { return nil }
    let list = raw.assumingMemoryBound(to: AudioFileRegionList.self)
    var region = raw.advanced(by: MemoryLayout<AudioFileRegionList>.offset(of: \AudioFileRegionList.mRegions)!).assumingMemoryBound(to: AudioFileRegion.self)
    var out: [Region] = []
    for _ in 0..<Int(list.pointee.mNumberRegions) {
        let first = UnsafeMutableRawPointer(region).advanced(by: MemoryLayout<AudioFileRegion>.offset(of: \AudioFileRegion.mMarkers)!)
            .assumingMemoryBound(to: AudioFileMarker.self)
        let ms = UnsafeBufferPointer(start: first, count: Int(region.pointee.mNumberMarkers))
            .map { Marker(frame: $0.mFramePosition, name: $0.mName, id: $0.mMarkerID, type: $0.mType) }
        out.append(Region(id: region.pointee.mRegionID, name: region.pointee.mName, flags: region.pointee.mFlags, markers: ms))
        region = NextAudioFileRegion(region)
    }
    guard UnsafeMutableRawPointer(region) - raw == Int(size) else { return nil }
    return out
}

private func four(_ s: String) -> UInt32 { s.utf8.reduce(0) { $0 << 8 | UInt32($1) } }

@Suite struct AudioFileMarkersInfoCompatTests {
    /// The info dictionary of a WAV with RIFF INFO tags, read into `Unmanaged<CFDictionary>?` and
    /// into `CFDictionary?` (through a typed pointer), with the `kAFInfoDictionary_*` keys.
    @Test(.requires(corpusMissing)) func infoDictionaryOfATaggedWAV() throws {
        let path = try corpusFile("ffmpeg-generated/wav/pcm_s16le_listinfo.wav")
        var id: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &id) == noErr)
        let file = try #require(id)
        defer { AudioFileClose(file) }
        var size: UInt32 = 0
        var writable: UInt32 = 9
        #expect(AudioFileGetPropertyInfo(file, kAudioFilePropertyInfoDictionary, &size, &writable) == noErr)
        #expect(Int(size) == MemoryLayout<CFDictionary?>.size && writable == 0)
        var unmanaged: Unmanaged<CFDictionary>?
        #expect(AudioFileGetProperty(file, kAudioFilePropertyInfoDictionary, &size, &unmanaged) == noErr)
        let info = try #require(unmanaged?.takeRetainedValue() as? [String: Any])
        #expect(info[kAFInfoDictionary_Artist] as? String == "A")
        #expect(info[kAFInfoDictionary_Title] as? String == "T")
        let duration = try #require((info[kAFInfoDictionary_ApproximateDurationInSeconds] as? String).flatMap(Double.init))
        #expect(abs(duration - 3.0) < 0.001)

        var dictionary: CFDictionary?
        let status = withUnsafeMutablePointer(to: &dictionary) { AudioFileGetProperty(file, kAudioFilePropertyInfoDictionary, &size, $0) }
        #expect(status == noErr)
        let ns = try #require(dictionary)
        #expect(ns[kAFInfoDictionary_Artist] as? String == "A")
        #expect(ns.count == 3)
    }

    /// ID3v2 tags of an MP3 reach the dictionary; the tag's offset is 0; a stream parser hands
    /// the same tags.
    @Test(.requires(corpusMissing)) func id3TagsAndOffset() throws {
        let path = try corpusFile("ffmpeg-generated/mp3/l3_id3v24.mp3")
        var id: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &id) == noErr)
        let file = try #require(id)
        defer { AudioFileClose(file) }
        var size = UInt32(MemoryLayout<Unmanaged<CFDictionary>?>.size)
        var unmanaged: Unmanaged<CFDictionary>?
        #expect(AudioFileGetProperty(file, kAudioFilePropertyInfoDictionary, &size, &unmanaged) == noErr)
        let info = try #require(unmanaged?.takeRetainedValue() as? [String: String])
        #expect(info[kAFInfoDictionary_Title] == "T24")
        #expect(Double(info[kAFInfoDictionary_ApproximateDurationInSeconds] ?? "").map { abs($0 - 3.0) < 0.05 } == true)
        var offset: Int64 = -1
        size = 8
        #expect(AudioFileGetProperty(file, kAudioFilePropertyID3TagOffset, &size, &offset) == noErr && offset == 0)
        var restricts: UInt32 = 9
        size = 4
        #expect(AudioFileGetProperty(file, kAudioFilePropertyRestrictsRandomAccess, &size, &restricts) == noErr && restricts == 0)
    }

    /// WAV: cue points named by `labl`, a region from `ltxt`.
    @Test func wavCueMarkersAndRegion() throws {
        try withFile(wavWithCues(), "wav") { file in
            #expect(markers(file) == [Marker(frame: 100, name: "Intro", id: 1, type: kAudioFileMarkerType_Generic),
                                      Marker(frame: 4000, name: "Chorus", id: 2, type: 0), Marker(frame: 7999, name: nil, id: 7, type: 0)])
            #expect(regions(file) == [Region(id: 2, name: "Chorus", flags: .playForward, markers: [
                Marker(frame: 4000, name: "Chorus", id: 2, type: four("rbeg")), Marker(frame: 6000, name: "Chorus", id: 2, type: four("rend"))])])
        }
    }

    /// AIFF: MARK markers and the INST sustain loop as a looping region.
    @Test func aiffMarkersAndSustainLoop() throws {
        try withFile(aiffWithLoop(), "aiff") { file in
            #expect(markers(file) == [Marker(frame: 100, name: "Start", id: 1, type: 0), Marker(frame: 900, name: "End", id: 2, type: 0)])
            #expect(regions(file) == [Region(id: 1, name: "", flags: [.loopEnable, .playForward], markers: [
                Marker(frame: 100, name: "Start", id: 1, type: four("slls")), Marker(frame: 900, name: "End", id: 2, type: four("slle"))])])
        }
    }

    /// CAF: `mark` named from `strg`, `regn` with its flags and markers.
    @Test func cafMarkersAndRegions() throws {
        try withFile(cafWithRegion(), "caf") { file in
            #expect(markers(file) == [Marker(frame: 250, name: "Cue A", id: 42, type: 0)])
            #expect(regions(file) == [Region(id: 9, name: "", flags: [.loopEnable, .playForward], markers: [
                Marker(frame: 100, name: nil, id: 0, type: four("rbeg")), Marker(frame: 600, name: nil, id: 0, type: four("rend"))])])
        }
    }

    /// A marker list buffer too small for every marker gets the markers that fit; a buffer
    /// smaller than the header is refused.
    @Test func shortMarkerBuffer() throws {
        try withFile(wavWithCues(), "wav") { file in
            var size = UInt32(NumAudioFileMarkersToNumBytes(1) + 3)
            let raw = UnsafeMutableRawPointer.allocate(byteCount: Int(size), alignment: 16)
            defer { raw.deallocate() }
            #expect(AudioFileGetProperty(file, kAudioFilePropertyMarkerList, &size, raw) == noErr)
            #expect(raw.assumingMemoryBound(to: AudioFileMarkerList.self).pointee.mNumberMarkers == 1)
            #expect(Int(size) == NumAudioFileMarkersToNumBytes(1))
            size = 4
            #expect(AudioFileGetProperty(file, kAudioFilePropertyMarkerList, &size, raw) == kAudioFileBadPropertySizeError)
        }
    }

    /// PacketRangeByteCountUpperBound: the bytes of a packet range of a PCM file (2 bytes a
    /// packet) and of a VBR MP3 (the sum of its packet sizes).
    @Test(.requires(corpusMissing)) func packetRangeByteCount() throws {
        try withFile(wavWithCues(), "wav") { file in
            var t = AudioPacketRangeByteCountTranslation(mPacket: 10, mPacketCount: 100, mByteCountUpperBound: 0)
            var size = UInt32(MemoryLayout<AudioPacketRangeByteCountTranslation>.size)
            #expect(AudioFileGetProperty(file, kAudioFilePropertyPacketRangeByteCountUpperBound, &size, &t) == noErr)
            #expect(t.mByteCountUpperBound == 200)
        }
        let path = try corpusFile("ffmpeg-generated/mp3/l3_mpeg25_11k_st_vbr.mp3")
        var id: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &id) == noErr)
        let file = try #require(id)
        defer { AudioFileClose(file) }
        var bytes: UInt32 = 1 << 20
        var packets: UInt32 = 20
        var descriptions = [AudioStreamPacketDescription](repeating: AudioStreamPacketDescription(), count: 20)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        #expect(AudioFileReadPacketData(file, false, &bytes, &descriptions, 5, &packets, &buffer) == noErr && packets == 20)
        var t = AudioPacketRangeByteCountTranslation(mPacket: 5, mPacketCount: 20, mByteCountUpperBound: 0)
        var size = UInt32(MemoryLayout<AudioPacketRangeByteCountTranslation>.size)
        #expect(AudioFileGetProperty(file, kAudioFilePropertyPacketRangeByteCountUpperBound, &size, &t) == noErr)
        #expect(t.mByteCountUpperBound == Int64(bytes))
    }

    /// The HFS type-code global infos answer empty lists (no HFS type codes on Linux).
    @Test func hfsTypeCodesAreEmpty() {
        var size: UInt32 = 9
        #expect(AudioFileGetGlobalInfoSize(kAudioFileGlobalInfo_AllHFSTypeCodes, 0, nil, &size) == noErr && size == 0)
        var type = kAudioFileWAVEType
        size = 9
        #expect(AudioFileGetGlobalInfoSize(kAudioFileGlobalInfo_HFSTypeCodesForType, 4, &type, &size) == noErr && size == 0)
        size = 9
        #expect(AudioFileGetGlobalInfoSize(kAudioFileGlobalInfo_TypesForHFSTypeCode, 4, &type, &size) == noErr && size == 0)
    }
}
