import Testing
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
@testable import OATCore

/// The package's primitives (Sources/OATCore/Primitives): one lock, one thread, one sleep and
/// backoff, one unchecked box, each used everywhere instead of per-module copies.
@Suite struct PrimitivesTests {
    @Test func lockedGuardsItsValueAcrossThreads() throws {
        let counter = Locked(0)
        let threads = try (0..<4).map { _ in
            try JoinableThread(name: "test-locked") { for _ in 0..<10_000 { counter.withLock { $0 += 1 } } }
        }
        for t in threads { t.join() }
        #expect(counter.withLock { $0 } == 40_000)
    }

    /// Every caller of `join` returns only once the body has returned (two joins at once: the
    /// second used to return at once while the first still waited).
    @Test func everyJoinWaitsForTheBody() throws {
        let ended = Atomic<Bool>(false)
        let worker = try JoinableThread(name: "test-worker") {
            sleep(seconds: 0.2)
            ended.store(true, ordering: .releasing)
        }
        let sawEnd = Locked<[Bool]>([])
        let joiners = try (0..<3).map { _ in
            try JoinableThread(name: "test-joiner") {
                worker.join()
                let e = ended.load(ordering: .acquiring)
                sawEnd.withLock { $0.append(e) }
            }
        }
        for j in joiners { j.join() }
        worker.join()
        let seen = sawEnd.withLock { $0 }
        #expect(seen == [true, true, true], "a join returned before the body ended: \(seen)")
    }

    /// A join from the thread itself (a callback that disposes its owner) returns at once.
    @Test func joinFromTheThreadItselfReturns() throws {
        let holder = Locked<JoinableThread?>(nil)
        let returned = Atomic<Bool>(false)
        let ready = Atomic<Bool>(false)
        let t = try JoinableThread(name: "test-self-join") {
            while !ready.load(ordering: .acquiring) { sleep(seconds: 0.001) }
            holder.withLock { $0 }?.join()
            returned.store(true, ordering: .releasing)
        }
        holder.withLock { $0 = t }
        ready.store(true, ordering: .releasing)
        #expect(pollWithBackoff(until: HostTime.now() + HostTime.ticks(seconds: 5)) { returned.load(ordering: .acquiring) })
        t.join()
    }

    @Test func sleepAndBackoffKeepTheirTimes() {
        var start = HostTime.now()
        sleep(seconds: 0.05)
        let slept = Double(HostTime.now() - start) / 1e9
        #expect(slept >= 0.05 && slept < 1, "slept \(slept) s for 0.05 s")
        start = HostTime.now()
        sleep(seconds: -1)
        sleep(seconds: .nan)
        #expect(Double(HostTime.now() - start) / 1e9 < 0.05)
        start = HostTime.now()
        let timedOut = pollWithBackoff(until: HostTime.now() + HostTime.ticks(seconds: 0.05)) { false }
        let waited = Double(HostTime.now() - start) / 1e9
        #expect(!timedOut && waited >= 0.05 && waited < 1, "waited \(waited) s")
        var calls = 0
        #expect(pollWithBackoff { calls += 1; return calls == 3 })
        #expect(calls == 3)
    }

    @Test func uncheckedSendableCarriesAValueToAThread() throws {
        final class NotSendable { var value = 1 }
        let box = UncheckedSendable(NotSendable())
        let t = try JoinableThread(name: "test-box") { box.value.value = 2 }
        t.join()
        #expect(box.value.value == 2)
    }

    /// The primitives have one home: no module keeps its own lock alias, thread wrapper or box
    /// (each copy drifted before: Mutex+TSan.swift in 16 places, six thread wrappers).
    @Test func noModuleKeepsItsOwnCopy() throws {
        let root = String(#filePath).split(separator: "/").dropLast(3).joined(separator: "/")
        var files: [String] = []
        for top in ["Sources", "Tests"] { collectSwiftFiles("/" + root + "/" + top, into: &files) }
        try #require(files.count > 100, "the package sources are not beside this test (\(root)): \(files.count) files")
        let mutexUse = "Mu" + "tex"
        var offenders: [String] = []
        for path in files where !path.contains("/OATCore/Primitives/") && !path.hasSuffix("/PrimitivesTests.swift") {
            if path.hasSuffix("/\(mutexUse)+TSan.swift") { offenders.append("\(path): a per-module lock alias"); continue }
            guard let text = readText(path) else { offenders.append("\(path): unreadable"); continue }
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
                if containsWord(code, mutexUse, followedBy: ["(", "<"]) {
                    offenders.append("\(path):\(number + 1): names \(mutexUse) (use Locked)")
                }
                if code.contains("pthread_" + "create(") {
                    offenders.append("\(path):\(number + 1): starts its own thread (use JoinableThread)")
                }
            }
        }
        #expect(offenders.isEmpty, "\(offenders.joined(separator: "\n"))")
    }
}

private func collectSwiftFiles(_ directory: String, into files: inout [String]) {
    guard let dir = opendir(directory) else { return }
    defer { closedir(dir) }
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name.hasPrefix(".") { continue }
        let path = directory + "/" + name
        if entry.pointee.d_type == UInt8(DT_DIR) {
            collectSwiftFiles(path, into: &files)
        } else if name.hasSuffix(".swift") {
            files.append(path)
        }
    }
}

private func readText(_ path: String) -> String? {
    guard let f = fopen(path, "rb") else { return nil }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&chunk, 1, chunk.count, f)
        if n <= 0 { break }
        bytes += chunk[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// True when `word` stands in `line` as a whole identifier directly followed by one of `next`.
private func containsWord(_ line: String, _ word: String, followedBy next: [Character]) -> Bool {
    let chars = Array(line)
    let w = Array(word)
    guard chars.count > w.count else { return false }
    for i in 0...(chars.count - w.count - 1) where Array(chars[i..<(i + w.count)]) == w {
        let before = i == 0 ? " " : chars[i - 1]
        if before.isLetter || before.isNumber || before == "_" { continue }
        if next.contains(chars[i + w.count]) { return true }
    }
    return false
}
