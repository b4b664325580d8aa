// AudioToolboxKit: the Swift API in one import (every layer below, plus the file player, the
// recorder, file conversion and the tools' shared helpers). `OpenAudioToolbox` re-exports it and
// adds the Apple-named C-style API (Compat/), which needs Foundation's URL; programs that do not
// need Apple's names (afplay, afinfo, afconvert, afrecord) import this module and so do not load
// Foundation at all.
@_exported import OATCore
@_exported import OATFiles
@_exported import OATConversion
@_exported import OATDevices
@_exported import OATQueueEngine
@_exported import OATProcessing
@_exported import OATUnits
@_exported import OATNetwork
@_exported import OATStreaming
