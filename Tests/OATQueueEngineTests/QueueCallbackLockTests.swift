// Output queues call user code (buffer callbacks, property listeners, events) with no
// lock of the queue held (issue 19 §3): a callback may wait for another thread that calls the
// queue's transport, or call another queue, without deadlocking. And a queue whose thread
// cannot start says so (an AudioError from enqueue/start) instead of never playing.
#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATDevices
import Dispatch
import Synchronization
import Testing
@testable import OATQueueEngine

/// Runs `body` on another thread and waits at most `seconds` for it: false when it did not
/// finish in time (it blocked on a lock the waiting thread holds).
private func finishesOnAnotherThread(within seconds: Double, _ body: @escaping @Sendable () -> Void) -> Bool {
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        body()
        done.signal()
    }
    return done.wait(timeout: .now() + .milliseconds(Int(seconds * 1000))) == .success
}

private let stereo = AudioStreamBasicDescription.linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 32, isFloat: true)

private func nullOutput(_ format: AudioDeviceFormat) throws(AudioError) -> any AudioOutputDevice {
    NullOutputDevice(format: format, realTime: true)
}

@Suite(.serialized) struct QueueCallbackLockTests {
    /// The buffers handed back by `stop(immediately: true)`: the callback waits for a thread
    /// that resets the same queue. With the transport lock held during the callback, the reset
    /// blocks until the wait gives up (2 s) and the test sees it.
    @Test func bufferCallbackMayWaitForAThreadThatCallsTheTransport() throws {
        let results = Locked<[Bool]>([])
        let queue = try AudioOutputQueue(format: stereo, output: nullOutput) { q, _ in
            let ok = finishesOnAnotherThread(within: 2) { q.reset() }
            results.withLock { $0.append(ok) }
        }
        defer { queue.dispose(immediately: true) }
        for _ in 0..<2 {
            let b = try queue.allocateBuffer(byteCapacity: 44100 * 8)
            b.audioDataByteSize = 44100 * 8
            try queue.enqueue(b)
        }
        try queue.start()
        usleep(100_000)
        queue.stop(immediately: true)
        let got = results.withLock { $0 }
        #expect(got.count == 2, "callbacks: \(got)")
        #expect(got.allSatisfy { $0 }, "a callback waiting for a thread that calls reset() deadlocked until its timeout: \(got)")
    }

    /// The IsRunning listener, told of the stop, waits for a thread that calls the queue's
    /// transport (start again) and for one that stops a second queue whose own listener
    /// calls back into the first queue.
    @Test func propertyListenerMayWaitForAThreadThatCallsTheTransport() throws {
        let results = Locked<[Bool]>([])
        let queue = try AudioOutputQueue(format: stereo, output: nullOutput) { _, _ in }
        let other = try AudioOutputQueue(format: stereo, output: nullOutput) { _, _ in }
        defer {
            queue.dispose(immediately: true)
            other.dispose(immediately: true)
        }
        other.addPropertyListener { q, p in
            guard p == .isRunning, !q.isRunning else { return }
            let ok = finishesOnAnotherThread(within: 2) { _ = try? queue.pause() }
            results.withLock { $0.append(ok) }
        }
        queue.addPropertyListener { q, p in
            guard p == .isRunning, !q.isRunning else { return }
            let a = finishesOnAnotherThread(within: 2) { q.reset() }
            let b = finishesOnAnotherThread(within: 4) { other.stop(immediately: true) }
            results.withLock { $0.append(contentsOf: [a, b]) }
        }
        try queue.start()
        try other.start()
        usleep(100_000)
        queue.stop(immediately: true)
        let got = results.withLock { $0 }
        #expect(got.count == 3, "listener results: \(got)")
        #expect(got.allSatisfy { $0 }, "a listener waiting for a thread that calls a queue's transport deadlocked: \(got)")
    }

    /// A queue whose thread cannot be started fails enqueue and start with an AudioError
    /// (`kAudioQueueErr_CannotStart`) instead of accepting buffers it will never play.
    @Test func aQueueThreadThatCannotStartIsAnError() throws {
        let queue = try AudioOutputQueue(format: stereo, output: nullOutput) { _, _ in }
        defer { queue.dispose(immediately: true) }
        queue.setThreadStarter { _, _ throws(AudioError) in
            throw AudioError(.deviceUnavailable, component: "test", "pthread_create refused (EAGAIN)")
        }
        let b = try queue.allocateBuffer(byteCapacity: 4096)
        b.audioDataByteSize = 4096
        let enqueueError = #expect(throws: AudioError.self) { try queue.enqueue(b) }
        #expect(enqueueError?.osStatus == -66681, "\(String(describing: enqueueError))")
        #expect(enqueueError?.message.contains("thread") == true, "\(String(describing: enqueueError))")
        let startError = #expect(throws: AudioError.self) { try queue.start() }
        #expect(startError?.osStatus == -66681, "\(String(describing: startError))")
        #expect(!queue.isRunning)
        #expect(queue.pendingBufferCount == 0, "a buffer was accepted by a queue that cannot play it")
    }
}
