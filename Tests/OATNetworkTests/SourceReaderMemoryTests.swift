@testable import OATNetwork
import OATTestSupport
import Dispatch
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The network thread's FIFO (``SourceReader``) lets go of the bytes the decoder took: a live
/// stream's taken chunks stayed referenced in the FIFO's array until it was next compacted (after
/// 256 items), a few hundred KB of a 128 kbps stream's peak RSS.
@Suite struct SourceReaderMemoryTests {
    /// True when `bytes` is the only reference to its storage (writing to it needs no copy).
    static func isUnique(_ bytes: inout [UInt8]) -> Bool {
        let shared = bytes.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
        let writable = bytes.withUnsafeMutableBufferPointer { UnsafeRawPointer($0.baseAddress) }
        return shared == writable
    }

    /// The next audio bytes the reader hands over (other items skipped), held only by the caller.
    static func nextBytes(_ reader: SourceReader) -> ([UInt8], Int64)? {
        while let item = reader.next() {
            if case .bytes(let b, let o) = item { return (b, o) }
        }
        return nil
    }

    /// A reader over a file of `chunks` reads of 32 KiB, once the whole file is in its FIFO.
    static func filledReader(chunks: Int) throws -> (SourceReader, ScratchDirectory) {
        let dir = try ScratchDirectory("source-reader")
        let path = dir.path + "/a.bin"
        #expect(writeFile(path, (0..<(chunks * SourceReader.chunkBytes)).map { UInt8($0 % 251) }))
        let reader = SourceReader(url: path, source: FileByteSource(path: path), at: 0, maximumBytes: 4 << 20, data: DispatchSemaphore(value: 0))
        let deadline = DispatchTime.now() + .seconds(20)
        while !reader.isFinished && DispatchTime.now() < deadline { usleep(2000) }
        #expect(reader.isFinished, "the reader read the whole file")
        return (reader, dir)
    }

    @Test func takenBytesAreNotKeptByTheFIFO() throws {
        let (reader, dir) = try Self.filledReader(chunks: 4)
        defer { reader.cancel(); _ = dir }
        var chunks = 0
        var offset: Int64 = 0
        while case (var b, let o)? = Self.nextBytes(reader) {
            #expect(o == offset)
            offset += Int64(b.count)
            chunks += 1
            let unique = Self.isUnique(&b)   // not inside #expect, which keeps a copy to print
            #expect(unique, "chunk \(chunks) (offset \(o), \(b.count) bytes) is still referenced by the reader after next()")
        }
        #expect(chunks >= 4)
        #expect(offset == Int64(4 * SourceReader.chunkBytes))
    }

    @Test func droppedBytesAreNotKeptByTheFIFO() throws {
        let (reader, dir) = try Self.filledReader(chunks: 4)
        defer { reader.cancel(); _ = dir }
        // Take the opening, peek at the first chunk (held by the test and the FIFO), put it back.
        while let item = reader.next() {
            if case .bytes = item { reader.pushBack(item); break }
        }
        guard case .bytes(var first, let o)? = reader.next() else { Issue.record("no bytes"); return }
        reader.pushBack(.bytes(first, offset: o))
        // Skip over the first two chunks: the FIFO must let go of them.
        reader.drop(before: Int64(2 * SourceReader.chunkBytes))
        let unique = Self.isUnique(&first)
        #expect(unique, "a dropped chunk is still referenced by the reader")
        guard case .bytes(_, let next)? = reader.next() else { Issue.record("no bytes after the drop"); return }
        #expect(next == Int64(2 * SourceReader.chunkBytes))
    }
}
