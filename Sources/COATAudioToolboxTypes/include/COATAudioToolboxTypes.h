// Audio Toolbox and Core Audio HAL structs that Apple's C callback types point at, declared in C
// with Apple's field names, types and layout, so that the callback typealiases of the compat API
// (OpenAudioToolbox) can be `@convention(c)` as Apple's are (Swift refuses Swift-declared structs
// in a C function type). Headers only; OpenAudioToolbox re-exports this module and adds the Swift
// conveniences (Hashable, initialisers) in extensions.
#ifndef OAT_CAUDIOTOOLBOXTYPES_H
#define OAT_CAUDIOTOOLBOXTYPES_H

#include <stdint.h>
#include "COATCoreAudioTypes.h"

#pragma clang assume_nonnull begin

/// Names a property of an audio object: selector, scope and element (Apple's
/// `AudioObjectPropertyAddress`, AudioHardwareBase.h).
typedef struct AudioObjectPropertyAddress {
    /// The property (`kAudioHardwarePropertyDevices`, ...).
    uint32_t mSelector;
    /// The scope (global, input, output).
    uint32_t mScope;
    /// The element (`kAudioObjectPropertyElementMain`).
    uint32_t mElement;
} AudioObjectPropertyAddress;

/// Flags passed to an AudioFileStream property listener (Apple's `AudioFileStreamPropertyFlags`).
typedef OAT_OPTIONS(uint32_t, AudioFileStreamPropertyFlags) {
    /// The parser keeps the value (always the case here).
    kAudioFileStreamPropertyFlag_PropertyIsCached = 1,
    /// The listener asks the parser to keep the value (always kept here).
    kAudioFileStreamPropertyFlag_CacheProperty = 2
} AudioFileStreamPropertyFlags;

/// A panning algorithm for `kAudioFormatProperty_PanningMatrix` (Apple's `AudioPanningMode`,
/// AudioFormat.h; a C enum so that `AudioPanningInfo` has Apple's layout).
typedef OAT_ENUM(uint32_t, AudioPanningMode) {
    /// Sound-field panning: every speaker by its closeness to the source (a first-order, cardioid
    /// decode here).
    kPanningMode_SoundField = 3,
    /// Vector-base amplitude panning between the pair of speakers around the source.
    kPanningMode_VectorBasedPanning = 4
} AudioPanningMode;

/// How `kAudioFormatProperty_BalanceFade` trades gains (Apple's `AudioBalanceFadeType`).
typedef OAT_ENUM(uint32_t, AudioBalanceFadeType) {
    /// No gain exceeds 1: the far side fades as the balance moves.
    kAudioBalanceFadeType_MaxUnityGain = 0,
    /// Constant power: 1 at the centre, up to +3 dB on the near side, silence on the far side.
    kAudioBalanceFadeType_EqualPower = 1
} AudioBalanceFadeType;

/// An audio queue buffer (Apple's `AudioQueueBuffer`, AudioQueue.h). The queue fills in the
/// constant fields when it allocates the buffer.
typedef struct AudioQueueBuffer {
    /// Bytes `mAudioData` can hold.
    const uint32_t mAudioDataBytesCapacity;
    /// The audio data.
    void * const mAudioData;
    /// Bytes of valid data; set it before enqueuing.
    uint32_t mAudioDataByteSize;
    /// Free for the caller's use.
    void * _Nullable mUserData;
    /// Packet descriptions the buffer has room for.
    const uint32_t mPacketDescriptionCapacity;
    /// The buffer's own packet descriptions (null when allocated without).
    AudioStreamPacketDescription * const _Nullable mPacketDescriptions;
    /// Valid entries in `mPacketDescriptions`.
    uint32_t mPacketDescriptionCount;
} AudioQueueBuffer;

