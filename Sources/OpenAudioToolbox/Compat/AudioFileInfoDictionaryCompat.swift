// Apple's info dictionary through the C-style API: the `kAFInfoDictionary_*` keys and the
// `CFDictionary` that `kAudioFilePropertyInfoDictionary` / `kAudioFileStreamProperty_InfoDictionary`
// hand back. There is no CoreFoundation on Linux: the dictionary is Foundation's `NSDictionary`
// (string keys, string values, as Apple's), handed over +1 as Apple's "Copy" properties are, so
// code reading it into `CFDictionary?` or `Unmanaged<CFDictionary>?` works unchanged.

import OATFiles
import Foundation

/// Apple's `CFDictionary` stand-in: Foundation's `NSDictionary` (no CoreFoundation on Linux).
/// `dictionary as! [String: Any]`, `as? [String: String]` and `as NSDictionary` work as on Apple.
public typealias CFDictionary = NSDictionary

/// Info dictionary key: the artist (`"artist"`).
public let kAFInfoDictionary_Artist: String = "artist"
/// Info dictionary key: the album (`"album"`).
public let kAFInfoDictionary_Album: String = "album"
/// Info dictionary key: the tempo (`"tempo"`).
public let kAFInfoDictionary_Tempo: String = "tempo"
/// Info dictionary key: the key signature (`"key signature"`).
public let kAFInfoDictionary_KeySignature: String = "key signature"
/// Info dictionary key: the time signature (`"time signature"`).
public let kAFInfoDictionary_TimeSignature: String = "time signature"
/// Info dictionary key: the track number (`"track number"`).
public let kAFInfoDictionary_TrackNumber: String = "track number"
/// Info dictionary key: the year (`"year"`).
public let kAFInfoDictionary_Year: String = "year"
/// Info dictionary key: the composer (`"composer"`).
public let kAFInfoDictionary_Composer: String = "composer"
/// Info dictionary key: the lyricist (`"lyricist"`).
public let kAFInfoDictionary_Lyricist: String = "lyricist"
/// Info dictionary key: the genre (`"genre"`).
public let kAFInfoDictionary_Genre: String = "genre"
/// Info dictionary key: the title (`"title"`).
public let kAFInfoDictionary_Title: String = "title"
/// Info dictionary key: the recording date (`"recorded date"`).
public let kAFInfoDictionary_RecordedDate: String = "recorded date"
/// Info dictionary key: comments (`"comments"`).
public let kAFInfoDictionary_Comments: String = "comments"
/// Info dictionary key: the copyright (`"copyright"`).
public let kAFInfoDictionary_Copyright: String = "copyright"
/// Info dictionary key: the source encoder (`"source encoder"`).
public let kAFInfoDictionary_SourceEncoder: String = "source encoder"
/// Info dictionary key: the encoding application (`"encoding application"`).
public let kAFInfoDictionary_EncodingApplication: String = "encoding application"
/// Info dictionary key: the nominal bit rate (`"nominal bit rate"`).
public let kAFInfoDictionary_NominalBitRate: String = "nominal bit rate"
/// Info dictionary key: the channel layout (`"channel layout"`).
public let kAFInfoDictionary_ChannelLayout: String = "channel layout"
/// Info dictionary key: the approximate duration in seconds (`"approximate duration in seconds"`).
public let kAFInfoDictionary_ApproximateDurationInSeconds: String = "approximate duration in seconds"
/// Info dictionary key: the bit depth of the source (`"source bit depth"`).
public let kAFInfoDictionary_SourceBitDepth: String = "source bit depth"
/// Info dictionary key: the International Standard Recording Code (`"ISRC"`).
public let kAFInfoDictionary_ISRC: String = "ISRC"
/// Info dictionary key: the subtitle (`"subtitle"`).
public let kAFInfoDictionary_SubTitle: String = "subtitle"

/// The info dictionary of an open file as Apple's AudioFile gives it: the tags the container
/// parser found (ID3, MP4 `ilst`, Vorbis comments, RIFF `INFO`, AIFF text chunks, APE) plus
/// `"approximate duration in seconds"` (three decimals, as a string like every value).
func infoDictionaryObject(_ file: AudioFile) -> NSDictionary {
    var tags = file.infoDictionary
    if file.duration > 0 {
        tags[kAFInfoDictionary_ApproximateDurationInSeconds] = String(format: "%.3f", file.duration)
    }
    return tags as NSDictionary
}

/// The info dictionary of a stream parser: the tags found so far.
func infoDictionaryObject(_ stream: AudioFileStream) -> NSDictionary {
    stream.infoDictionary as NSDictionary
}
