import OATCore

/// One track's samples, kept compact: sizes (or one constant size), one offset and first-sample
/// index per chunk (or per `trun` run of a fragment), and run-length sample durations.
struct MP4SampleTable: Equatable {
    var sampleCount = 0
    /// Size of the first ``constantCount`` samples (a constant-size `stsz`, or fragments with
    /// a default size): kept as one value, never expanded into an array, so a count the input
    /// claims costs no memory until per-sample sizes are actually present in the input.
    var constantSize: UInt32 = 0
    /// Samples at the start that all have ``constantSize``.
    var constantCount = 0
    /// Sizes of the samples from ``constantCount`` on.
    var sizes: [UInt32] = []
    var chunkOffsets: [Int64] = []
    /// Index of the first sample of each chunk (non-decreasing).
    var chunkFirstSample: [Int] = []
    var durationCounts: [UInt32] = []
    var durationDeltas: [UInt32] = []
    var totalBytes: Int64 = 0
    var maxSize: UInt32 = 0
    /// Sum of the durations of the samples, in the media timescale.
    var totalDuration: Int64 = 0

    func size(_ i: Int) -> UInt32 { i < constantCount ? constantSize : sizes[i - constantCount] }

    /// Where the delivery of samples stands.
    struct Cursor: Equatable {
        var sample = 0
        var chunk = 0
        var offset: Int64 = 0
        var durationRun = 0
        var durationLeft: UInt32 = 0
    }

