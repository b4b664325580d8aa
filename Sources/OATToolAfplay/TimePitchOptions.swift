// afplay's rate and pitch options: `-r/--rate RATE` and `-q/--rQuality QUALITY` as macOS afplay
// has them, and `--pitch CENTS`. Kept apart from Afplay.swift, which calls the two hooks below.
import AudioToolboxKit
import Synchronization

/// What the rate and pitch options asked for.
struct TimePitchOptions: Sendable {
    /// Playback rate; 0 (macOS afplay's "off") or 1 play at normal speed.
    var rate: Float = 0
    /// macOS afplay's rate-scaling quality: 0 low (the default), 1 high.
    var quality: Float = 0
    /// Pitch shift in cents.
    var pitchCents: Float = 0
}

let timePitchOptions = Locked(TimePitchOptions())

/// The usage lines for these options.
let timePitchUsage = """
  -r, --rate RATE      play at RATE times the speed, pitch unchanged (0.5 ... 2.0; 0 or 1: off)
  -q, --rQuality Q     quality of rate-scaled playback: 0 low (default, time-domain), 1 high (spectral)
  --pitch CENTS        shift the pitch by CENTS (-2400 ... 2400) without changing the speed
"""

/// Takes `arg` with its value if it is one of the rate/pitch options; returns false otherwise.
/// Exits with a message on a bad value.
func takeTimePitchOption(_ arg: String, _ value: () -> String) -> Bool {
    switch arg {
    case "-r", "--rate":
        guard let v = Float(value()), v == 0 || (v >= 0.5 && v <= 2) else { fail("-r takes a rate from 0.5 to 2.0 (0: off)") }
        timePitchOptions.withLock { $0.rate = v }
    case "-q", "--rQuality":
        guard let v = Float(value()), v >= 0, v <= 1 else { fail("-q takes a quality from 0 to 1") }
        timePitchOptions.withLock { $0.quality = v }
    case "--pitch":
        guard let v = Float(value()), abs(v) <= 2400 else { fail("--pitch takes cents from -2400 to 2400") }
        timePitchOptions.withLock { $0.pitchCents = v }
    default:
        return false
    }
    return true
}

/// Applies the options to the player before it starts.
func applyTimePitchOptions(to player: AudioFilePlayer, debug: Bool) throws(AudioError) {
    let o = timePitchOptions.withLock { $0 }
    let rate = o.rate == 0 ? 1 : o.rate
    guard rate != 1 || o.pitchCents != 0 else { return }
    // -q below 0.5 is macOS afplay's low quality: the cheaper time-domain engine.
    let algorithm: TimePitchAlgorithm = o.quality >= 0.5 ? .spectral : .timeDomain
    try player.setTimePitch(rate: rate, pitchCents: o.pitchCents, algorithm: algorithm)
    if debug { writeStandardError("afplay: rate \(rate), pitch \(o.pitchCents) cents, \(algorithm.rawValue) time-pitch") }
}
