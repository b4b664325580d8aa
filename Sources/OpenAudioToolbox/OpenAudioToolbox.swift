@_exported import AudioCore
@_exported import AudioFiles
@_exported import AudioConversion
@_exported import AudioDevices
@_exported import AudioQueueEngine
@_exported import AudioProcessing
@_exported import AudioUnits
