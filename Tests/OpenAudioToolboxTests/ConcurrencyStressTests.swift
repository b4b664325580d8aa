#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATDevices
import OATQueueEngine
import OATTestSupport
import Dispatch
import OpenAudioToolbox
import Synchronization
import Testing

/// A small deterministic generator, so a failing interleaving's operation sequence can be replayed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Runs `threads` OS threads that each call `body(threadIndex, &rng)` `iterations` times; returns
/// false if they did not all finish within `timeout` seconds (a deadlock or a hang).
func hammer(threads: Int, iterations: Int, timeout: Double, seed: UInt64 = 0, _ body: @escaping @Sendable (Int, inout SplitMix) -> Void) -> Bool {
    let group = DispatchGroup()
    for t in 0..<threads {
        group.enter()
        // Detached (not the cooperative pool: these calls block); a thread that cannot start
        // never leaves the group, and the wait fails.
        (try? JoinableThread(name: "test-hammer") {
            var rng = SplitMix(state: 0xA11CE &+ seed &* 1000 &+ UInt64(t))
            for _ in 0..<iterations { body(t, &rng) }
            group.leave()
        })?.detach()
    }
    return group.wait(timeout: .now() + timeout) == .success
}


/// Thousands of random transport calls from several threads against the output queue and the file
/// player (DESIGN.md: control methods are safe from any thread). Properties checked: nothing
/// crashes or deadlocks, no buffer is returned twice without being enqueued again, the queue ends
/// stopped and the player ends in a terminal state. Run under ThreadSanitizer by Scripts/test.sh.
@Suite(.serialized) struct ConcurrencyStressTests {
    @Test func outputQueueSurvivesRandomTransportFromFourThreads() throws {
        let pcm = AudioStreamBasicDescription.linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 16, isFloat: false)
        struct Ledger {
            var outstanding: Set<Int> = []
            var doubleReturns = 0
            var returns = 0
        }
        let ledger = Locked(Ledger())
        let queue = try AudioOutputQueue(format: pcm, output: { format throws(AudioError) in
            NullOutputDevice(format: format, realTime: false, framesPerRender: 512)
        }) { _, buffer in
            ledger.withLock { l in
                l.returns += 1
                if l.outstanding.remove(buffer.userData) == nil { l.doubleReturns += 1 }
            }
        }
        let frames = 1024
        let tone: [Int16] = (0..<(frames * 2)).map { Int16(8000 * sin(Double($0 / 2) * 0.0627)) }
        let pool = Locked<[OATQueueEngine.QueueBuffer]>([])
        for i in 0..<32 {
            let b = try queue.allocateBuffer(byteCapacity: frames * 4)
            b.userData = i
            pool.withLock { $0.append(b) }
        }
        let errors = Locked<[String]>([])
        let finished = hammer(threads: 4, iterations: 1500, timeout: 120) { _, rng in
            let op = Int.random(in: 0..<100, using: &rng)
            do {
                switch op {
                case 0..<40:
                    // Enqueue a free buffer (one not currently in the queue).
                    let candidate: OATQueueEngine.QueueBuffer? = pool.withLock { p in
                        let free = p.filter { b in ledger.withLock { !$0.outstanding.contains(b.userData) } }
                        return free.randomElement(using: &rng)
                    }
                    guard let b = candidate else { return }
                    let claimed = ledger.withLock { l in l.outstanding.insert(b.userData).inserted }
                    guard claimed else { return }
                    tone.withUnsafeBytes { _ = b.fill($0) }
                    do {
                        try queue.enqueue(b)
                    } catch {
                        ledger.withLock { _ = $0.outstanding.remove(b.userData) }
                    }
                case 40..<52: try queue.start()
                case 52..<60: try queue.pause()
                case 60..<66: queue.stop(immediately: Bool.random(using: &rng))
                case 66..<70: queue.flush()
                case 70..<74: queue.reset()
                case 74..<84: try queue.setParameter(.volume, Float.random(in: 0...1, using: &rng))
                case 84..<90: _ = queue.currentTime()
                case 90..<95: queue.isLevelMeteringEnabled = Bool.random(using: &rng); _ = queue.currentLevels()
                default: _ = queue.isRunning; _ = queue.bufferedFrames
                }
            } catch let e as AudioError {
                // Transport errors (e.g. enqueue while stopping) are allowed; they must be AudioErrors.
                if e.code != .invalidState { errors.withLock { $0.append(e.description) } }
            } catch {
                errors.withLock { $0.append("\(error)") }
            }
        }
        #expect(finished, "the transport calls deadlocked or hung")
        queue.stop(immediately: true)
        #expect(wait(seconds: 5) { !queue.isRunning })
        queue.dispose(immediately: true)
        let l = ledger.withLock { $0 }
        #expect(l.doubleReturns == 0, "a buffer was returned twice")
        #expect(l.returns > 100, "the queue played almost nothing: \(l.returns) buffers returned")
        #expect(errors.withLock { $0 }.isEmpty, "unexpected errors: \(errors.withLock { $0.prefix(5) })")
    }

    @Test func filePlayerSurvivesRandomControlFromFourThreads() throws {
        let scratch = try ScratchDirectory("stress")
        defer { scratch.remove() }
        let path = scratch.path + "/tone.wav"
        #expect(runFFmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=20", "-ac", "2", "-ar", "44100", "-c:a", "pcm_s16le", path]))
        // Several players in turn, each hammered until stopped (stop is rare, so most calls run
        // against a live player) and then stopped again from every thread at once.
        for round in 0..<6 {
            let player = try AudioFilePlayer(paths: [path, path]) { format throws(AudioError) in
                NullOutputDevice(format: format, realTime: false, framesPerRender: 1024)
            }
            let unexpected = Locked<[String]>([])
            let finished = hammer(threads: 4, iterations: 400, timeout: 60, seed: UInt64(round)) { _, rng in
                do {
                    switch Int.random(in: 0..<1000, using: &rng) {
                    case 0..<200: try player.play(from: Double.random(in: 0...30, using: &rng))
                    case 200..<350: try player.pause()
                    case 350..<500: try player.resume()
                    case 500..<700: player.seek(to: Double.random(in: 0...45, using: &rng))
                    case 700..<703: player.stop()
                    case 703..<850: try player.setVolume(Float.random(in: 0...1, using: &rng), rampSeconds: 0.01)
                    default:
                        let p = player.position()
                        if p.seconds < 0 || p.seconds > 41 || p.item < 0 || p.item > 1 {
                            unexpected.withLock { $0.append("position out of range: \(p)") }
                        }
                        _ = player.levels()
                        _ = player.bufferedSeconds
                    }
                } catch let e as AudioError {
                    if e.code != .invalidState { unexpected.withLock { $0.append(e.description) } }
                } catch {
                    unexpected.withLock { $0.append("\(error)") }
                }
            }
            #expect(finished, "round \(round): the player's control calls deadlocked or hung")
            let stopped = hammer(threads: 4, iterations: 2, timeout: 30, seed: 99) { _, _ in player.stop() }
            #expect(stopped, "round \(round): concurrent stop() calls hung")
            #expect([.stopped, .ended].contains(player.currentState), "round \(round): state after stop: \(player.currentState)")
            #expect(unexpected.withLock { $0 }.isEmpty, "round \(round): \(unexpected.withLock { $0.prefix(5) })")
        }
    }
}

private func wait(seconds: Double, until condition: () -> Bool) -> Bool {
    let deadline = HostTime.now() + HostTime.ticks(seconds: seconds)
    while HostTime.now() < deadline {
        if condition() { return true }
        usleep(2000)
    }
    return condition()
}
