// Core Audio's C structs (CoreAudioTypes.h) that Apple's @convention(c) callback types point at,
// declared in C with Apple's field names, types and layout, so that those callback typealiases can
// be C function types as Apple's are (Swift refuses Swift-declared structs in a C function type).
// Headers only; OATCore re-exports this module and adds the Swift API (``startOffset``, ...,
// Hashable) in extensions.
#ifndef OAT_CCOREAUDIOTYPES_H
#define OAT_CCOREAUDIOTYPES_H

#include <stdint.h>

/// Declares an option set as Apple's CF_OPTIONS does: Swift imports it as an OptionSet struct whose
/// members drop the enumerators' common prefix.
#define OAT_OPTIONS(_type, _name) enum __attribute__((flag_enum, enum_extensibility(open))) _name : _type

#pragma clang assume_nonnull begin

/// Where one packet lies in a buffer of packets (Apple's `AudioStreamPacketDescription`).
typedef struct AudioStreamPacketDescription {
    /// Byte offset of the packet from the start of the buffer.
    int64_t mStartOffset;
    /// Frames in the packet when the format's frames per packet varies, else 0.
    uint32_t mVariableFramesInPacket;
    /// Size of the packet in bytes.
    uint32_t mDataByteSize;
} AudioStreamPacketDescription;

/// Declares an enumeration as Apple's CF_ENUM does.
#define OAT_ENUM(_type, _name) enum __attribute__((enum_extensibility(open))) _name : _type

/// The SMPTE frame rate of a ``SMPTETime`` (Apple's `SMPTETimeType`).
typedef OAT_ENUM(uint32_t, SMPTETimeType) {
    kSMPTETimeType24 = 0,
    kSMPTETimeType25 = 1,
    kSMPTETimeType30Drop = 2,
    kSMPTETimeType30 = 3,
    kSMPTETimeType2997 = 4,
    kSMPTETimeType2997Drop = 5,
    kSMPTETimeType60 = 6,
    kSMPTETimeType5994 = 7,
    kSMPTETimeType60Drop = 8,
    kSMPTETimeType5994Drop = 9,
    kSMPTETimeType50 = 10,
    kSMPTETimeType2398 = 11
} SMPTETimeType;

/// Flags of a ``SMPTETime`` (Apple's `SMPTETimeFlags`).
typedef OAT_OPTIONS(uint32_t, SMPTETimeFlags) {
    kSMPTETimeUnknown = 0,
    kSMPTETimeValid = (1U << 0),
    kSMPTETimeRunning = (1U << 1)
} SMPTETimeFlags;

/// SMPTE time (Apple's `SMPTETime`). OpenAudioToolbox time stamps carry no SMPTE time: it is
/// always zero.
typedef struct SMPTETime {
    int16_t mSubframes;
    int16_t mSubframeDivisor;
    uint32_t mCounter;
    SMPTETimeType mType;
    SMPTETimeFlags mFlags;
    int16_t mHours;
    int16_t mMinutes;
    int16_t mSeconds;
    int16_t mFrames;
} SMPTETime;

/// Which fields of an ``AudioTimeStamp`` are valid (Apple's `AudioTimeStampFlags`).
typedef OAT_OPTIONS(uint32_t, AudioTimeStampFlags) {
    kAudioTimeStampNothingValid = 0,
    /// `mSampleTime` is valid.
    kAudioTimeStampSampleTimeValid = (1U << 0),
    /// `mHostTime` is valid.
    kAudioTimeStampHostTimeValid = (1U << 1),
    /// `mRateScalar` is valid.
    kAudioTimeStampRateScalarValid = (1U << 2),
    /// `mWordClockTime` is valid (never set by OpenAudioToolbox).
    kAudioTimeStampWordClockTimeValid = (1U << 3),
    /// `mSMPTETime` is valid (never set by OpenAudioToolbox).
    kAudioTimeStampSMPTETimeValid = (1U << 4),
    /// Sample and host time are valid.
    kAudioTimeStampSampleHostTimeValid = (kAudioTimeStampSampleTimeValid | kAudioTimeStampHostTimeValid)
} AudioTimeStampFlags;

