#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATDevices
import OATQueueEngine
import OATStreaming
import OATTestSupport
import Synchronization
import Testing

/// Thousands of random control calls from four tasks against StreamingPlayers playing HTTP
/// (with scripted disconnects) and local items into the null device (not paced): play, append,
/// skip, pause, resume, seek, stop, volume, queue edits, reads, and players dropped while playing.
/// Properties: nothing crashes or deadlocks, every call returns, unexpected errors are
/// `AudioError`s of the documented kinds, and afterwards a player still plays a file to its end
/// with every frame. Scripts/test.sh also runs it under ThreadSanitizer.
@Suite struct StreamingPlayerStressTests {
    @Test func randomControlFromFourTasks() async throws {
        let dir = try ScratchDirectory("splayer-stress")
        defer { dir.remove() }
        let mp3 = dir.path + "/a.mp3", wav = dir.path + "/b.wav"
        try #require(makeFixture(mp3, rate: 44100, channels: 2, seconds: 2, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        try #require(makeFixture(wav, rate: 44100, channels: 2, seconds: 1, codec: ["-c:a", "pcm_s16le"]))
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .file(mp3), contentType: "audio/mpeg")
        route.faults = Array(repeating: .disconnect(afterBytes: 9_000), count: 50)
        server.route("/a.mp3", route)
        let urls = [server.url("/a.mp3"), mp3, wav]
        var policy = ReconnectPolicy()
        policy.initialBackoff = 0.01
        policy.maximumBackoff = 0.05
        let output: AudioOutputDeviceFactory = { format throws(AudioError) in
            NullOutputDevice(format: format, realTime: false)
        }
        let reconnect = policy
        let shared = StressShared(make: { StreamingPlayer(output: output, sourceFactory: httpSources(reconnect)) })
        let start = HostTime.now()
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<4 {
                group.addTask {
                    var rng = StressRandom(state: 0xC0FFEE &+ UInt64(t))
                    for _ in 0..<1500 {
                        let index = Int.random(in: 0..<2, using: &rng)
                        let player = shared.players.withLock { $0[index] }
                        let url = urls.randomElement(using: &rng)!
                        do {
                            switch Int.random(in: 0..<100, using: &rng) {
                            case 0..<12: await player.play(url)
                            case 12..<18: await player.play(urls.shuffled(using: &rng))
                            case 18..<24: await player.append(url)
                            case 24..<30: await player.skip()
                            case 30..<40: await player.pause()
                            case 40..<50: await player.resume()
                            case 50..<60: try await player.seek(to: Double.random(in: 0..<2.5, using: &rng))
                            case 60..<66: await player.stop()
                            case 66..<72: try await player.setVolume(Float.random(in: 0...1, using: &rng), fade: 0.01)
                            case 72..<76: if await player.queue.count > 1 { try await player.remove(at: 1) }
                            case 76..<80: await player.jumpToLive()
                            case 80..<82:
                                // Drop a player while it may be playing (its deinit stops it).
                                let replacement = shared.make()
                                shared.players.withLock { $0[index] = replacement }
                            default:
                                _ = await player.state
                                _ = await player.position
                                _ = await player.statistics
                                _ = await player.sourceInfo
                            }
                        } catch let e as AudioError {
                            // Seeking an item that cannot seek (yet), removing a playing entry: documented refusals.
                            if e.code != .invalidState && e.code != .invalidArgument && e.code != .unsupportedFormat && e.code != .valueUnknown {
                                shared.unexpected.withLock { $0.append(e.description) }
                            }
                        } catch {
                            shared.unexpected.withLock { $0.append("\(error)") }
                        }
                        shared.calls.add(1, ordering: .relaxed)
                        if Int.random(in: 0..<4, using: &rng) == 0 { try? await Task.sleep(for: .milliseconds(5)) }
                    }
                }
            }
        }
        for p in shared.players.withLock({ $0 }) { await p.stop() }
        let seconds = HostTime.seconds(ticks: HostTime.now() - start)
        print("streaming player stress: \(shared.calls.load(ordering: .relaxed)) calls in \(seconds) s; unexpected errors \(shared.unexpected.withLock { $0.count })")
        #expect(shared.calls.load(ordering: .relaxed) == 6000)
        // The players did work: HTTP requests (with reconnects after the scripted disconnects).
        print("streaming player stress: \(server.requests(to: "/a.mp3").count) HTTP requests")
        #expect(server.requests(to: "/a.mp3").count > 20)
        #expect(shared.unexpected.withLock { $0 }.isEmpty, "\(shared.unexpected.withLock { $0.prefix(5) })")
        // Still usable: a fresh play of the file plays every frame.
        let out = dir.path + "/out.wav"
        let log = StreamingEventLog()
        let player = shared.players.withLock { $0[0] }
        _ = player
        let fresh = StreamingPlayer(output: wavOutput(out), onEvent: log.handler)
        await fresh.play(wav)
        #expect(await log.waitFor(20, isStopped))
        await fresh.stop()
        #expect(log.stopReason == .ended)
        let played = try readFloatWAV(out).samples.count
        #expect(played == 2 * 44100, "played \(played / 2) frames")
    }
}

/// What the stress tasks share.
final class StressShared: Sendable {
    let make: @Sendable () -> StreamingPlayer
    let players: Locked<[StreamingPlayer]>
    let unexpected = Locked<[String]>([])
    let calls = Atomic<Int>(0)

    init(make: @escaping @Sendable () -> StreamingPlayer) {
        self.make = make
        players = Locked([make(), make()])
    }
}

/// A small deterministic generator (a failing interleaving's calls can be replayed).
struct StressRandom: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
