import AudioCore
@testable import AudioFiles
import AudioTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Test func mpegDumpScratch() throws {
    guard let p = getenv("OAT_DUMP") else { return }
    let bytes = try #require(Corpus.read(String(cString: p)))
    let s = AudioFileStream()
    var n = 0
    do {
        for e in try s.parse(bytes) + (try s.finish()) {
            switch e {
            case .propertyChanged(let pr): print("prop", pr)
            case .packets(let b):
                for (i, d) in b.packetDescriptions.enumerated() { print("pkt", n, b.packetFileOffsets[i], d.dataByteSize); n += 1 }
            }
        }
    } catch { print("error", error) }
}
@Test func mpegCookieScratch() throws {
    guard let p = getenv("OAT_DUMP") else { return }
    let bytes = try #require(Corpus.read(String(cString: p)))
    let s = AudioFileStream()
    _ = try s.parse(bytes)
    print("cookie", (s.magicCookie ?? []).map { String($0, radix: 16) })
}
