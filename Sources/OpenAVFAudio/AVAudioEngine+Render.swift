// Helpers of AVAudioEngine's manual rendering: rendered channels written into an
// AVAudioPCMBuffer, and AudioError bodies wrapped into the NSError AVFAudio throws.

import Foundation
import OpenAudioToolbox
internal import AudioCore

/// Writes rendered channels into `buffer` in its format (float or integer, planar or not).
func writeRendered(_ channels: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, frames: Int, into buffer: AVAudioPCMBuffer) throws {
    let n = channels.count
    if let data = buffer.floatChannelData {
        for c in 0..<n {
            for f in 0..<frames {
                if buffer.format.isInterleaved { data[0][f * n + c] = channels[c][f] } else { data[c][f] = channels[c][f] }
            }
        }
    } else if let data = buffer.int16ChannelData {
        for c in 0..<n {
            for f in 0..<frames {
                let v = Int16(max(-32768, min(32767, (channels[c][f] * 32768).rounded())))
                if buffer.format.isInterleaved { data[0][f * n + c] = v } else { data[c][f] = v }
            }
        }
    } else {
        throw avError(kAudioUnitErr_FormatNotSupported, "AVAudioEngine.renderOffline: the buffer's format \(buffer.format) is not Float32 or Int16")
    }
    buffer.frameLength = AVAudioFrameCount(frames)
}

/// Runs a throwing AudioError body, turning its error into the `NSError` AVFAudio throws.
func wrap<T>(_ body: () throws(AudioError) -> T) throws -> T {
    do { return try body() } catch {
        throw NSError(domain: NSOSStatusErrorDomain, code: Int(error.osStatus ?? kAudioUnitErr_FailedInitialization),
                      userInfo: [NSLocalizedDescriptionKey: "\(error)"])
    }
}
