import OATCore
import OATNetwork
import OATTestSupport
import Testing

@Suite struct FileByteSourceTests {
    @Test func readsFromAnOffsetToTheEnd() throws {
        let dir = try ScratchDirectory("bytesource")
        let path = dir.path + "/a.bin"
        #expect(writeFile(path, (0..<1000).map { UInt8($0 & 0xFF) }))
        let source = FileByteSource(path: path)
        let info = try source.open(at: 900)
        #expect(info.totalLength == 1000)
        #expect(info.isSeekable)
        var got: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        loop: while true {
            let r = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            switch r {
            case .bytes(let n): got += buffer[0..<n]
            case .end: break loop
            default: Issue.record("unexpected \(r)"); break loop
            }
        }
        #expect(got == (900..<1000).map { UInt8($0 & 0xFF) })
        #expect(source.statistics.bytesDelivered == 100)
    }

    @Test func missingFileNamesThePath() {
        let source = FileByteSource(path: "/nonexistent/x.mp3")
        #expect { _ = try source.open(at: 0) } throws: { ($0 as? AudioError)?.description.contains("/nonexistent/x.mp3") == true }
    }

    @Test func cancelMakesReadThrowCancelled() throws {
        let dir = try ScratchDirectory("bytesource")
        let path = dir.path + "/b.bin"
        #expect(writeFile(path, [1, 2, 3]))
        let source = FileByteSource(path: path)
        _ = try source.open(at: 0)
        source.cancel()
        var buffer = [UInt8](repeating: 0, count: 4)
        #expect { _ = try buffer.withUnsafeMutableBytes { try source.read(into: $0) } } throws: { ($0 as? AudioError)?.code == .cancelled }
    }
}