/// Render action flags (Apple's `AudioUnitRenderActionFlags`, AUComponent.h).
typedef OAT_OPTIONS(uint32_t, AudioUnitRenderActionFlags) {
    /// Before rendering (render notifications).
    kAudioUnitRenderAction_PreRender = (1U << 2),
    /// After rendering (render notifications).
    kAudioUnitRenderAction_PostRender = (1U << 3),
    /// The buffers hold silence.
    kAudioUnitRenderAction_OutputIsSilence = (1U << 4),
    /// Offline preflight (not used here).
    kAudioOfflineUnitRenderAction_Preflight = (1U << 5),
    /// Offline render (not used here).
    kAudioOfflineUnitRenderAction_Render = (1U << 6),
    /// Offline render complete (not used here).
    kAudioOfflineUnitRenderAction_Complete = (1U << 7),
    /// A post-render notification after a render error.
    kAudioUnitRenderAction_PostRenderError = (1U << 8),
    /// Skip argument checks (accepted, no effect here).
    kAudioUnitRenderAction_DoNotCheckRenderArgs = (1U << 9)
} AudioUnitRenderActionFlags;

/// Flags of a scheduled slice (Apple's `AUScheduledAudioSliceFlags`, AudioUnitProperties.h).
typedef OAT_OPTIONS(uint32_t, AUScheduledAudioSliceFlags) {
    /// The unit has rendered all of the slice (set by the unit, with the completion proc).
    kScheduledAudioSliceFlag_Complete = 0x01,
    /// The unit has rendered part of the slice.
    kScheduledAudioSliceFlag_BeganToRender = 0x02,
    /// The slice began late.
    kScheduledAudioSliceFlag_BeganToRenderLate = 0x04,
    /// Loop the slice.
    kScheduledAudioSliceFlag_Loop = 0x08,
    /// Interrupt the current slice.
    kScheduledAudioSliceFlag_Interrupt = 0x10,
    /// Interrupt at the next loop point.
    kScheduledAudioSliceFlag_InterruptAtLoop = 0x20
} AUScheduledAudioSliceFlags;

typedef struct ScheduledAudioSlice ScheduledAudioSlice;

/// Called when the unit has rendered all of a slice (Apple's `ScheduledAudioSliceCompletionProc`):
/// the slice's user data and the slice.
typedef void (*ScheduledAudioSliceCompletionProc)(void * _Nullable userData, ScheduledAudioSlice *bufferList);

/// A slice of audio for a scheduled sound player (Apple's `ScheduledAudioSlice`,
/// AudioUnitProperties.h): `mNumberFrames` frames in `mBufferList`, in the player's output stream
/// format. The slice's memory must stay valid until the unit marks it complete.
struct ScheduledAudioSlice {
    /// When the slice plays.
    AudioTimeStamp mTimeStamp;
    /// Called once the unit has rendered all of the slice (may be null).
    ScheduledAudioSliceCompletionProc _Nullable mCompletionProc;
    /// Passed to the completion proc.
    void *mCompletionProcUserData;
    /// State flags (set by the unit).
    AUScheduledAudioSliceFlags mFlags;
    /// Reserved: 0.
    uint32_t mReserved;
    /// Reserved (the unit's own use).
    void * _Nullable mReserved2;
    /// Frames in the slice.
    uint32_t mNumberFrames;
    /// The audio.
    AudioBufferList *mBufferList;
};

/// An audio file as Apple's `AudioFileID` points at it (Apple's `OpaqueAudioFileID`).
struct OpaqueAudioFileID;

typedef struct ScheduledAudioFileRegion ScheduledAudioFileRegion;

/// Called when a file region has been read (Apple's `ScheduledAudioFileRegionCompletionProc`): the
/// region's user data, the region and a result code.
typedef void (*ScheduledAudioFileRegionCompletionProc)(void * _Nullable userData, ScheduledAudioFileRegion *fileRegion,
                                                       int32_t result);

/// A region of a file for a file player (Apple's `ScheduledAudioFileRegion`, AudioUnitProperties.h).
struct ScheduledAudioFileRegion {
    /// Where on the player's timeline the region starts (a valid sample time).
    AudioTimeStamp mTimeStamp;
    /// Called once the region has been read (may be null).
    ScheduledAudioFileRegionCompletionProc _Nullable mCompletionProc;
    /// Passed to the completion proc.
    void * _Nullable mCompletionProcUserData;
    /// The file (one of the unit's scheduled file IDs).
    struct OpaqueAudioFileID *mAudioFile;
    /// Extra repetitions (`UInt32.max`, C's -1: forever).
    uint32_t mLoopCount;
    /// First frame (file rate).
    int64_t mStartFrame;
    /// Frames to play (`UInt32.max`: to the end).
    uint32_t mFramesToPlay;
};

