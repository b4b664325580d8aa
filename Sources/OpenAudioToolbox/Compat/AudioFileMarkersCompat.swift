// Audio Toolbox–compatible AudioFile markers and regions: AudioFileMarker(List), AudioFileRegion(List),
// the list size helpers and the marker/region list properties, read from the parsers' chunks.

import OATCore
import OATFiles
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Markers and regions

/// SMPTE time of a marker (Apple's `AudioFile_SMPTE_Time`).
public struct AudioFile_SMPTE_Time: Hashable, Sendable {
    /// Hours.
    public var mHours: Int8 = 0
    /// Minutes.
    public var mMinutes: UInt8 = 0
    /// Seconds.
    public var mSeconds: UInt8 = 0
    /// Frames.
    public var mFrames: UInt8 = 0
    /// Subframe sample offset.
    public var mSubFrameSampleOffset: UInt32 = 0
    /// A zero time.
    public init() {}
}

/// A marker (Apple's `AudioFileMarker`). Different: the name is a `CFString?` (a Swift `String`:
/// no CoreFoundation strings here) where Apple has `Unmanaged<CFString>?`, so the struct is
/// larger than Apple's; ``NumAudioFileMarkersToNumBytes(_:)`` uses this layout.
public struct AudioFileMarker {
    /// Position in frames from the start of the audio data.
    public var mFramePosition: Float64 = 0
    /// Name (nil when the file gives none).
    public var mName: CFString?
    /// Identifier.
    public var mMarkerID: Int32 = 0
    /// SMPTE time.
    public var mSMPTETime = AudioFile_SMPTE_Time()
    /// Marker type (``kAudioFileMarkerType_Generic`` or a CAF marker type).
    public var mType: UInt32 = 0
    /// Reserved.
    public var mReserved: UInt16 = 0
    /// Channel (0: all).
    public var mChannel: UInt16 = 0
    /// An empty marker.
    public init() {}
    /// Apple's memberwise initialiser.
    public init(mFramePosition: Float64, mName: CFString?, mMarkerID: Int32, mSMPTETime: AudioFile_SMPTE_Time, mType: UInt32,
                mReserved: UInt16, mChannel: UInt16) {
        self.mFramePosition = mFramePosition
        self.mName = mName
        self.mMarkerID = mMarkerID
        self.mSMPTETime = mSMPTETime
        self.mType = mType
        self.mReserved = mReserved
        self.mChannel = mChannel
    }
}

/// A list of markers (Apple's variable-length `AudioFileMarkerList`): `mNumberMarkers` markers
/// from `mMarkers` on.
public struct AudioFileMarkerList {
    /// SMPTE time type.
    public var mSMPTE_TimeType: UInt32 = 0
    /// Number of markers that follow.
    public var mNumberMarkers: UInt32 = 0
    /// The first marker.
    public var mMarkers = AudioFileMarker()
    /// An empty list.
    public init() {}
}

/// How a region plays (Apple's `AudioFileRegionFlags`).
public struct AudioFileRegionFlags: OptionSet, Hashable, Sendable {
    /// The bits.
    public var rawValue: UInt32
    /// Flags from bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The region loops (with playForward and/or playBackward).
    public static let loopEnable = AudioFileRegionFlags(rawValue: 1)
    /// The region plays forward.
    public static let playForward = AudioFileRegionFlags(rawValue: 2)
    /// The region plays backward.
    public static let playBackward = AudioFileRegionFlags(rawValue: 4)
}

