#if canImport(Glibc)
import Glibc
#endif

/// A joinable POSIX thread running one closure: the one thread wrapper of the package (device
/// threads, queue and player feeders, test servers and test helpers).
///
/// Not on Swift's cooperative pool, as device and blocking I/O work must not be (DESIGN.md §2).
///
/// Thread safety: ``join()`` and ``detach()`` may be called from any thread, any number of times.
/// Every caller of ``join()`` returns once the closure has returned, except a call from the thread
/// itself (e.g. a callback that disposes its queue), which returns at once and detaches the thread.
package final class JoinableThread: @unchecked Sendable {
    private final class Body: @unchecked Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
    /// Guards `handle` and `joining`; `ended` is signalled when a join has finished.
    private let lock: UnsafeMutablePointer<pthread_mutex_t>
    private let ended: UnsafeMutablePointer<pthread_cond_t>
    /// The thread, until it is joined or detached.
    private var handle: pthread_t?
    /// True while a caller is inside `pthread_join`.
    private var joining = false

    /// Starts the thread. `name` names it in the error when the system refuses (`pthread_create`
    /// fails, e.g. EAGAIN at the thread limit): `AudioError.Code.deviceUnavailable`, as a device
    /// that cannot start its thread cannot run.
    package init(name: String, _ body: @escaping @Sendable () -> Void) throws(AudioError) {
        lock = .allocate(capacity: 1)
        pthread_mutex_init(lock, nil)
        ended = .allocate(capacity: 1)
        pthread_cond_init(ended, nil)
        let box = Unmanaged.passRetained(Body(body))
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, box.toOpaque())
        guard status == 0 else {
            box.release()
            throw AudioError(.deviceUnavailable, component: "OATCore", "cannot start the \(name) thread", underlying: "pthread_create \(status)")
        }
        handle = thread
    }

    deinit {
        // Never joined: let the system reclaim the thread when it ends.
        if let handle { pthread_detach(handle) }
        pthread_cond_destroy(ended)
        ended.deallocate()
        pthread_mutex_destroy(lock)
        lock.deallocate()
    }

    /// Waits for the closure to return. From the thread itself it returns at once and the thread
    /// is detached instead.
    package func join() {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        if let t = handle {
            handle = nil
            if pthread_equal(t, pthread_self()) != 0 {
                pthread_detach(t)
                return
            }
            joining = true
            pthread_mutex_unlock(lock)
            pthread_join(t, nil)
            pthread_mutex_lock(lock)
            joining = false
            pthread_cond_broadcast(ended)
        } else {
            while joining { pthread_cond_wait(ended, lock) }
        }
    }

    /// Lets the thread run on alone: nobody will join it, and its resources go when it ends.
    package func detach() {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        if let t = handle {
            handle = nil
            pthread_detach(t)
        }
    }
}
