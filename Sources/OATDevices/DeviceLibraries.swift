import OATCore
import COATDeviceLazy

/// libpulse and libasound are loaded on first use (the `COATDeviceLazy` target), not linked: a
/// program that opens no device does not map them. Every path that opens a PulseAudio or ALSA
/// device asks for its library here first, so a missing library is an error naming it (and its
/// Debian package) rather than a device that silently fails to connect.
enum DeviceLibraries {
    /// Loads libpulse (once); throws ``AudioError/Code/deviceUnavailable`` naming the library
    /// when it cannot be loaded.
    static func requirePulseAudio(component: String) throws(AudioError) {
        if let why = oat_pulse_load() {
            throw AudioError(.deviceUnavailable, component: component, "PulseAudio is not available", underlying: String(cString: why))
        }
    }

    /// Loads libasound (once); throws ``AudioError/Code/deviceUnavailable`` naming the library
    /// when it cannot be loaded.
    static func requireALSA(component: String) throws(AudioError) {
        if let why = oat_alsa_load() {
            throw AudioError(.deviceUnavailable, component: component, "ALSA is not available", underlying: String(cString: why))
        }
    }

    /// Why libpulse cannot be loaded, or nil when it is (loading it if needed).
    static var pulseAudioLoadError: String? { oat_pulse_load().map { String(cString: $0) } }
    /// Why libasound cannot be loaded, or nil when it is (loading it if needed).
    static var alsaLoadError: String? { oat_alsa_load().map { String(cString: $0) } }
}