/// A region (Apple's variable-length `AudioFileRegion`): `mNumberMarkers` markers from
/// `mMarkers` on; ``NextAudioFileRegion(_:)`` steps to the next. Different: the name is a
/// `CFString` (a Swift `String`), Apple's an `Unmanaged<CFString>`.
public struct AudioFileRegion {
    /// Identifier.
    public var mRegionID: UInt32 = 0
    /// Name ("" when the file gives none).
    public var mName: CFString = ""
    /// How the region plays.
    public var mFlags: AudioFileRegionFlags = []
    /// Number of markers that follow.
    public var mNumberMarkers: UInt32 = 0
    /// The first marker.
    public var mMarkers = AudioFileMarker()
    /// An empty region.
    public init() {}
    /// Apple's memberwise initialiser.
    public init(mRegionID: UInt32, mName: CFString, mFlags: AudioFileRegionFlags, mNumberMarkers: UInt32, mMarkers: AudioFileMarker) {
        self.mRegionID = mRegionID
        self.mName = mName
        self.mFlags = mFlags
        self.mNumberMarkers = mNumberMarkers
        self.mMarkers = mMarkers
    }
}

/// A list of regions (Apple's variable-length `AudioFileRegionList`).
public struct AudioFileRegionList {
    /// SMPTE time type.
    public var mSMPTE_TimeType: UInt32 = 0
    /// Number of regions that follow.
    public var mNumberRegions: UInt32 = 0
    /// The first region.
    public var mRegions = AudioFileRegion()
    /// An empty list.
    public init() {}
}

/// A generic marker (Apple's `kAudioFileMarkerType_Generic`).
public let kAudioFileMarkerType_Generic: UInt32 = 0
/// The segment is not looped (Apple's `kAudioFileLoopDirection_NoLooping`).
public let kAudioFileLoopDirection_NoLooping: UInt32 = 0
/// Loop forward (Apple's `kAudioFileLoopDirection_Forward`).
public let kAudioFileLoopDirection_Forward: UInt32 = 1
/// Loop forward then backward (Apple's `kAudioFileLoopDirection_ForwardAndBackward`).
public let kAudioFileLoopDirection_ForwardAndBackward: UInt32 = 2
/// Loop backward (Apple's `kAudioFileLoopDirection_Backward`).
public let kAudioFileLoopDirection_Backward: UInt32 = 3

private let markerListHeader = MemoryLayout<AudioFileMarkerList>.offset(of: \AudioFileMarkerList.mMarkers)!
private let regionListHeader = MemoryLayout<AudioFileRegionList>.offset(of: \AudioFileRegionList.mRegions)!
private let regionHeader = MemoryLayout<AudioFileRegion>.offset(of: \AudioFileRegion.mMarkers)!

/// How many markers a marker list of `inNumBytes` bytes holds (Apple's
/// `NumBytesToNumAudioFileMarkers`).
public func NumBytesToNumAudioFileMarkers(_ inNumBytes: Int) -> Int {
    inNumBytes < markerListHeader ? 0 : (inNumBytes - markerListHeader) / MemoryLayout<AudioFileMarker>.stride
}

/// Bytes of a marker list of `inNumMarkers` markers (Apple's `NumAudioFileMarkersToNumBytes`).
public func NumAudioFileMarkersToNumBytes(_ inNumMarkers: Int) -> Int {
    markerListHeader + max(0, inNumMarkers) * MemoryLayout<AudioFileMarker>.stride
}

/// The region after `inAFRegionPtr` in a region list (Apple's `NextAudioFileRegion`): past its
/// `mNumberMarkers` markers. May point past the list's end: count with `mNumberRegions`.
public func NextAudioFileRegion(_ inAFRegionPtr: UnsafePointer<AudioFileRegion>) -> UnsafeMutablePointer<AudioFileRegion> {
    let bytes = regionHeader + Int(inAFRegionPtr.pointee.mNumberMarkers) * MemoryLayout<AudioFileMarker>.stride
    return (UnsafeMutableRawPointer(mutating: UnsafeRawPointer(inAFRegionPtr)) + bytes).assumingMemoryBound(to: AudioFileRegion.self)
}

