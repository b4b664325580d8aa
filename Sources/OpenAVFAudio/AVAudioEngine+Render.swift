// Helpers of AVAudioEngine's manual rendering: rendered channels written into an
// AVAudioPCMBuffer, and AudioError bodies wrapped into the NSError AVFAudio throws.

import Foundation
import OpenAudioToolbox
internal import OATCore
internal import OATUnits
import Synchronization

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

/// The sources a device no clock paces (a WAV file) waits for: the players of the graph as
/// last built (nil: always render). Read by the device's render thread before each render with
/// a try-lock that never waits (while a build holds the lock, the last answer stands).
final class RenderGateSources: @unchecked Sendable {
    private let lock = NSLock()
    private var players: [AUPlayerNode]?
    private let last = Atomic<Bool>(true)

    func set(_ players: [AUPlayerNode]?) {
        lock.lock()
        self.players = players
        lock.unlock()
    }

    /// True while some player wants to render (or when the graph is not gated).
    var wantRender: Bool {
        guard lock.try() else { return last.load(ordering: .relaxed) }
        let want = players.map { $0.contains { $0.wantsRender } } ?? true
        lock.unlock()
        last.store(want, ordering: .relaxed)
        return want
    }
}