/// A point in time on a stream's sample timeline and on the host clock (Apple's `AudioTimeStamp`).
/// Host times here are nanoseconds of CLOCK_MONOTONIC (`HostTime`).
typedef struct AudioTimeStamp {
    /// Position in frames on the stream's timeline.
    double mSampleTime;
    /// The host time that corresponds to `mSampleTime`.
    uint64_t mHostTime;
    /// Ratio of actual to nominal sample rate.
    double mRateScalar;
    /// Word-clock time (never set by OpenAudioToolbox).
    uint64_t mWordClockTime;
    /// SMPTE time (never set by OpenAudioToolbox).
    SMPTETime mSMPTETime;
    /// Which fields are valid.
    AudioTimeStampFlags mFlags;
    /// Padding: 0.
    uint32_t mReserved;
} AudioTimeStamp;

/// One buffer of audio (Apple's `AudioBuffer`).
typedef struct AudioBuffer {
    /// Interleaved channels in the buffer.
    uint32_t mNumberChannels;
    /// Bytes in the buffer.
    uint32_t mDataByteSize;
    /// The bytes.
    void * _Nullable mData;
} AudioBuffer;

/// A variable-length list of buffers (Apple's `AudioBufferList`): `mNumberBuffers` buffers follow
/// in memory, the first being `mBuffers`.
typedef struct AudioBufferList {
    /// Number of buffers.
    uint32_t mNumberBuffers;
    /// The first buffer (the others follow it in memory).
    AudioBuffer mBuffers[1];
} AudioBufferList;

/// Where a processing tap sits and what it may do, plus the stream flags a tap sees (Apple's
/// `AudioQueueProcessingTapFlags`, AudioQueue.h; the Swift queue API shares it).
typedef OAT_OPTIONS(uint32_t, AudioQueueProcessingTapFlags) {
    /// The tap sees decoded audio before the queue's time-pitch stage.
    kAudioQueueProcessingTap_PreEffects = (1 << 0),
    /// The tap sees audio after the time-pitch stage.
    kAudioQueueProcessingTap_PostEffects = (1 << 1),
    /// The tap only observes: what it returns is ignored and the source passes on unchanged.
    kAudioQueueProcessingTap_Siphon = (1 << 2),
    /// The first audio after start or reset.
    kAudioQueueProcessingTap_StartOfStream = (1 << 8),
    /// The last audio of the stream.
    kAudioQueueProcessingTap_EndOfStream = (1 << 9)
} AudioQueueProcessingTapFlags;

/// The description of an audio stream (Apple's `AudioStreamBasicDescription`, 40 bytes). A
/// *packet* is the smallest indivisible unit of the format, a *frame* one sample per channel; 0 in
/// `mBytesPerPacket` or `mFramesPerPacket` means the value varies. OATCore adds the Swift API's
/// names (`sampleRate`, `formatID`, ...) in an extension.
typedef struct AudioStreamBasicDescription {
    /// Frames per second at normal playback rate.
    double mSampleRate;
    /// The format (Apple's `AudioFormatID`, a four-character code).
    uint32_t mFormatID;
    /// Format-specific flags (Apple's `AudioFormatFlags`).
    uint32_t mFormatFlags;
    /// Bytes in a packet, or 0 when packet sizes vary.
    uint32_t mBytesPerPacket;
    /// Frames in a packet, or 0 when it varies.
    uint32_t mFramesPerPacket;
    /// Bytes from the start of one frame to the next in one buffer (0 for compressed formats).
    uint32_t mBytesPerFrame;
    /// Channels in each frame.
    uint32_t mChannelsPerFrame;
    /// Bits of sample data per channel (0 for compressed formats).
    uint32_t mBitsPerChannel;
    /// Pads the structure to an even size; 0.
    uint32_t mReserved;
} AudioStreamBasicDescription;

/// One entry of a format list (Apple's `AudioFormatListItem`, AudioFormat.h): a stream description
/// with the channel layout tag (Apple's `AudioChannelLayoutTag`) it applies to.
typedef struct AudioFormatListItem {
    /// The stream description.
    AudioStreamBasicDescription mASBD;
    /// The channel layout tag for this layer.
    uint32_t mChannelLayoutTag;
} AudioFormatListItem;

