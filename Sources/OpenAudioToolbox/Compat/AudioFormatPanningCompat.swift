// Panning and balance/fade coefficients (AudioFormat.h): kAudioFormatProperty_PanningMatrix and
// kAudioFormatProperty_BalanceFade, with Apple's specifier structs (their enums, AudioPanningMode
// and AudioBalanceFadeType, are C enums in COATAudioToolboxTypes, for Apple's 4-byte layout). The coefficients are one
// Float32 per channel of the layout the specifier points at, computed from the channels' standard
// positions (or their coordinates when the layout gives them).

import OATCore
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// What `kAudioFormatProperty_PanningMatrix` pans (Apple's `AudioPanningInfo`): a mono source at
/// `mCoordinates` into the layout `mOutputChannelMap`, scaled by `mGainScale`.
public struct AudioPanningInfo {
    /// The algorithm.
    public var mPanningMode: AudioPanningMode
    /// `kAudioChannelFlags_SphericalCoordinates` (azimuth, elevation, distance) or
    /// `kAudioChannelFlags_RectangularCoordinates` (left-right, back-front, down-up).
    public var mCoordinateFlags: UInt32
    /// The source's position.
    public var mCoordinates: (Float32, Float32, Float32)
    /// A gain applied to every coefficient (1: unity, 0: silence).
    public var mGainScale: Float32
    /// The output layout.
    public var mOutputChannelMap: UnsafePointer<AudioChannelLayout>
    /// Apple's memberwise initialiser.
    public init(mPanningMode: AudioPanningMode, mCoordinateFlags: UInt32, mCoordinates: (Float32, Float32, Float32), mGainScale: Float32,
                mOutputChannelMap: UnsafePointer<AudioChannelLayout>) {
        self.mPanningMode = mPanningMode
        self.mCoordinateFlags = mCoordinateFlags
        self.mCoordinates = mCoordinates
        self.mGainScale = mGainScale
        self.mOutputChannelMap = mOutputChannelMap
    }
}

/// What `kAudioFormatProperty_BalanceFade` computes (Apple's `AudioBalanceFade`).
public struct AudioBalanceFade {
    /// -1 full left, 0 centre, +1 full right.
    public var mLeftRightBalance: Float32
    /// -1 full rear, 0 centre, +1 full front.
    public var mBackFrontFade: Float32
    /// How gains are traded.
    public var mType: AudioBalanceFadeType
    /// The layout the coefficients are for.
    public var mChannelLayout: UnsafePointer<AudioChannelLayout>
    /// Apple's memberwise initialiser.
    public init(mLeftRightBalance: Float32, mBackFrontFade: Float32, mType: AudioBalanceFadeType, mChannelLayout: UnsafePointer<AudioChannelLayout>) {
        self.mLeftRightBalance = mLeftRightBalance
        self.mBackFrontFade = mBackFrontFade
        self.mType = mType
        self.mChannelLayout = mChannelLayout
    }
}

/// A channel's direction: azimuth (degrees, 0 front, positive right) and elevation (degrees), or
/// nil for an LFE or a channel without a direction.
private struct Direction {
    var azimuth: Double
    var elevation: Double
}

/// Standard directions of the labels (ITU-R BS.775 and the CAF/Core Audio label meanings).
private func direction(of label: UInt32) -> Direction? {
    switch label {
    case 1: Direction(azimuth: -30, elevation: 0)          // left
    case 2: Direction(azimuth: 30, elevation: 0)           // right
    case 3, 42: Direction(azimuth: 0, elevation: 0)        // center, mono
    case 5: Direction(azimuth: -110, elevation: 0)         // left surround
    case 6: Direction(azimuth: 110, elevation: 0)          // right surround
    case 7: Direction(azimuth: -15, elevation: 0)          // left center
    case 8: Direction(azimuth: 15, elevation: 0)           // right center
    case 9: Direction(azimuth: 180, elevation: 0)          // center surround
    case 10: Direction(azimuth: -90, elevation: 0)         // left surround direct
    case 11: Direction(azimuth: 90, elevation: 0)          // right surround direct
    case 12: Direction(azimuth: 0, elevation: 90)          // top center surround
    case 13: Direction(azimuth: -30, elevation: 45)        // vertical height left
    case 14: Direction(azimuth: 0, elevation: 45)          // vertical height center
    case 15: Direction(azimuth: 30, elevation: 45)         // vertical height right
    case 16: Direction(azimuth: -150, elevation: 45)       // top back left
    case 17: Direction(azimuth: 180, elevation: 45)        // top back center
    case 18: Direction(azimuth: 150, elevation: 45)        // top back right
    case 33: Direction(azimuth: -150, elevation: 0)        // rear surround left
    case 34: Direction(azimuth: 150, elevation: 0)         // rear surround right
    case 35: Direction(azimuth: -60, elevation: 0)         // left wide
    case 36: Direction(azimuth: 60, elevation: 0)          // right wide
    case 38: Direction(azimuth: -30, elevation: 0)         // left total
    case 39: Direction(azimuth: 30, elevation: 0)          // right total
    default: nil                                           // LFE, discrete, ambisonic, unknown
    }
}

