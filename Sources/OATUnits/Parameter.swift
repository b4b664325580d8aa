import OATCore
import Synchronization

/// Where a parameter or property applies on a node (Apple's `AudioUnitScope` values).
public enum AUScope: UInt32, Sendable, Hashable {
    /// The node as a whole.
    case global = 0
    /// One input bus (the element is the bus index).
    case input = 1
    /// One output bus (the element is the bus index).
    case output = 2
}

/// The unit a parameter's value is in, for documentation and user interfaces.
public enum ParameterUnit: String, Sendable, Hashable {
    /// A plain number.
    case generic
    /// A linear gain factor (1 is unity).
    case linearGain
    /// Decibels.
    case decibels
    /// Hertz.
    case hertz
    /// Seconds.
    case seconds
    /// Milliseconds.
    case milliseconds
    /// Octaves.
    case octaves
    /// Cents (1/1200 of an octave).
    case cents
    /// Percent (0 ... 100).
    case percent
    /// A ratio (e.g. a compression ratio or a playback rate).
    case ratio
    /// -1 (left) ... 1 (right).
    case pan
    /// 0 or 1.
    case boolean
    /// An enumerated value (e.g. a filter type).
    case indexed
}

/// A node parameter: a `Float` settable from any thread and picked up by the render thread
/// without locks.
///
/// Values are clamped to ``range``. The render thread reads the value once per render slice;
/// nodes smooth the parameters where a jump would click (gains, pans, filter settings, delay
/// times), see ``AUSmoothedValue``.
/// Thread safety: ``value`` may be read and written from any thread (an atomic word).
public final class NodeParameter: Sendable, CustomStringConvertible {
    /// Apple's parameter ID where one exists (e.g. `kReverb2Param_DryWetMix` = 0), else a node-local ID.
    public let id: UInt32
    /// The scope this parameter lives in.
    public let scope: AUScope
    /// The bus (element) this parameter belongs to, 0 for global ones.
    public let element: Int
    /// A short name, e.g. `volume`, `band 3 gain`.
    public let name: String
    /// The unit of ``value``.
    public let unit: ParameterUnit
    /// The allowed values.
    public let range: ClosedRange<Float>
    /// The value at creation.
    public let defaultValue: Float
    private let bits: Atomic<UInt32>

    /// Creates a parameter; `defaultValue` is clamped to `range`.
    public init(id: UInt32, name: String, unit: ParameterUnit, range: ClosedRange<Float>, defaultValue: Float,
                scope: AUScope = .global, element: Int = 0) {
        self.id = id
        self.name = name
        self.unit = unit
        self.range = range
        self.scope = scope
        self.element = element
        let d = min(max(defaultValue, range.lowerBound), range.upperBound)
        self.defaultValue = d
        bits = Atomic(d.bitPattern)
    }

    /// The current value (any thread). Setting clamps to ``range``; NaN is ignored.
    public var value: Float {
        get { Float(bitPattern: bits.load(ordering: .relaxed)) }
        set {
            guard !newValue.isNaN else { return }
            bits.store(min(max(newValue, range.lowerBound), range.upperBound).bitPattern, ordering: .relaxed)
        }
    }

    /// Sets the value, throwing when it is outside ``range`` (the compatibility API's check).
    public func set(_ newValue: Float) throws(AudioError) {
        guard newValue.isFinite, range.contains(newValue) else {
            throw AudioError(.invalidArgument, component: "NodeParameter",
                             "\(name) = \(newValue) is outside \(range.lowerBound)...\(range.upperBound) (\(unit.rawValue))",
                             osStatus: -10878)
        }
        value = newValue
    }

    /// `name = value unit`.
    public var description: String { "\(name) = \(value) (\(unit.rawValue), \(range.lowerBound)...\(range.upperBound))" }
}

/// A value that glides linearly to a new target over a fixed number of frames, so that
/// parameter changes do not click ("zipper noise"). Render-thread state; no allocation.
public struct AUSmoothedValue: Sendable {
    /// The value now.
    public private(set) var current: Float
    /// The value being approached.
    public private(set) var target: Float
    private var step: Float = 0
    private var remaining = 0
    /// Frames a change takes.
    public var rampFrames: Int

    /// Starts at `value` with ramps of `rampFrames` frames.
    public init(_ value: Float, rampFrames: Int = 480) {
        current = value
        target = value
        self.rampFrames = max(1, rampFrames)
    }

    /// Sets a new target; the ramp restarts from the current value.
    public mutating func setTarget(_ value: Float) {
        guard value != target else { return }
        target = value
        remaining = rampFrames
        step = (value - current) / Float(rampFrames)
    }

    /// Jumps to `value` at once.
    public mutating func reset(_ value: Float) {
        current = value
        target = value
        remaining = 0
    }

    /// True while gliding.
    public var isRamping: Bool { remaining > 0 }

    /// Advances one frame and returns the value for it.
    @inline(__always)
    public mutating func next() -> Float {
        if remaining > 0 {
            remaining -= 1
            current = remaining == 0 ? target : current + step
        }
        return current
    }

    /// Advances `frames` frames at once (for values applied per block).
    public mutating func advance(_ frames: Int) -> Float {
        if remaining > 0 {
            let n = min(frames, remaining)
            remaining -= n
            current = remaining == 0 ? target : current + step * Float(n)
        }
        return current
    }
}

/// A counter several threads may bump and read (relaxed atomics).
public final class AtomicCounter: Sendable {
    private let storage = Atomic<Int>(0)
    /// Creates a zero counter.
    public init() {}
    /// Adds `n`.
    public func add(_ n: Int) { storage.add(n, ordering: .relaxed) }
    /// The count.
    public var value: Int { storage.load(ordering: .relaxed) }
}

/// A 32-bit atomic word (relaxed).
final class AtomicCounter32: Sendable {
    private let storage = Atomic<UInt32>(0)
    func load() -> UInt32 { storage.load(ordering: .relaxed) }
    func store(_ v: UInt32) { storage.store(v, ordering: .relaxed) }
}