/// Priming and remainder frames of an encoded stream (Apple's `AudioFilePacketTableInfo`,
/// AudioFile.h): valid + priming + remainder frames are the frames the packets decode to.
typedef struct AudioFilePacketTableInfo {
    /// Frames of real audio.
    int64_t mNumberValidFrames;
    /// Frames of encoder delay at the start to discard.
    int32_t mPrimingFrames;
    /// Frames of padding at the end to discard.
    int32_t mRemainderFrames;
} AudioFilePacketTableInfo;

/// Frames an encoder added at the start and end (Apple's `AudioConverterPrimeInfo`,
/// AudioConverter.h; Apple's fields have no `m` prefix).
typedef struct AudioConverterPrimeInfo {
    /// Frames to drop at the start of the decoded audio.
    uint32_t leadingFrames;
    /// Frames to drop at the end.
    uint32_t trailingFrames;
} AudioConverterPrimeInfo;

/// Level of one channel over the last render period (Apple's `AudioQueueLevelMeterState`,
/// AudioQueue.h): linear 0...1, or dB when asked for dB.
typedef struct AudioQueueLevelMeterState {
    /// RMS level.
    float mAveragePower;
    /// Peak level.
    float mPeakPower;
} AudioQueueLevelMeterState;

/// Flags for parsing a stream's bytes (Apple's `AudioFileStreamParseFlags`, AudioFileStream.h).
typedef OAT_OPTIONS(uint32_t, AudioFileStreamParseFlags) {
    /// The bytes do not follow the previous ones (after a seek, or data was lost).
    kAudioFileStreamParseFlag_Discontinuity = 1
} AudioFileStreamParseFlags;

/// The channels present in a layout, one bit each in USB (WAVE `dwChannelMask`) order (Apple's
/// `AudioChannelBitmap`).
typedef OAT_OPTIONS(uint32_t, AudioChannelBitmap) {
    kAudioChannelBit_Left = (1U << 0),
    kAudioChannelBit_Right = (1U << 1),
    kAudioChannelBit_Center = (1U << 2),
    kAudioChannelBit_LFEScreen = (1U << 3),
    kAudioChannelBit_LeftSurround = (1U << 4),
    kAudioChannelBit_RightSurround = (1U << 5),
    kAudioChannelBit_LeftCenter = (1U << 6),
    kAudioChannelBit_RightCenter = (1U << 7),
    kAudioChannelBit_CenterSurround = (1U << 8),
    kAudioChannelBit_LeftSurroundDirect = (1U << 9),
    kAudioChannelBit_RightSurroundDirect = (1U << 10),
    kAudioChannelBit_TopCenterSurround = (1U << 11),
    kAudioChannelBit_VerticalHeightLeft = (1U << 12),
    kAudioChannelBit_VerticalHeightCenter = (1U << 13),
    kAudioChannelBit_VerticalHeightRight = (1U << 14),
    kAudioChannelBit_TopBackLeft = (1U << 15),
    kAudioChannelBit_TopBackCenter = (1U << 16),
    kAudioChannelBit_TopBackRight = (1U << 17),
    kAudioChannelBit_LeftTopFront = kAudioChannelBit_VerticalHeightLeft,
    kAudioChannelBit_CenterTopFront = kAudioChannelBit_VerticalHeightCenter,
    kAudioChannelBit_RightTopFront = kAudioChannelBit_VerticalHeightRight,
    kAudioChannelBit_LeftTopMiddle = (1U << 21),
    kAudioChannelBit_CenterTopMiddle = kAudioChannelBit_TopCenterSurround,
    kAudioChannelBit_RightTopMiddle = (1U << 23),
    kAudioChannelBit_LeftTopRear = (1U << 24),
    kAudioChannelBit_CenterTopRear = (1U << 25),
    kAudioChannelBit_RightTopRear = (1U << 26)
} AudioChannelBitmap;

#pragma clang assume_nonnull end

#endif
