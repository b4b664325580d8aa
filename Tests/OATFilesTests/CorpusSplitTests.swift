import OATFiles
import OATTestSupport
import Testing

/// Every corpus file must give the same events whole, one byte at a time, in 7-byte chunks and
/// at seeded random splits.
@Suite struct CorpusSplitTests {
    static let files = Corpus.audioFiles()

    /// The argument list comes from the corpus: it must not be empty where the corpus is.
    @Test(.requires(TestResource.corpusMissing)) func corpusListIsNotEmpty() throws {
        _ = try TestResource.corpusRoot()
        #expect(!Self.files.isEmpty, "no corpus files found")
    }

    @Test(arguments: files)
    func sameEventsForEverySplit(_ file: String) throws {
        let path = Corpus.root! + "/" + file
        let bytes = try #require(Corpus.read(path))
        let whole = StreamDigest.of(bytes, split: .whole)
        let splits: [StreamDigest.Split] = [
            .chunks(1), .chunks(7), .random(seed: 1, maxChunk: 4096), .random(seed: 2, maxChunk: 37),
        ]
        for split in splits {
            let other = StreamDigest.of(bytes, split: split)
            #expect(other == whole, "\(file): \(split) differs from whole: \(whole.firstDifference(from: other))")
        }
    }
}
