// Feeding an AudioFileStream as a network delivers bytes: fixed-size chunks, never an end of
// stream (Apple's API has none).
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif

/// Parses `bytes` in `chunk`-byte pieces until one fails; the first failing status and the
/// offset of its piece, or noErr and the byte count.
func feedFileStream(_ stream: AudioFileStreamID, _ bytes: [UInt8], chunk: Int) -> (status: OSStatus, offset: Int) {
    var i = 0
    while i < bytes.count {
        let n = min(chunk, bytes.count - i)
        let status = bytes[i..<(i + n)].withUnsafeBytes { AudioFileStreamParseBytes(stream, UInt32(n), $0.baseAddress, []) }
        if status != noErr { return (status, i) }
        i += n
    }
    return (noErr, i)
}
