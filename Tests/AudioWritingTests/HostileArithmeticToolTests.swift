import OATTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 27 §2: a CAF `pakt` claiming about 2^62 valid frames with priming, and an MP4 whose
/// version-1 `elst` lasts about 2^54 ticks, made afinfo trap (a duration formatted through a
/// conversion past Int64). Every afinfo mode now ends with a clean exit.
@Suite(.serialized) struct HostileArithmeticToolTests {
    static func be32(_ b: [UInt8], _ i: Int) -> Int { b[i..<(i + 4)].reduce(0) { $0 << 8 | Int($1) } }
    static func put(_ b: inout [UInt8], _ i: Int, _ value: UInt64, bytes: Int) {
        for k in 0..<bytes { b[i + k] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(bytes - 1 - k))) }
    }
    static func find(_ b: [UInt8], _ tag: String) -> Int? {
        let t = Array(tag.utf8)
        guard b.count >= 4 else { return nil }
        for i in 0...(b.count - 4) where b[i] == t[0] && b[i + 1] == t[1] && b[i + 2] == t[2] && b[i + 3] == t[3] { return i }
        return nil
    }

    /// The corpus ALAC CAF with its `pakt` claiming 2^62 - 5 valid frames and 2112 priming frames.
    static func paktNear2To62() throws -> [UInt8] {
        var b = try #require(Corpus.read(try TestResource.corpusFile("ffmpeg-generated/caf/alac_st.caf")))
        let tag = try #require(find(b, "pakt"))
        let body = tag + 12
        put(&b, body + 8, (1 << 62) - 5, bytes: 8)
        put(&b, body + 16, 2112, bytes: 4)
        return b
    }

    /// The corpus fast-start AAC M4A with its edit list rewritten as version 1 (64-bit fields),
    /// the segment lasting 2^54 + 5 ticks; parents' sizes and chunk offsets follow the 8 bytes.
    static func elstNear2To54() throws -> [UInt8] {
        var b = try #require(Corpus.read(try TestResource.corpusFile("ffmpeg-generated/m4a/aac_faststart.m4a")))
        let start = try #require(find(b, "elst")) - 4
        let size = be32(b, start)
        let mediaTime = UInt64(be32(b, start + 20))
        var box: [UInt8] = [0, 0, 0, 36] + Array("elst".utf8) + [1, 0, 0, 0, 0, 0, 0, 1]
        box += [UInt8](repeating: 0, count: 20)
        put(&box, 16, (1 << 54) + 5, bytes: 8)
        put(&box, 24, mediaTime, bytes: 8)
        box[32] = 0; box[33] = 1; box[34] = 0; box[35] = 0
        b.replaceSubrange(start..<(start + size), with: box)
        var i = 0
        var end = b.count
        while i + 8 <= end {
            let s = be32(b, i)
            guard s >= 8 else { break }
            let t = String(decoding: b[(i + 4)..<(i + 8)], as: UTF8.self)
            if ["moov", "trak", "edts", "mdia", "minf", "stbl"].contains(t) && i < start && start < i + s {
                put(&b, i, UInt64(s + 8), bytes: 4)
                end = i + s + 8
                i += 8
            } else {
                i += s
            }
        }
        let stco = try #require(find(b, "stco"))
        for k in 0..<be32(b, stco + 8) {
            let p = stco + 12 + 4 * k
            put(&b, p, UInt64(be32(b, p) + 8), bytes: 4)
        }
        return b
    }

    @Test(.requires(TestResource.corpusMissing), arguments: ["pakt-2^62.caf", "elst-v1-2^54.m4a"])
    func afinfoSurvivesHugeDurations(_ name: String) throws {
        let scratch = Scratch("arith")
        defer { scratch.cleanup() }
        let input = scratch.path(String(name.filter { $0 != "^" }))
        try HostileInputToolTests.write(name.hasSuffix(".caf") ? try Self.paktNear2To62() : try Self.elstNear2To54(), to: input)
        for args in [[input], ["--json", input], ["--decode", input], ["--json", "--decode", input]] {
            let o = try HostileInputToolTests.run("afinfo", args, in: scratch.dir, timeout: 120)
            #expect(o.signal == nil && !o.timedOut, "afinfo \(args.dropLast().joined(separator: " ")) \(name): \(o)")
            #expect(o.exitCode == 0 || o.exitCode == 1, "afinfo \(args.dropLast().joined(separator: " ")) \(name): \(o)")
        }
    }
}
