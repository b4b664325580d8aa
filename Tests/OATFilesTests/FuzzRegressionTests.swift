import OATFiles
import OATTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The inputs in `Fuzz/regressions` (each once crashed a fuzz target, or is a hand-made
/// malformed header) parsed through `AudioFileStream` in the test build: whole, byte by byte and
/// at seeded random splits, with the same events (or the same error) every time. Scripts/test.sh
/// also runs this suite under AddressSanitizer (`.build-asan`), so an out-of-bounds read that
/// does not crash is caught too.
@Suite struct FuzzRegressionTests {
    static let directory = Corpus.packageRoot + "/Fuzz/regressions"
    static let files: [String] = {
        guard let d = opendir(directory) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix(".") || name.hasSuffix(".md") { continue }
            names.append(name)
        }
        return names.sorted()
    }()

    @Test func regressionsArePresent() {
        #expect(Self.files.count >= 6, "\(Self.files)")
    }

    @Test(arguments: files)
    func regressionParsesTheSameForEverySplit(_ file: String) throws {
        let bytes = try #require(Corpus.read(Self.directory + "/" + file))
        let whole = StreamDigest.of(bytes, split: .whole)
        for split: StreamDigest.Split in [.chunks(1), .chunks(7), .random(seed: 3, maxChunk: 600)] {
            let other = StreamDigest.of(bytes, split: split)
            #expect(other == whole, "\(file): \(split) differs from whole: \(whole.firstDifference(from: other))")
        }
    }
}
