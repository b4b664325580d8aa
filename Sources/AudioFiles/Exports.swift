@_exported import AudioCore
