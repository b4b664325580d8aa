// OpenAudioToolbox: Audio Toolbox's C-style API under Apple's names (Compat/), on top of the
// Swift API, which this module re-exports (AudioToolboxKit and every layer below it).
@_exported import AudioToolboxKit
// Apple's C structs that the @convention(c) callback types point at (AudioObjectPropertyAddress, ...).
@_exported import COATAudioToolboxTypes
