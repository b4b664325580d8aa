import OATCore
import OATNetwork
@testable import OATStreaming
import Testing

/// How queue entries play (``EntryClassifier``): which are expanded as playlists, which play as
/// HLS, and the bound on playlists without a playlist extension. No network, no thread.
@Suite struct EngineItemTimelineTests {
    /// By extension: PLS and M3U are expanded; an HLS presentation, once known, is not.
    @Test func playlistsByExtensionUntilKnownAsHLS() {
        var e = EntryClassifier()
        #expect(e.isPlaylist("http://h/list.pls"))
        #expect(e.isPlaylist("http://h/list.m3u?x=1"))
        #expect(e.isPlaylist("http://h/live.m3u8"))
        #expect(!e.isPlaylist("http://h/a.mp3"))
        #expect(e.isHLS("http://h/live.m3u8"))
        #expect(!e.isHLS("http://h/list.m3u"))
        e.markHLS("http://h/live.m3u8")
        #expect(!e.isPlaylist("http://h/live.m3u8"), "an HLS presentation plays as one item")
        #expect(e.isHLS("http://h/live.m3u8"))
    }

    /// A URL without a playlist extension found to be a playlist by its Content-Type or content.
    @Test func playlistsFoundByContent() {
        var e = EntryClassifier()
        #expect(!e.isPlaylist("http://h/stream"))
        e.found(.pls, at: "http://h/stream")
        #expect(e.isPlaylist("http://h/stream"))
        e.found(.hls, at: "http://h/radio")
        #expect(!e.isPlaylist("http://h/radio"))
        #expect(e.isHLS("http://h/radio"))
    }

    /// Playlists without an extension that list each other stop after 16 expansions with a
    /// limit error naming the URL; playlists with an extension are not counted.
    @Test func expansionsWithoutExtensionAreBounded() throws {
        var e = EntryClassifier()
        for _ in 0..<100 { try e.countExpansion(of: "http://h/list.pls") }
        for _ in 0..<EntryClassifier.maximumContentExpansions { try e.countExpansion(of: "http://h/a") }
        let error = #expect(throws: AudioError.self) { try e.countExpansion(of: "http://h/b") }
        #expect(error?.code == .limitExceeded)
        #expect(error?.message.contains("http://h/b") == true)
    }
}