extension AudioFileMarker {
    init(_ m: AudioFileMarkerInfo) {
        self.init(mFramePosition: m.framePosition, mName: m.name, mMarkerID: m.markerID, mSMPTETime: AudioFile_SMPTE_Time(),
                  mType: m.type, mReserved: 0, mChannel: m.channel)
    }
}

/// Bytes of one region with `markers` markers in a region list.
private func regionBytes(_ markers: Int) -> Int { regionHeader + markers * MemoryLayout<AudioFileMarker>.stride }

/// `kAudioFilePropertyMarkerList`: an ``AudioFileMarkerList`` of `markers`, written into the
/// caller's buffer (as many markers as fit; `mNumberMarkers` says how many).
func markerListProperty(_ markers: [AudioFileMarkerInfo]) -> CPropertyValue {
    .custom(UInt32(NumAudioFileMarkersToNumBytes(markers.count))) { ioSize, out in
        guard Int(ioSize.pointee) >= markerListHeader else { return kAudioFileBadPropertySizeError }
        let fit = min(markers.count, NumBytesToNumAudioFileMarkers(Int(ioSize.pointee)))
        out.storeBytes(of: UInt32(0), toByteOffset: 0, as: UInt32.self)
        out.storeBytes(of: UInt32(fit), toByteOffset: 4, as: UInt32.self)
        let first = (out + markerListHeader).bindMemory(to: AudioFileMarker.self, capacity: fit)
        for i in 0..<fit { (first + i).initialize(to: AudioFileMarker(markers[i])) }
        ioSize.pointee = UInt32(NumAudioFileMarkersToNumBytes(fit))
        return noErr
    }
}

/// `kAudioFilePropertyRegionList`: an ``AudioFileRegionList`` of `regions`, each followed by its
/// markers, written into the caller's buffer (the regions that fit; `mNumberRegions` says how
/// many).
func regionListProperty(_ regions: [AudioFileRegionInfo]) -> CPropertyValue {
    let total = regions.reduce(regionListHeader) { $0 + regionBytes($1.markers.count) }
    return .custom(UInt32(clamping: total)) { ioSize, out in
        guard Int(ioSize.pointee) >= regionListHeader else { return kAudioFileBadPropertySizeError }
        var used = regionListHeader, count = 0
        for region in regions {
            let bytes = regionBytes(region.markers.count)
            guard used + bytes <= Int(ioSize.pointee) else { break }
            var head = AudioFileRegion()
            head.mRegionID = region.regionID
            head.mName = region.name ?? ""
            head.mFlags = AudioFileRegionFlags(rawValue: region.flags)
            head.mNumberMarkers = UInt32(region.markers.count)
            if let m = region.markers.first { head.mMarkers = AudioFileMarker(m) }
            (out + used).bindMemory(to: AudioFileRegion.self, capacity: 1).initialize(to: head)
            let markers = (out + used + regionHeader).bindMemory(to: AudioFileMarker.self, capacity: region.markers.count)
            for i in region.markers.indices.dropFirst() { (markers + i).initialize(to: AudioFileMarker(region.markers[i])) }
            used += bytes
            count += 1
        }
        out.storeBytes(of: UInt32(0), toByteOffset: 0, as: UInt32.self)
        out.storeBytes(of: UInt32(count), toByteOffset: 4, as: UInt32.self)
        ioSize.pointee = UInt32(used)
        return noErr
    }
}

/// Markers (`'mkls'`): an ``AudioFileMarkerList`` (WAV `cue `/`labl`, AIFF `MARK`, CAF `mark`);
/// size it with ``AudioFileGetPropertyInfo(_:_:_:_:)``.
public let kAudioFilePropertyMarkerList: AudioFilePropertyID = fourCC("mkls")
/// Regions (`'rgls'`): an ``AudioFileRegionList`` (WAV `ltxt`, AIFF `INST` loops, CAF `regn`);
/// walk it with ``NextAudioFileRegion(_:)``.
public let kAudioFilePropertyRegionList: AudioFilePropertyID = fourCC("rgls")
