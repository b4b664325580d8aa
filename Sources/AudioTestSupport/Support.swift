import AudioFiles
