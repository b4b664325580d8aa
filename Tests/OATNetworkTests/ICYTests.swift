import OATCore
import OATNetwork
import Testing

@Suite struct ICYTests {
    /// An ICY stream: `audio` with a metadata block after every `metaint` bytes (`blocks[i]`, or empty).
    static func stream(audio: [UInt8], metaint: Int, blocks: [String?]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        var k = 0
        while i < audio.count {
            let n = min(metaint, audio.count - i)
            out += audio[i..<(i + n)]
            i += n
            if n == metaint {
                if k < blocks.count, let text = blocks[k] {
                    var b = Array(text.utf8)
                    let count = (b.count + 15) / 16
                    b += [UInt8](repeating: 0, count: count * 16 - b.count)
                    out += [UInt8(count)] + b
                } else {
                    out.append(0)
                }
                k += 1
            }
        }
        return out
    }

    static func run(_ input: [UInt8], splits: [Int], metaint: Int) throws -> ([UInt8], [StreamMetadata]) {
        var d = try ICYDemuxer(metaInterval: metaint)
        var audio: [UInt8] = []
        var meta: [StreamMetadata] = []
        var start = 0
        for end in splits + [input.count] where end >= start {
            input[start..<end].withUnsafeBytes { d.feed($0, audio: { audio += $0 }, metadata: { meta.append($0) }) }
            start = end
        }
        return (audio, meta)
    }

    @Test func everySplitGivesTheSameOutput() throws {
        let audio = (0..<200).map { UInt8($0) }
        let input = Self.stream(audio: audio, metaint: 32, blocks: [nil, "StreamTitle='One';", nil, "StreamTitle='Two';StreamUrl='http://x';", "StreamTitle='';"])
        let (whole, wholeMeta) = try Self.run(input, splits: [], metaint: 32)
        #expect(whole == audio)
        #expect(wholeMeta.map(\.title) == ["One", "Two", ""])
        #expect(wholeMeta.map(\.audioByteOffset) == [64, 128, 160])
        #expect(wholeMeta[1].url == "http://x")
        for a in 0...input.count {
            for b in stride(from: a, through: input.count, by: 7) {
                let (got, meta) = try Self.run(input, splits: [a, b], metaint: 32)
                #expect(got == audio, "split \(a), \(b)")
                #expect(meta == wholeMeta, "split \(a), \(b)")
            }
        }
        let bytewise = try Self.run(input, splits: Array(0..<input.count), metaint: 32)
        #expect(bytewise.0 == audio)
        #expect(bytewise.1 == wholeMeta)
    }

    @Test func titlesWithQuotesAndSemicolonsSurvive() {
        let m = ICYDemuxer.parse(Array("StreamTitle='Guns N' Roses - Sweet Child o' Mine; Live';StreamUrl='http://a/b?c=1;d=2';\0\0\0".utf8))
        #expect(m?.title == "Guns N' Roses - Sweet Child o' Mine; Live")
        #expect(m?.url == "http://a/b?c=1;d=2")
        let tricky = ICYDemuxer.parse(Array("StreamTitle='It's';done';".utf8))
        #expect(tricky?.title == "It's';done")
    }

    @Test func missingTerminatorsAndPaddingAreTolerated() {
        #expect(ICYDemuxer.parse(Array("StreamTitle='No semicolon'".utf8))?.title == "No semicolon")
        #expect(ICYDemuxer.parse(Array("StreamTitle='Unclosed;".utf8))?.title == "Unclosed")
        #expect(ICYDemuxer.parse(Array("StreamTitle=Bare;".utf8))?.title == "Bare")
        #expect(ICYDemuxer.parse(Array("StreamTitle='Padded';\0\0\0\0\0\0\0".utf8))?.title == "Padded")
        #expect(ICYDemuxer.parse([0, 0, 0, 0]) == nil)
        #expect(ICYDemuxer.parse(Array("no pairs at all".utf8)) == nil)
        #expect(ICYDemuxer.parse([0x53, 0x01, 0x02, 0x3D]) == nil)
    }

    @Test func charsetsAreDetectedAndCanBeOverridden() {
        let utf8 = Array("StreamTitle='Björk – Jóga';".utf8)
        #expect(ICYDemuxer.parse(utf8)?.title == "Björk – Jóga")
        let latin1: [UInt8] = Array("StreamTitle='Bj".utf8) + [0xF6] + Array("rk';".utf8)
        #expect(ICYDemuxer.parse(latin1)?.title == "Björk")
        let cp1252: [UInt8] = Array("StreamTitle='".utf8) + [0x93] + Array("Hi".utf8) + [0x94, 0x20, 0x96, 0x20, 0x80] + Array("';".utf8)
        #expect(ICYDemuxer.parse(cp1252)?.title == "\u{201C}Hi\u{201D} \u{2013} \u{20AC}")
        #expect(ICYDemuxer.parse(cp1252, charset: .latin1)?.title == "\u{93}Hi\u{94} \u{96} \u{80}")
        #expect(ICYDemuxer.parse(utf8, charset: .latin1)?.title != "Björk – Jóga")
        #expect(ICYDemuxer.parse(latin1, charset: .utf8)?.title == "Bj\u{FFFD}rk")
    }

    @Test func intervalsAreValidated() {
        #expect(throws: AudioError.self) { _ = try ICYDemuxer(metaInterval: 0) }
        #expect(throws: AudioError.self) { _ = try ICYDemuxer(metaInterval: -5) }
        #expect(throws: AudioError.self) { _ = try ICYDemuxer(metaInterval: 1 << 24) }
    }

    @Test func theLargestBlockAndGarbageBlocksAreHandled() throws {
        let audio = [UInt8](repeating: 7, count: 100)
        let title = String(repeating: "z", count: 255 * 16 - 15)
        var input = Array(audio[0..<50])
        let text = Array("StreamTitle='\(title)';".utf8)
        input += [255] + text
        input += [UInt8](repeating: 0, count: 255 * 16 - text.count)
        input += audio[50..<100]
        input += [1] + [UInt8](repeating: 0x01, count: 16)
        var d = try ICYDemuxer(metaInterval: 50)
        var out: [UInt8] = []
        var meta: [StreamMetadata] = []
        input.withUnsafeBytes { d.feed($0, audio: { out += $0 }, metadata: { meta.append($0) }) }
        #expect(out == audio)
        #expect(meta.count == 1)
        #expect(meta.first?.title == title)
        #expect(d.invalidBlockCount == 1)
        #expect(d.blockCount == 2)
    }
}
