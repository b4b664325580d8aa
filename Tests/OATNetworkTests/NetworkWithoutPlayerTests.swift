import OATCore
import OATFiles
import OATNetwork
import OATTestSupport
import Testing

/// The network layer used alone, as a program that wants packets and titles but no playback
/// would: an ICY stream from a loopback server, read by the byte source the factory picks, typed
/// by the format detector and fed straight to an `AudioFileStream`. This test target does not
/// link the player (OATStreaming), the queue or any device.
@Suite struct NetworkWithoutPlayerTests {
    /// What one pass over a stream gave: packets, their bytes, and the titles with the packet
    /// index they fall on.
    struct Parsed {
        var packets = 0
        var data: [UInt8] = []
        var titles: [(title: String, audioByteOffset: Int64, packet: Int64?)] = []
        var fileType: AudioFileType?
    }

    /// Reads `source` to its end into an AudioFileStream; each title is placed on the packet
    /// timeline by its audio byte offset.
    static func parse(_ source: any ByteSource, info: ByteSourceInfo, url: String) throws -> Parsed {
        var out = Parsed()
        var prefix: [UInt8] = []
        var stream: AudioFileStream?
        var buffer = [UInt8](repeating: 0, count: 3000)   // odd size: frames split across reads
        func feed(_ bytes: [UInt8], _ stream: AudioFileStream) throws {
            try stream.parse(bytes) { event in
                if case .packets(let batch) = event {
                    out.packets += batch.packetCount
                    out.data += batch.data
                }
            }
        }
        while true {
            let r = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            switch r {
            case .bytes(let n):
                let chunk = Array(buffer[0..<n])
                if let stream {
                    try feed(chunk, stream)
                } else {
                    // Type the stream from its first bytes, then hand them over.
                    prefix += chunk
                    guard prefix.count >= 16 << 10 else { continue }
                    let detection = StreamFormatDetector.detect(contentType: info.contentType, url: url, prefix: prefix, isComplete: false)
                    out.fileType = detection.fileTypeHint
                    let s = AudioFileStream(fileTypeHint: detection.fileTypeHint)
                    stream = s
                    try feed(prefix, s)
                }
            case .metadata(let m):
                // Placed on the packet timeline at the end (a title can come before the parser
                // has seen enough to know the packet size).
                out.titles.append((m.title ?? "", m.audioByteOffset, nil))
            case .reconnected:
                Issue.record("unexpected reconnect")
            case .end:
                if stream == nil, !prefix.isEmpty {
                    let s = AudioFileStream(fileTypeHint: StreamFormatDetector.detect(contentType: info.contentType, url: url, prefix: prefix, isComplete: true).fileTypeHint)
                    stream = s
                    try feed(prefix, s)
                }
                if let stream {
                    try stream.finish { event in
                        if case .packets(let batch) = event { out.packets += batch.packetCount; out.data += batch.data }
                    }
                    // The packet timeline counts from the audio data, after any leading tag.
                    for k in out.titles.indices {
                        out.titles[k].packet = stream.packet(forByteOffset: out.titles[k].audioByteOffset - (stream.dataOffset ?? 0))?.packet
                    }
                }
                return out
            }
        }
    }

    @Test func icyStreamFeedsAudioFileStreamWithTitlesOnThePacketTimeline() throws {
        let mp3 = fileBytes(Corpus.packageRoot + "/Resources/demo.mp3")
        try #require(mp3.count > 100_000, "Resources/demo.mp3 is missing")
        // The reference: the file parsed whole.
        let whole = AudioFileStream(fileTypeHint: .mp3)
        var referencePackets = 0
        var referenceData: [UInt8] = []
        for event in try whole.parse(mp3) + whole.finish() {
            if case .packets(let batch) = event { referencePackets += batch.packetCount; referenceData += batch.data }
        }
        try #require(referencePackets > 100)

        let server = try TestHTTPServer()
        defer { server.stop() }
        let metaint = 16_000
        var route = TestHTTPServer.Route(body: .bytes(mp3), contentType: "audio/mpeg")
        route.icyStatusLine = true
        route.icyMetaInterval = metaint
        route.icyNewTitleEveryBlock = true
        route.sendsContentLength = false
        route.acceptsRanges = false
        route.extraHeaders = ["icy-name: Loopback Radio"]
        server.route("/radio", route)

        var options = ByteSourceOptions()
        options.http.reconnect.rejoinsEndedLiveStreams = false   // this finite ICY body really ends
        let url = server.url("/radio")
        let source = try ByteSources.make(url: url, options: options)
        #expect(source is HTTPByteSource)
        let info = try source.open(at: 0)
        defer { source.close() }
        #expect(info.isLive)
        #expect(info.icy?.name == "Loopback Radio")
        #expect(info.icy?.metaInterval == metaint)

        let got = try Self.parse(source, info: info, url: url)
        #expect(got.fileType == .mp3)
        // The same packets as the file parsed whole: ICY blocks were stripped exactly.
        #expect(got.packets == referencePackets)
        #expect(got.data.count == referenceData.count)
        #expect(firstDifference(got.data, referenceData) == nil, "packet bytes differ from the file's")
        // One new title per metadata block, in order, at multiples of the interval, each placed
        // on a packet inside the stream.
        let expectedBlocks = (mp3.count - 1) / metaint
        #expect(got.titles.count == expectedBlocks, "\(got.titles.count) titles for \(expectedBlocks) blocks")
        for (k, t) in got.titles.enumerated() {
            #expect(t.title == "Title \(k + 1)")
            #expect(t.audioByteOffset == Int64((k + 1) * metaint))
            let packet = try #require(t.packet, "title \(k + 1) has no packet")
            #expect(packet >= 0 && packet <= Int64(referencePackets))
        }
        let packets = got.titles.compactMap(\.packet)
        #expect(packets == packets.sorted(), "titles out of packet order: \(packets)")
        #expect(source.statistics.requests == 1)
    }
}
