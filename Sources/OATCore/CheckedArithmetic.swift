/// Arithmetic on values that came from input: file and stream bytes, network headers, the
/// command line.
///
/// Every operation that could overflow and every conversion that could truncate throws an
/// ``AudioError`` (``AudioError/Code/invalidData`` unless told otherwise) that names the field,
/// the component and the byte offset, instead of trapping. Parsers make one per structure they
/// read and route every size, count, offset and duration computation through it:
///
/// ```swift
/// let c = InputArithmetic("WAV parser", at: chunkOffset)
/// let end = try c.add(start, try c.add(size, size & 1, "data chunk size"), "end of the data chunk")
/// let n = try c.allocationCount(count, bytesEach: 4, available: r.remaining, limit: limits.maximumTableEntries, "'stsz' sample count")
/// ```
public struct InputArithmetic: Sendable {
    /// The component named in errors, e.g. `"WAV parser"`.
    public var component: String
    /// The byte offset of the structure the values come from, if any.
    public var offset: Int64?
    /// The error code thrown (``AudioError/Code/invalidData`` for file bytes,
    /// ``AudioError/Code/invalidArgument`` for command-line values).
    public var code: AudioError.Code

    /// Creates a checker for values read by `component` from the structure at `offset`.
    public init(_ component: String, at offset: Int64? = nil, code: AudioError.Code = .invalidData) {
        self.component = component
        self.offset = offset
        self.code = code
    }

    /// The same checker for a structure at another offset.
    public func at(_ offset: Int64?) -> InputArithmetic {
        var c = self
        c.offset = offset
        return c
    }

    /// The error this checker throws, with `message`.
    public func error(_ message: String) -> AudioError {
        AudioError(code, component: component, message, offset: offset,
                   osStatus: code == .invalidData ? 0x6474_613F : nil) // 'dta?'
    }

    // MARK: Integer operations

    /// `a + b`, or an error naming `field` when it overflows `T`.
    public func add<T: FixedWidthInteger>(_ a: T, _ b: T, _ field: @autoclosure () -> String) throws(AudioError) -> T {
        let (r, o) = a.addingReportingOverflow(b)
        if o { throw error("\(field()) is out of range (\(a) + \(b) overflows)") }
        return r
    }

    /// `a - b`, or an error naming `field` when it overflows `T` (for unsigned `T`: when b > a).
    public func subtract<T: FixedWidthInteger>(_ a: T, _ b: T, _ field: @autoclosure () -> String) throws(AudioError) -> T {
        let (r, o) = a.subtractingReportingOverflow(b)
        if o { throw error("\(field()) is out of range (\(a) - \(b) overflows)") }
        return r
    }

    /// `a * b`, or an error naming `field` when it overflows `T`.
    public func multiply<T: FixedWidthInteger>(_ a: T, _ b: T, _ field: @autoclosure () -> String) throws(AudioError) -> T {
        let (r, o) = a.multipliedReportingOverflow(by: b)
        if o { throw error("\(field()) is out of range (\(a) × \(b) overflows)") }
        return r
    }

    /// `value` as `T`, or an error naming `field` when it does not fit.
    public func convert<T: FixedWidthInteger, U: BinaryInteger>(_ value: U, to: T.Type = T.self, _ field: @autoclosure () -> String) throws(AudioError) -> T {
        guard let r = T(exactly: value) else { throw error("\(field()) \(value) is out of range") }
        return r
    }

    /// `value` when it lies in `range`, else an error naming `field` and the range.
    @discardableResult
    public func check<T: Comparable>(_ value: T, in range: ClosedRange<T>, _ field: @autoclosure () -> String) throws(AudioError) -> T {
        guard range.contains(value) else {
            throw error("\(field()) \(value) is out of range (\(range.lowerBound)...\(range.upperBound))")
        }
        return value
    }

    /// A count of items read from input that sizes an allocation, checked before anything is
    /// allocated: it must not be negative, must not exceed `limit`, and `count × bytesEach`
    /// must not exceed the `available` bytes that are to hold the items (a table that claims
    /// more entries than its box has bytes is refused, so memory is bounded by input present).
    public func allocationCount<U: BinaryInteger>(_ count: U, bytesEach: Int, available: Int, limit: Int,
                                                  _ field: @autoclosure () -> String) throws(AudioError) -> Int {
        guard let n = Int(exactly: count), n >= 0 else { throw error("\(field()) \(count) is out of range") }
        guard n <= limit else {
            throw AudioError(.limitExceeded, component: component, "\(field()) \(n) is more than the limit of \(limit)", offset: offset)
        }
        let (bytes, o) = n.multipliedReportingOverflow(by: max(0, bytesEach))
        guard !o, bytes <= available else {
            throw error("\(field()) \(n) needs \(o ? "more than \(Int.max)" : String(bytes)) bytes but only \(available) are present")
        }
        return n
    }

    // MARK: Floating point

    /// `value` when it is a finite number in `range`, else an error naming `field`.
    @discardableResult
    public func finite(_ value: Double, in range: ClosedRange<Double>, _ field: @autoclosure () -> String) throws(AudioError) -> Double {
        guard value.isFinite else { throw error("\(field()) \(value) is not a finite number") }
        guard range.contains(value) else {
            throw error("\(field()) \(value) is out of range (\(range.lowerBound)...\(range.upperBound))")
        }
        return value
    }

    /// `value` rounded toward zero as `T`, or an error naming `field` when it is NaN, infinite
    /// or does not fit (where `T(value)` would trap).
    public func convert<T: FixedWidthInteger>(_ value: Double, to: T.Type = T.self, _ field: @autoclosure () -> String) throws(AudioError) -> T {
        guard let r = InputArithmetic.exactOrNil(value.rounded(.towardZero), T.self) else {
            throw error("\(field()) \(value) is out of range")
        }
        return r
    }

    /// `value` rounded toward zero and clamped to `T`'s range (NaN gives 0): for durations and
    /// positions where "beyond the end" means "the end" (`afplay -t 1e308`).
    public static func saturating<T: FixedWidthInteger>(_ value: Double, as: T.Type = T.self) -> T {
        if value.isNaN { return 0 }
        if let r = exactOrNil(value.rounded(.towardZero), T.self) { return r }
        return value < 0 ? T.min : T.max
    }

    /// A frame count for `seconds` at `sampleRate`, clamped to `0...Int64.max` (NaN gives 0).
    public static func frames(seconds: Double, sampleRate: Double) -> Int64 {
        max(0, saturating(seconds * sampleRate, as: Int64.self))
    }

    private static func exactOrNil<T: FixedWidthInteger>(_ v: Double, _: T.Type) -> T? {
        guard v.isFinite else { return nil }
        return T(exactly: v)
    }
}
