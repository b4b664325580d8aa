// AudioToolboxKit: the Swift API in one import (every layer below, plus the file player, the
// recorder, file conversion and the tools' shared helpers). `OpenAudioToolbox` re-exports it and
// adds the Apple-named C-style API (Compat/), which needs Foundation's URL; programs that do not
// need Apple's names (afplay, afinfo, afconvert, afrecord) import this module and so do not load
// Foundation at all.
@_exported import AudioCore
@_exported import AudioFiles
@_exported import AudioConversion
@_exported import AudioDevices
@_exported import AudioQueueEngine
@_exported import AudioProcessing
@_exported import AudioUnits
@_exported import AudioNetwork
@_exported import AudioStreaming