    /// The chunk holding sample `s` (the last chunk whose first sample is at most `s`).
    func chunk(containing s: Int) -> Int {
        var lo = 0, hi = chunkFirstSample.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if chunkFirstSample[mid] <= s { lo = mid } else { hi = mid - 1 }
        }
        return lo
    }

    /// A cursor on sample `s` (`s` may equal `sampleCount`: past the end).
    func cursor(at s: Int) -> Cursor {
        var c = Cursor(sample: s)
        guard !chunkOffsets.isEmpty else { return c }
        let target = min(s, max(0, sampleCount - 1))
        c.chunk = chunk(containing: target)
        var offset = chunkOffsets[c.chunk]
        var i = chunkFirstSample[c.chunk]
        if i < min(s, constantCount) {
            // Within the constant-size samples: no walk (a chunk may claim 64 Mi of them).
            let upto = min(s, constantCount)
            offset += Int64(upto - i) * Int64(constantSize)
            i = upto
        }
        while i < s {
            offset += Int64(size(i))
            i += 1
        }
        c.offset = offset
        var left = s
        var run = 0
        while run < durationCounts.count && left >= Int(durationCounts[run]) {
            left -= Int(durationCounts[run])
            run += 1
        }
        c.durationRun = run
        c.durationLeft = run < durationCounts.count ? durationCounts[run] - UInt32(left) : 0
        return c
    }

    /// Absolute offset of sample `s`.
    func offset(ofSample s: Int) -> Int64 { cursor(at: s).offset }

    /// Duration of the sample under the cursor (0 when the table gives none).
    func duration(_ c: Cursor) -> UInt32 {
        c.durationRun < durationDeltas.count && c.durationLeft > 0 ? durationDeltas[c.durationRun] : 0
    }

    /// Moves the cursor to the next sample.
    func advance(_ c: inout Cursor) {
        c.offset += Int64(size(c.sample))
        c.sample += 1
        if c.durationLeft > 1 { c.durationLeft -= 1 } else if c.durationRun < durationCounts.count {
            c.durationRun += 1
            c.durationLeft = c.durationRun < durationCounts.count ? durationCounts[c.durationRun] : 0
        }
        var moved = false
        while c.chunk + 1 < chunkFirstSample.count && chunkFirstSample[c.chunk + 1] <= c.sample {
            c.chunk += 1
            moved = true
        }
        if moved { c.offset = chunkOffsets[c.chunk] }
    }

    /// Samples from the cursor to the end of its chunk.
    func samplesLeftInChunk(_ c: Cursor) -> Int {
        let next = c.chunk + 1 < chunkFirstSample.count ? chunkFirstSample[c.chunk + 1] : sampleCount
        return max(0, next - c.sample)
    }

    /// Moves the cursor `n` samples on, inside its chunk (`n` at most ``samplesLeftInChunk(_:)``);
    /// constant sample sizes only.
    func advance(_ c: inout Cursor, by n: Int) {
        guard n > 0 else { return }
        c.offset += Int64(n) * Int64(constantSize)
        c.sample += n
        var left = n
        while left > 0 && c.durationRun < durationCounts.count {
            if left < Int(c.durationLeft) {
                c.durationLeft -= UInt32(left)
                left = 0
            } else {
                left -= Int(c.durationLeft)
                c.durationRun += 1
                c.durationLeft = c.durationRun < durationCounts.count ? durationCounts[c.durationRun] : 0
            }
        }
        var moved = false
        while c.chunk + 1 < chunkFirstSample.count && chunkFirstSample[c.chunk + 1] <= c.sample {
            c.chunk += 1
            moved = true
        }
        if moved { c.offset = chunkOffsets[c.chunk] }
    }

    /// Makes every sample `size` bytes (QuickTime PCM, whose `stsz` may count in other units).
    mutating func setConstantSize(_ size: UInt32) {
        sizes = []
        constantSize = size
        constantCount = sampleCount
        totalBytes = Int64(sampleCount) * Int64(size)
        maxSize = sampleCount > 0 ? size : 0
    }

    /// The first sample at or after absolute offset `offset` (for a resume without a packet).
    func firstSample(atOrAfter offset: Int64) -> Int {
        if sizes.isEmpty && constantSize > 0 && !chunkOffsets.isEmpty {
            // Constant sizes: the chunk holding the offset, then arithmetic.
            for k in chunkOffsets.indices {
                let first = chunkFirstSample[k]
                let next = k + 1 < chunkFirstSample.count ? chunkFirstSample[k + 1] : sampleCount
                let start = chunkOffsets[k], end = start + Int64(next - first) * Int64(constantSize)
                if offset <= start { return first }
                if offset < end {
                    let into = (offset - start + Int64(constantSize) - 1) / Int64(constantSize)
                    return first + Int(into)
                }
            }
            return sampleCount
        }
        var c = cursor(at: 0)
        while c.sample < sampleCount && c.offset < offset { advance(&c) }
        return c.sample
    }

    /// Adds `count` samples lasting `delta` each; refuses (with `c`'s component and offset) a
    /// total duration beyond Int64 (an `stts` entry (2^32-1, 2^32-1) alone is 2^64 - 2^33 + 1).
    mutating func appendDurations(count: UInt32, delta: UInt32, _ c: InputArithmetic) throws(AudioError) {
        guard count > 0 else { return }
        let total = try c.add(totalDuration, try c.multiply(Int64(count), Int64(delta), "sample count × duration"), "total duration")
        if let last = durationDeltas.last, last == delta,
           case (let merged, false) = durationCounts[durationCounts.count - 1].addingReportingOverflow(count) {
            durationCounts[durationCounts.count - 1] = merged
        } else {
            // A run longer than 2^32-1 samples continues in a new entry.
            durationCounts.append(count)
            durationDeltas.append(delta)
        }
        totalDuration = total
    }

    /// Appends a contiguous run of samples (a fragment's `trun`); `durations` is per sample, or
    /// empty when every sample lasts `defaultDuration`.
    mutating func appendRun(offset: Int64, sizes newSizes: MP4SizeRun, durations: [UInt32], defaultDuration: UInt32,
                            _ c: InputArithmetic) throws(AudioError) {
        guard newSizes.count > 0 else { return }
        var bytes: Int64 = 0
        switch newSizes {
        case .constant(let size, let n):
            bytes = Int64(size) * Int64(n)
            if sizes.isEmpty && (constantCount == 0 || constantSize == size) {
                // Still one constant size: extend it without allocating per sample.
                constantSize = size
                constantCount += n
            } else {
                sizes += repeatElement(size, count: n)
            }
            if n > 0 { maxSize = max(maxSize, size) }
        case .explicit(let list):
            sizes += list
            for s in list {
                bytes += Int64(s)
                maxSize = max(maxSize, s)
            }
        }
        chunkOffsets.append(offset)
        chunkFirstSample.append(sampleCount)
        sampleCount += newSizes.count
        totalBytes = try c.add(totalBytes, bytes, "total sample bytes")
        if durations.isEmpty {
            try appendDurations(count: try c.convert(newSizes.count, to: UInt32.self, "'trun' sample count"), delta: defaultDuration, c)
        } else {
            for d in durations { try appendDurations(count: 1, delta: d, c) }
        }
    }
}

