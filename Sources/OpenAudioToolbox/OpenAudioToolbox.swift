@_exported import AudioCore
@_exported import AudioFiles
