import Testing
import Dispatch
@testable import OATCore

@Suite struct SPSCTests {
    @Test func ringWrapsAround() {
        let ring = SPSCRingBuffer<Float>(minimumCapacity: 5, zero: 0)
        #expect(ring.capacity == 8)
        var out = [Float](repeating: 0, count: 8)
        for round in 0..<10 {
            let input = (0..<6).map { Float(round * 10 + $0) }
            #expect(input.withUnsafeBufferPointer { ring.write($0) } == 6)
            #expect(out.withUnsafeMutableBufferPointer { ring.read(into: $0) } == 6)
            #expect(Array(out[0..<6]) == input)
        }
        #expect([Float](repeating: 1, count: 20).withUnsafeBufferPointer { ring.write($0) } == 8)
        #expect(ring.availableToWrite == 0)
        #expect(ring.skip(3) == 3 && ring.availableToRead == 5)
    }

    @Test func ringCarriesEverySampleAcrossThreads() async {
        let ring = SPSCRingBuffer<Int32>(minimumCapacity: 64, zero: 0)
        let total = 200_000
        let producer = Thread_run {
            var next: Int32 = 0
            var chunk = [Int32](repeating: 0, count: 17)
            while Int(next) < total {
                let n = min(chunk.count, total - Int(next))
                for i in 0..<n { chunk[i] = next + Int32(i) }
                let written = chunk.withUnsafeBufferPointer { ring.write(UnsafeBufferPointer(rebasing: $0[0..<n])) }
                next += Int32(written)
            }
        }
        var expected: Int32 = 0
        var buffer = [Int32](repeating: 0, count: 23)
        var ok = true
        while Int(expected) < total {
            let n = buffer.withUnsafeMutableBufferPointer { ring.read(into: $0) }
            for i in 0..<n where buffer[i] != expected + Int32(i) { ok = false }
            expected += Int32(n)
        }
        await producer.value
        #expect(ok && Int(expected) == total)
    }

    @Test func queueDropsAndCountsWhenFull() {
        let q = SPSCQueue<String>(minimumCapacity: 2)
        #expect(q.push("a") && q.push("b"))
        #expect(!q.push("c"))
        #expect(q.droppedCount == 1)
        #expect(q.pop() == "a" && q.pop() == "b" && q.pop() == nil)
    }
}

/// Runs `body` on a dispatch thread (not the cooperative pool) and returns a task to await it.
func Thread_run(_ body: @escaping @Sendable () -> Void) -> Task<Void, Never> {
    Task {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                body()
                c.resume()
            }
        }
    }
}