/// The sizes of one run of samples: one size for all (`stsz` constant, `tfhd` default size), or
/// one per sample (read from the input, so bounded by the bytes present).
enum MP4SizeRun: Equatable {
    case constant(UInt32, count: Int)
    case explicit([UInt32])

    var count: Int {
        switch self {
        case .constant(_, let n): n
        case .explicit(let list): list.count
        }
    }
}

extension MP4 {
    /// Builds a sample table from an `stbl` box.
    static func parseSampleTable(_ stbl: Box, limits: ParserLimits) throws -> MP4SampleTable {
        var table = MP4SampleTable()
        let kids = try children(stbl.payload, base: stbl.payloadOffset)
        // Sample sizes.
        if let stsz = kids.first(where: { $0.type == "stsz" }) {
            try read(stsz) { r in
                try r.skip(4)
                let constant = try r.u32be()
                let count = try r.u32be()
                if constant != 0 {
                    guard Int(count) <= limits.maximumTableEntries else {
                        throw limitExceeded(component, "'stsz' has \(count) samples, more than the limit of \(limits.maximumTableEntries)", at: stsz.offset)
                    }
                    table.constantSize = constant
                    table.constantCount = Int(count)
                    table.sampleCount = Int(count)
                    table.totalBytes = Int64(constant) * Int64(count)
                    table.maxSize = count > 0 ? constant : 0
                } else {
                    let n = try checkEntries(count, entryBytes: 4, in: r, box: "stsz", limits: limits)
                    var sizes = [UInt32](repeating: 0, count: n)
                    var total: Int64 = 0, largest: UInt32 = 0
                    for i in 0..<n {
                        let s = try r.u32be()
                        sizes[i] = s
                        total += Int64(s)
                        largest = max(largest, s)
                    }
                    table.sizes = sizes
                    table.sampleCount = n
                    table.totalBytes = total
                    table.maxSize = largest
                }
            }
        } else if let stz2 = kids.first(where: { $0.type == "stz2" }) {
            try read(stz2) { r in
                try r.skip(7)
                let field = Int(try r.u8())
                let count = try r.u32be()
                guard field == 4 || field == 8 || field == 16 else {
                    throw invalidData(component, "'stz2' field size \(field) is not 4, 8 or 16", at: stz2.payloadOffset + 7)
                }
                let n = Int(count)
                guard n <= limits.maximumTableEntries else {
                    throw limitExceeded(component, "'stz2' has \(n) samples, more than the limit of \(limits.maximumTableEntries)", at: stz2.offset)
                }
                guard (n * field + 7) / 8 <= r.remaining else {
                    throw invalidData(component, "'stz2' claims \(n) entries but holds only \(r.remaining) bytes", at: r.absoluteOffset)
                }
                var sizes = [UInt32](repeating: 0, count: n)
                var total: Int64 = 0, largest: UInt32 = 0
                var i = 0
                while i < n {
                    let s: UInt32
                    switch field {
                    case 4:
                        let b = try r.peekU8()
                        s = i & 1 == 0 ? UInt32(b >> 4) : UInt32(b & 0xF)
                        if i & 1 == 1 { try r.skip(1) }
                    case 8: s = UInt32(try r.u8())
                    default: s = UInt32(try r.u16be())
                    }
                    sizes[i] = s
                    total += Int64(s)
                    largest = max(largest, s)
                    i += 1
                }
                table.sizes = sizes
                table.sampleCount = n
                table.totalBytes = total
                table.maxSize = largest
            }
        }
        // Chunk offsets.
        var chunkOffsets: [Int64] = []
        if let co = kids.first(where: { $0.type == "stco" || $0.type == "co64" }) {
            let wide = co.type == "co64"
            try read(co) { r in
                try r.skip(4)
                let n = try checkEntries(try r.u32be(), entryBytes: wide ? 8 : 4, in: r, box: co.type.description, limits: limits)
                chunkOffsets = [Int64](repeating: 0, count: n)
                for i in 0..<n {
                    let v = wide ? try r.u64be() : UInt64(try r.u32be())
                    guard v < 1 << 60 else { throw invalidData(component, "chunk offset \(v) is out of range", at: r.absoluteOffset - 8) }
                    chunkOffsets[i] = Int64(v)
                }
            }
        }
        // Samples per chunk.
        var firsts: [Int] = []
        if let stsc = kids.first(where: { $0.type == "stsc" }), !chunkOffsets.isEmpty, table.sampleCount > 0 {
            try read(stsc) { r in
                try r.skip(4)
                let n = try checkEntries(try r.u32be(), entryBytes: 12, in: r, box: "stsc", limits: limits)
                var entryFirst: [UInt32] = [], entrySamples: [UInt32] = []
                entryFirst.reserveCapacity(n)
                entrySamples.reserveCapacity(n)
                for _ in 0..<n {
                    let first = try r.u32be()
                    let samples = try r.u32be()
                    try r.skip(4)
                    guard first >= 1, first > (entryFirst.last ?? 0) else {
                        throw invalidData(component, "'stsc' first chunk \(first) is not increasing", at: r.absoluteOffset - 12)
                    }
                    entryFirst.append(first)
                    entrySamples.append(samples)
                }
                var e = 0
                var next = 0
                firsts.reserveCapacity(chunkOffsets.count)
                for c in 0..<chunkOffsets.count {
                    guard next < table.sampleCount else { break }
                    while e + 1 < entryFirst.count && Int(entryFirst[e + 1]) <= c + 1 { e += 1 }
                    guard !entryFirst.isEmpty, Int(entryFirst[e]) <= c + 1 else { break }
                    firsts.append(next)
                    next += Int(entrySamples[e])
                }
                chunkOffsets.removeSubrange(firsts.count...)
                if next < table.sampleCount {
                    // The chunks hold fewer samples than stsz lists: keep what the chunks place.
                    table.sampleCount = next
                    if next < table.constantCount { table.constantCount = next }
                    if !table.sizes.isEmpty { table.sizes.removeSubrange(max(0, next - table.constantCount)...) }
                    table.totalBytes = 0
                    table.maxSize = 0
                    for i in 0..<next {
                        table.totalBytes += Int64(table.size(i))
                        table.maxSize = max(table.maxSize, table.size(i))
                    }
                }
            }
        } else {
            chunkOffsets = []
            if table.sampleCount > 0 {
                table.sampleCount = 0
                table.constantCount = 0
                table.sizes = []
                table.totalBytes = 0
                table.maxSize = 0
            }
        }
        table.chunkOffsets = chunkOffsets
        table.chunkFirstSample = firsts
        // Durations.
        if let stts = kids.first(where: { $0.type == "stts" }) {
            try read(stts) { r in
                try r.skip(4)
                let n = try checkEntries(try r.u32be(), entryBytes: 8, in: r, box: "stts", limits: limits)
                let c = InputArithmetic(component, at: stts.offset)
                for _ in 0..<n {
                    let count = try r.u32be()
                    let delta = try r.u32be()
                    try table.appendDurations(count: count, delta: delta, c)
                }
            }
        }
        return table
    }
}