private let useCoordinatesLabel: UInt32 = 100

/// A direction from Apple's coordinates: spherical (azimuth, elevation) unless only the
/// rectangular flag is set (x left-right, y back-front, z down-up).
private func direction(flags: UInt32, _ c: (Float32, Float32, Float32)) -> Direction {
    if flags & AudioChannelFlags.rectangularCoordinates.rawValue != 0 && flags & AudioChannelFlags.sphericalCoordinates.rawValue == 0 {
        let x = Double(c.0), y = Double(c.1), z = Double(c.2)
        let horizontal = (x * x + y * y).squareRoot()
        return Direction(azimuth: atan2(x, y) * 180 / .pi, elevation: atan2(z, horizontal) * 180 / .pi)
    }
    return Direction(azimuth: Double(c.0), elevation: Double(c.1))
}

/// The directions of a C layout's channels, in channel order (nil: no direction, e.g. LFE).
/// Nil when the layout's channels are unknown.
private func channelDirections(_ layout: UnsafePointer<AudioChannelLayout>) -> [Direction?]? {
    let raw = UnsafeRawPointer(layout)
    let tag = raw.loadUnaligned(as: UInt32.self)
    if tag == kAudioChannelLayoutTag_UseChannelDescriptions {
        let count = Int(raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        let first = MemoryLayout<AudioChannelLayout>.offset(of: \AudioChannelLayout.mChannelDescriptions)!
        let stride = MemoryLayout<AudioChannelDescription>.stride
        return (0..<count).map { i in
            let d = raw.loadUnaligned(fromByteOffset: first + i * stride, as: AudioChannelDescription.self)
            return d.mChannelLabel == useCoordinatesLabel ? direction(flags: d.mChannelFlags.rawValue, d.mCoordinates) : direction(of: d.mChannelLabel)
        }
    }
    let swiftLayout = OATCore.ChannelLayout(tag: OATCore.ChannelLayoutTag(rawValue: tag),
                                                   bitmap: AudioChannelBitmap(rawValue: raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
    return swiftLayout.labels.map { $0.map { direction(of: $0.rawValue) } }
}

/// A unit vector (x right, y front, z up).
private func vector(_ d: Direction) -> (Double, Double, Double) {
    let az = d.azimuth * .pi / 180, el = d.elevation * .pi / 180
    return (sin(az) * cos(el), cos(az) * cos(el), sin(el))
}

/// Balance/fade coefficients, one per channel (Apple's `kAudioFormatProperty_BalanceFade`).
/// Left channels (azimuth < 0) and right ones (> 0) follow the balance, front (|azimuth| < 90)
/// and rear (> 90) ones the fade; channels on the axis (centre, LFE) keep 1. The fade applies
/// when the layout has both front and rear channels.
func balanceFadeCoefficients(_ spec: AudioBalanceFade) -> [Float32]? {
    guard let directions = channelDirections(spec.mChannelLayout) else { return nil }
    let balance = Double(max(-1, min(1, spec.mLeftRightBalance.isFinite ? spec.mLeftRightBalance : 0)))
    let fade = Double(max(-1, min(1, spec.mBackFrontFade.isFinite ? spec.mBackFrontFade : 0)))
    let hasFront = directions.contains { $0.map { abs(normalised($0.azimuth)) < 90 } ?? false }
    let hasRear = directions.contains { $0.map { abs(normalised($0.azimuth)) > 90 } ?? false }
    /// Gains of the negative and positive sides for a position in -1...1.
    func pair(_ p: Double) -> (negative: Double, positive: Double) {
        switch spec.mType {
        case .maxUnityGain: return (min(1, 1 - p), min(1, 1 + p))
        case .equalPower:
            let angle = (p + 1) * .pi / 4
            return (2.0.squareRoot() * cos(angle), 2.0.squareRoot() * sin(angle))
        @unknown default: return (1, 1)
        }
    }
    let lr = pair(balance), rf = pair(fade) // rf: negative = rear, positive = front
    return directions.map { d -> Float32 in
        guard let d else { return 1 }
        let az = normalised(d.azimuth)
        var gain = 1.0
        if az < 0 && az > -180 { gain *= lr.negative } else if az > 0 && az < 180 { gain *= lr.positive }
        if hasFront && hasRear {
            if abs(az) < 90 { gain *= rf.positive } else if abs(az) > 90 { gain *= rf.negative }
        }
        return Float32(max(0, gain))
    }
}

/// An azimuth in -180...180.
private func normalised(_ azimuth: Double) -> Double {
    var a = azimuth.truncatingRemainder(dividingBy: 360)
    if a > 180 { a -= 360 } else if a <= -180 { a += 360 }
    return a
}

/// Panning coefficients of a mono source, one per output channel (Apple's
/// `kAudioFormatProperty_PanningMatrix`), power-normalised then scaled by `mGainScale`.
func panningCoefficients(_ spec: AudioPanningInfo) -> [Float32]? {
    guard let directions = channelDirections(spec.mOutputChannelMap) else { return nil }
    let source = direction(flags: spec.mCoordinateFlags, spec.mCoordinates)
    guard source.azimuth.isFinite, source.elevation.isFinite else { return nil }
    var gains = [Double](repeating: 0, count: directions.count)
    let speakers = directions.enumerated().compactMap { i, d in d.map { (index: i, direction: $0) } }
    if speakers.count == 1 {
        gains[speakers[0].index] = 1
    } else if !speakers.isEmpty {
        switch spec.mPanningMode {
        case .panningMode_SoundField:
            let s = vector(source)
            for sp in speakers {
                let v = vector(sp.direction)
                gains[sp.index] = max(0, (1 + s.0 * v.0 + s.1 * v.1 + s.2 * v.2) / 2)
            }
        case .panningMode_VectorBasedPanning:
            vbap(source, speakers, &gains)
        @unknown default:
            return nil
        }
    }
    let power = gains.reduce(0) { $0 + $1 * $1 }.squareRoot()
    let scale = Double(spec.mGainScale.isFinite ? spec.mGainScale : 0)
    return gains.map { Float32(power > 0 ? $0 / power * scale : 0) }
}

/// Two-dimensional vector-base amplitude panning over the speakers in the horizontal plane
/// (elevated speakers take part when there are fewer than two in the plane): the adjacent pair
/// around the source's azimuth, or the nearest speaker when no pair spans less than 180°.
private func vbap(_ source: Direction, _ speakers: [(index: Int, direction: Direction)], _ gains: inout [Double]) {
    var ring = speakers.filter { $0.direction.elevation == 0 }
    if ring.count < 2 { ring = speakers }
    let sorted = ring.map { (index: $0.index, azimuth: normalised($0.direction.azimuth)) }.sorted { $0.azimuth < $1.azimuth }
    let az = normalised(source.azimuth)
    for (i, a) in sorted.enumerated() {
        let b = sorted[(i + 1) % sorted.count]
        var span = b.azimuth - a.azimuth
        if span <= 0 { span += 360 }
        var offset = az - a.azimuth
        if offset < 0 { offset += 360 }
        guard span < 180, offset <= span else { continue }
        // Solve p = g1 l1 + g2 l2 for unit vectors in the plane.
        let p = (sin(az * .pi / 180), cos(az * .pi / 180))
        let l1 = (sin(a.azimuth * .pi / 180), cos(a.azimuth * .pi / 180))
        let l2 = (sin(b.azimuth * .pi / 180), cos(b.azimuth * .pi / 180))
        let det = l1.0 * l2.1 - l1.1 * l2.0
        guard abs(det) > 1e-9 else { continue }
        gains[a.index] = max(0, (p.0 * l2.1 - p.1 * l2.0) / det)
        gains[b.index] = max(0, (l1.0 * p.1 - l1.1 * p.0) / det)
        return
    }
    // No pair spans the source (e.g. stereo and a source behind): the nearest speaker.
    let nearest = sorted.min { abs(normalised($0.azimuth - az)) < abs(normalised($1.azimuth - az)) }
    if let nearest { gains[nearest.index] = 1 }
}