// MARK: CoreAudioTypes.h: channel layouts and value translations. Declared here rather than in
// COATCoreAudioTypes because OATCore (which re-exports COATCoreAudioTypes) has a Swift API type named
// `AudioChannelLayout`; OpenAudioToolbox names this one with a typealias.

/// Flags of a channel description (Apple's `AudioChannelFlags`).
typedef OAT_OPTIONS(uint32_t, AudioChannelFlags) {
    /// No coordinates.
    kAudioChannelFlags_AllOff = 0,
    /// `mCoordinates` are rectangular (left/right, back/front, down/up).
    kAudioChannelFlags_RectangularCoordinates = (1U << 0),
    /// `mCoordinates` are spherical (azimuth, elevation, distance).
    kAudioChannelFlags_SphericalCoordinates = (1U << 1),
    /// Units are metres (else relative to the unit circle or sphere).
    kAudioChannelFlags_Meters = (1U << 2)
} AudioChannelFlags;

/// One channel's label and position (Apple's `AudioChannelDescription`, 20 bytes).
typedef struct AudioChannelDescription {
    /// The label (Apple's `AudioChannelLabel`, `kAudioChannelLabel_*`).
    uint32_t mChannelLabel;
    /// Which coordinates `mCoordinates` holds.
    AudioChannelFlags mChannelFlags;
    /// The position, as `mChannelFlags` says.
    float mCoordinates[3];
} AudioChannelDescription;

/// A channel layout (Apple's `AudioChannelLayout`, 32 bytes with room for one description): a
/// tag, a bitmap when the tag is `kAudioChannelLayoutTag_UseChannelBitmap`, and
/// `mNumberChannelDescriptions` descriptions that follow in memory from `mChannelDescriptions`
/// when the tag is `kAudioChannelLayoutTag_UseChannelDescriptions`. A layout with N descriptions
/// takes `offsetof(AudioChannelLayout, mChannelDescriptions) + N * sizeof(AudioChannelDescription)`
/// bytes.
typedef struct AudioChannelLayout {
    /// The layout tag (Apple's `AudioChannelLayoutTag`, `kAudioChannelLayoutTag_*`).
    uint32_t mChannelLayoutTag;
    /// The channels present, when the tag is `kAudioChannelLayoutTag_UseChannelBitmap`.
    AudioChannelBitmap mChannelBitmap;
    /// Number of descriptions from `mChannelDescriptions` on.
    uint32_t mNumberChannelDescriptions;
    /// The first description (the others follow it in memory).
    AudioChannelDescription mChannelDescriptions[1];
} AudioChannelLayout;

/// Input and output buffers of a translating property (Apple's `AudioValueTranslation`).
typedef struct AudioValueTranslation {
    /// The value to translate.
    void *mInputData;
    /// Its size in bytes.
    uint32_t mInputDataSize;
    /// Where the translation goes.
    void *mOutputData;
    /// Its size in bytes.
    uint32_t mOutputDataSize;
} AudioValueTranslation;

// MARK: AUComponent.h / AudioUnitProperties.h: render callbacks.

/// A render callback (Apple's `AURenderCallback`, a C function type: pass a global function or a
/// closure that captures nothing, and reach your state through `inRefCon`). It runs on the render
/// thread: fill `ioData` (in the stream format set on the input scope of that bus) with
/// `inNumberFrames` frames, or point its buffers at your own memory.
typedef int32_t (*AURenderCallback)(void *inRefCon, AudioUnitRenderActionFlags *ioActionFlags,
                                    const AudioTimeStamp *inTimeStamp, uint32_t inBusNumber, uint32_t inNumberFrames,
                                    AudioBufferList * _Nullable ioData);

/// A render callback and its context (Apple's `AURenderCallbackStruct`).
typedef struct AURenderCallbackStruct {
    /// The callback (null: none).
    AURenderCallback _Nullable inputProc;
    /// Passed to the callback as `inRefCon`.
    void * _Nullable inputProcRefCon;
} AURenderCallbackStruct;

