#if canImport(Glibc)
import Glibc
#endif
import Synchronization

#if OAT_TSAN
/// A value behind a lock: the one mutex every module of the package uses (never
/// `Synchronization.Mutex` by name; `PrimitivesHomeTests` checks).
///
/// Normal builds: `Synchronization.Mutex`. ThreadSanitizer builds (`-Xswiftc -DOAT_TSAN`, see
/// Scripts/test.sh): ``PthreadMutex``, which TSan can see.
package typealias Locked<Value: ~Copyable> = PthreadMutex<Value>
#else
/// A value behind a lock: the one mutex every module of the package uses (never
/// `Synchronization.Mutex` by name; `PrimitivesHomeTests` checks).
///
/// Normal builds: `Synchronization.Mutex`. ThreadSanitizer builds (`-Xswiftc -DOAT_TSAN`, see
/// Scripts/test.sh): ``PthreadMutex``, which TSan can see.
package typealias Locked<Value: ~Copyable> = Synchronization.Mutex<Value>
#endif

/// A mutex guarding a value, with the API of `Synchronization.Mutex` (`init(_:)`, `withLock`),
/// built on `pthread_mutex_t`.
///
/// Why: `Synchronization.Mutex` locks with raw futex system calls, which ThreadSanitizer does not
/// intercept, so TSan reports every access it protects as a data race. ThreadSanitizer builds
/// (`-Xswiftc -DOAT_TSAN`) make ``Locked`` this type, so TSan sees every lock; normal builds keep
/// `Synchronization.Mutex`.
///
/// Thread safety: `withLock` may be called from any thread; it is not recursive.
package struct PthreadMutex<Value: ~Copyable>: ~Copyable, @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let value: UnsafeMutablePointer<Value>

    /// Creates a mutex holding `initialValue`.
    package init(_ initialValue: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        value = .allocate(capacity: 1)
        value.initialize(to: initialValue)
    }

    deinit {
        value.deinitialize(count: 1)
        value.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    package borrowing func withLock<Result: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
