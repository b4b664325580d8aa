#if OAT_TSAN
import AudioCore

/// ThreadSanitizer builds: a pthread mutex TSan can see, instead of `Synchronization.Mutex`.
typealias Mutex<Value: ~Copyable> = PthreadMutex<Value>
#endif