// MARK: AudioComponent.h: components and plug-ins.

/// Describes a component (Apple's `AudioComponentDescription`); 0 in type, subtype or
/// manufacturer matches anything in `AudioComponentFindNext`.
typedef struct AudioComponentDescription {
    /// `kAudioUnitType_*` (Apple's `OSType`).
    uint32_t componentType;
    /// `kAudioUnitSubType_*`.
    uint32_t componentSubType;
    /// `kAudioUnitManufacturer_Apple`, ...
    uint32_t componentManufacturer;
    /// Flags (`kAudioComponentFlag_*`); 0 when searching.
    uint32_t componentFlags;
    /// Must be 0.
    uint32_t componentFlagsMask;
} AudioComponentDescription;

/// A component (Apple's `AudioComponent`, an opaque pointer).
typedef struct OpaqueAudioComponent *AudioComponent;
/// An instance of a component (Apple's `AudioComponentInstance`, an opaque pointer).
typedef struct ComponentInstanceRecord *AudioComponentInstance;

/// A plug-in's implementation of one selector (Apple's `AudioComponentMethod`): Swift imports this
/// variadic C function pointer as an opaque pointer; cast it with `unsafeBitCast` to the
/// `@convention(c)` type of the call the selector names.
typedef int32_t (*AudioComponentMethod)(void *self, ...);

/// A component plug-in's entry points (Apple's `AudioComponentPlugInInterface`): what an
/// `AudioComponentFactoryFunction` returns. The interface pointer itself is `self` for the calls.
typedef struct AudioComponentPlugInInterface {
    /// Opens an instance: `self` is the interface, `mInstance` the new instance's handle.
    int32_t (*Open)(void *self, AudioComponentInstance mInstance);
    /// Closes the instance (after this, the interface is not used again).
    int32_t (*Close)(void *self);
    /// The method for a selector (`kAudioUnitRenderSelect`, ...), or null when not implemented.
    AudioComponentMethod _Nullable (* _Nonnull Lookup)(int16_t selector);
    /// Reserved: null.
    void * _Nullable reserved;
} AudioComponentPlugInInterface;

/// Makes a plug-in instance for a description (Apple's `AudioComponentFactoryFunction`, a C
/// function type): returns its interface, or null.
typedef AudioComponentPlugInInterface * _Nullable (*AudioComponentFactoryFunction)(const AudioComponentDescription *inDesc);

// The C types of a unit plug-in's methods (AUComponent.h): what its `Lookup` returns for a
// selector, cast to `AudioComponentMethod`; `self` is the plug-in's interface pointer.

/// `kAudioUnitInitializeSelect` (Apple's `AudioUnitInitializeProc`).
typedef int32_t (*AudioUnitInitializeProc)(void *self);
/// `kAudioUnitUninitializeSelect` (Apple's `AudioUnitUninitializeProc`).
typedef int32_t (*AudioUnitUninitializeProc)(void *self);
/// `kAudioUnitGetPropertySelect` (Apple's `AudioUnitGetPropertyProc`).
typedef int32_t (*AudioUnitGetPropertyProc)(void *self, uint32_t prop, uint32_t scope, uint32_t elem, void *outData,
                                            uint32_t *ioDataSize);
/// `kAudioUnitSetPropertySelect` (Apple's `AudioUnitSetPropertyProc`).
typedef int32_t (*AudioUnitSetPropertyProc)(void *self, uint32_t prop, uint32_t scope, uint32_t elem,
                                            const void * _Nullable inData, uint32_t inDataSize);
/// `kAudioUnitGetParameterSelect` (Apple's `AudioUnitGetParameterProc`).
typedef int32_t (*AudioUnitGetParameterProc)(void *inComponentStorage, uint32_t inID, uint32_t inScope, uint32_t inElement,
                                             float *outValue);
/// `kAudioUnitSetParameterSelect` (Apple's `AudioUnitSetParameterProc`).
typedef int32_t (*AudioUnitSetParameterProc)(void *inComponentStorage, uint32_t inID, uint32_t inScope, uint32_t inElement,
                                             float inValue, uint32_t inBufferOffsetInFrames);
