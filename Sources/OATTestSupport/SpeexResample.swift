#if canImport(Glibc)
import Glibc
#endif

/// Resamples interleaved Float32 the way a PulseAudio server does with `speex-float-N`
/// (`--resample-method=speex-float-10` for the test daemons): the system's SpeexDSP resampler at
/// quality `quality`, its leading zeros skipped (PulseAudio calls `speex_resampler_skip_zeros`
/// when it creates a stream's resampler), the input in one piece and not flushed (a stream's
/// last frames stay in the filter when it drains). The result is what the server's sink gets
/// from a stream that started with `samples` at `from` Hz, frame for frame.
///
/// Nil when `libspeexdsp.so.1` cannot be loaded (it comes with PulseAudio) or rejects the rates.
public func resampleLikePulseAudio(_ samples: [Float], channels: Int, from: Int, to: Int, quality: Int = 10) -> [Float]? {
    if from == to { return samples }
    guard let lib = SpeexLibrary.shared else { return nil }
    var err: Int32 = 0
    guard let state = lib.initialize(UInt32(channels), UInt32(from), UInt32(to), Int32(quality), &err), err == 0 else { return nil }
    defer { lib.destroy(state) }
    _ = lib.skipZeros(state)
    let inFrames = samples.count / channels
    var out = [Float](repeating: 0, count: (Int((Double(inFrames) * Double(to) / Double(from)).rounded(.up)) + 64) * channels)
    var produced = 0
    var consumed = 0
    // In pieces (PulseAudio's are a memblock at most), until the input is used up.
    while consumed < inFrames {
        var inLen = UInt32(min(8192, inFrames - consumed))
        var outLen = UInt32(out.count / channels - produced)
        if outLen == 0 { break }
        let rc = samples.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { o in
                lib.process(state, s.baseAddress! + consumed * channels, &inLen, o.baseAddress! + produced * channels, &outLen)
            }
        }
        guard rc == 0 else { return nil }
        consumed += Int(inLen)
        produced += Int(outLen)
        if inLen == 0 && outLen == 0 { break }
    }
    return Array(out[0..<(produced * channels)])
}

/// The few SpeexDSP resampler entry points, loaded once with `dlopen` (no link-time dependency).
private final class SpeexLibrary: @unchecked Sendable {
    typealias Init = @convention(c) (UInt32, UInt32, UInt32, Int32, UnsafeMutablePointer<Int32>?) -> OpaquePointer?
    typealias Destroy = @convention(c) (OpaquePointer) -> Void
    typealias SkipZeros = @convention(c) (OpaquePointer) -> Int32
    typealias Process = @convention(c) (OpaquePointer, UnsafePointer<Float>, UnsafeMutablePointer<UInt32>,
                                        UnsafeMutablePointer<Float>, UnsafeMutablePointer<UInt32>) -> Int32
    let initialize: Init
    let destroy: Destroy
    let skipZeros: SkipZeros
    let process: Process

    static let shared: SpeexLibrary? = {
        guard let handle = dlopen("libspeexdsp.so.1", RTLD_NOW | RTLD_LOCAL),
              let i = dlsym(handle, "speex_resampler_init"), let d = dlsym(handle, "speex_resampler_destroy"),
              let z = dlsym(handle, "speex_resampler_skip_zeros"),
              let p = dlsym(handle, "speex_resampler_process_interleaved_float") else { return nil }
        return SpeexLibrary(initialize: unsafeBitCast(i, to: Init.self), destroy: unsafeBitCast(d, to: Destroy.self),
                            skipZeros: unsafeBitCast(z, to: SkipZeros.self), process: unsafeBitCast(p, to: Process.self))
    }()

    private init(initialize: Init, destroy: Destroy, skipZeros: SkipZeros, process: Process) {
        self.initialize = initialize
        self.destroy = destroy
        self.skipZeros = skipZeros
        self.process = process
    }
}
