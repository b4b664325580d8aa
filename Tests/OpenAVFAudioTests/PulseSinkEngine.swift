import OATTestSupport
import Foundation

/// Runs `body` with a private PulseAudio daemon whose default sink `oat_test` runs at `rate`:
/// until `body` returns, PULSE_SERVER and OAT_OUTPUT point this process's engines at it; then
/// the daemon is stopped.
func withEngineAtPulseSink(rate: Int = 48000, _ body: (PulseTestDaemon) throws -> Void) throws {
    let daemon = try PulseTestDaemon(sampleRate: rate, channels: 2)
    setenv("PULSE_SERVER", daemon.server, 1)
    setenv("OAT_OUTPUT", "pulse:oat_test", 1)
    defer { unsetenv("PULSE_SERVER"); unsetenv("OAT_OUTPUT"); daemon.stop() }
    try body(daemon)
}