/// `kAudioUnitRenderSelect` (Apple's `AudioUnitRenderProc`).
typedef int32_t (*AudioUnitRenderProc)(void *inComponentStorage, AudioUnitRenderActionFlags * _Nullable ioActionFlags,
                                       const AudioTimeStamp *inTimeStamp, uint32_t inOutputBusNumber, uint32_t inNumberFrames,
                                       AudioBufferList *ioData);
/// `kAudioUnitResetSelect` (Apple's `AudioUnitResetProc`).
typedef int32_t (*AudioUnitResetProc)(void *self, uint32_t inScope, uint32_t inElement);

// MARK: MusicPlayer.h: the event structs of music tracks.

/// A MIDI note with its duration in beats (Apple's `MIDINoteMessage`).
typedef struct MIDINoteMessage {
    /// MIDI channel, 0...15.
    uint8_t channel;
    /// Note number, 0...127.
    uint8_t note;
    /// Note-on velocity, 1...127.
    uint8_t velocity;
    /// Note-off velocity, 0...127.
    uint8_t releaseVelocity;
    /// Duration in beats.
    float duration;
} MIDINoteMessage;

/// A MIDI channel message other than a note (Apple's `MIDIChannelMessage`).
typedef struct MIDIChannelMessage {
    /// Status byte (0xA0...0xEF), channel in the low nibble.
    uint8_t status;
    /// First data byte.
    uint8_t data1;
    /// Second data byte.
    uint8_t data2;
    /// Must be 0.
    uint8_t reserved;
} MIDIChannelMessage;

/// Raw MIDI bytes, System Exclusive (Apple's `MIDIRawData`): `length` bytes from `data` on.
typedef struct MIDIRawData {
    /// Bytes in `data`.
    uint32_t length;
    /// The first byte (the rest follow it in memory).
    uint8_t data;
} MIDIRawData;

/// A Standard MIDI File meta event (Apple's `MIDIMetaEvent`): `dataLength` bytes from `data` on.
typedef struct MIDIMetaEvent {
    /// The meta event type (0x01 text, 0x03 track name, 0x51 tempo, 0x58 time signature, ...).
    uint8_t metaEventType;
    /// Unused: 0.
    uint8_t unused1;
    /// Unused: 0.
    uint8_t unused2;
    /// Unused: 0.
    uint8_t unused3;
    /// Bytes in `data`.
    uint32_t dataLength;
    /// The first byte (the rest follow it in memory).
    uint8_t data;
} MIDIMetaEvent;

/// A user event's bytes (Apple's `MusicEventUserData`): `length` bytes from `data` on.
typedef struct MusicEventUserData {
    /// Bytes in `data`.
    uint32_t length;
    /// The first byte (the rest follow it in memory).
    uint8_t data;
} MusicEventUserData;

/// A tempo change (Apple's `ExtendedTempoEvent`).
typedef struct ExtendedTempoEvent {
    /// Beats per minute.
    double bpm;
} ExtendedTempoEvent;

/// An audio unit parameter change on a track (Apple's `ParameterEvent`).
typedef struct ParameterEvent {
    /// The parameter (`AudioUnitParameterID`).
    uint32_t parameterID;
    /// Its scope (`AudioUnitScope`).
    uint32_t scope;
    /// Its element (`AudioUnitElement`).
    uint32_t element;
    /// The value (`AudioUnitParameterValue`).
    float value;
} ParameterEvent;

/// A track's looping (Apple's `MusicTrackLoopInfo`).
typedef struct MusicTrackLoopInfo {
    /// Beats from the track's start that repeat.
    double loopDuration;
    /// Times the loop plays; 0 loops forever.
    int32_t numberOfLoops;
} MusicTrackLoopInfo;

/// A time as bar, beat and sub-beat (Apple's `CABarBeatTime`).
typedef struct CABarBeatTime {
    /// Bar, from 1.
    int32_t bar;
    /// Beat in the bar, from 1.
    uint16_t beat;
    /// Sub-beat, from 0.
    uint16_t subbeat;
    /// Sub-beats per beat.
    uint16_t subbeatDivisor;
    /// Must be 0.
    uint16_t reserved;
} CABarBeatTime;

#pragma clang assume_nonnull end

#endif
