import OATCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Writes what is played to a WAV file (IEEE float, 32-bit, interleaved). The header is made
/// valid every second and on stop, so a killed player leaves a readable file.
///
/// The file is a ``SafeOutputFile`` recording: a new path is written in place; an existing
/// file is never truncated but replaced when the output stops (until then the audio goes to a
/// temporary beside it); a seekable device is written in place; anything else is refused.
final class WAVFileSink: PeriodSink, @unchecked Sendable {
    private let file: UnsafeMutablePointer<FILE>
    private let output: SafeOutputFile
    private let format: AudioDeviceFormat
    private var dataBytes: UInt64 = 0
    private var sinceHeader = 0
    private var finished = false

    init(path: String, format: AudioDeviceFormat) throws(AudioError) {
        let output = try SafeOutputFile(path: path, mode: .recording)
        let copy = dup(output.descriptor)
        guard copy >= 0, let f = fdopen(copy, "wb") else {
            let e = errno
            if copy >= 0 { close(copy) }
            output.discard()
            throw AudioError(.io, component: "WAV output", "cannot create \(path)", underlying: String(cString: strerror(e)))
        }
        output.closeDescriptor()
        file = f
        self.output = output
        self.format = format
        writeHeader()
    }

    private func writeHeader() {
        var h: [UInt8] = []
        func u32(_ v: UInt32) { h += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
        func u16(_ v: UInt16) { h += [UInt8(v & 0xFF), UInt8(v >> 8)] }
        let data = UInt32(clamping: dataBytes)
        h += Array("RIFF".utf8); u32(UInt32(clamping: UInt64(data) + 36 + 14)); h += Array("WAVE".utf8)
        h += Array("fmt ".utf8); u32(18); u16(3); u16(UInt16(format.channels)); u32(UInt32(format.sampleRate))
        u32(UInt32(format.sampleRate) * UInt32(format.channels) * 4); u16(UInt16(format.channels * 4)); u16(32); u16(0)
        h += Array("fact".utf8); u32(4); u32(UInt32(clamping: dataBytes / UInt64(4 * format.channels)))
        h += Array("data".utf8); u32(data)
        let end = ftell(file)
        fseek(file, 0, SEEK_SET)
        _ = h.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        if end > Int(h.count) { fseek(file, end, SEEK_SET) }
        fflush(file)
    }

    func write(_ interleaved: UnsafeBufferPointer<Float>, frames: Int) {
        guard !finished else { return }
        fwrite(interleaved.baseAddress, 4, interleaved.count, file)
        dataBytes += UInt64(interleaved.count * 4)
        sinceHeader += frames
        if sinceHeader >= Int(format.sampleRate) {
            sinceHeader = 0
            writeHeader()
        }
    }

    func finish() {
        guard !finished else { return }
        finished = true
        writeHeader()
        fclose(file)
        // What was played is kept: moved over an existing file only now.
        try? output.commit()
    }
}

extension NullOutputDevice {
    /// An output that writes everything played to a WAV file (Float32), paced in real time or
    /// as fast as possible.
    /// `period` is the time rendered at a time (the default: 1024 frames at 44.1 kHz, 23 ms).
    public static func wavFile(path: String, format: AudioDeviceFormat, realTime: Bool = false,
                               period: Double = 1024.0 / 44100) throws(AudioError) -> NullOutputDevice {
        try wavFile(path: path, format: format, realTime: realTime, framesPerRender: frames(period, at: format.sampleRate))
    }

    /// An output that writes everything played to a WAV file, rendering `framesPerRender`
    /// frames at a time (a different time at each rate; prefer the period in seconds).
    public static func wavFile(path: String, format: AudioDeviceFormat, realTime: Bool = false,
                               framesPerRender: Int) throws(AudioError) -> NullOutputDevice {
        let sink = try WAVFileSink(path: path, format: format)
        return NullOutputDevice(format: format, realTime: realTime, framesPerRender: framesPerRender,
                                faults: AudioDeviceFaults(), sink: sink, name: "wav:\(path)")
    }
}
