// Audio Toolbox and Core Audio HAL structs that Apple's C callback types point at, declared in C
// with Apple's field names, types and layout, so that the callback typealiases of the compat API
// (OpenAudioToolbox) can be `@convention(c)` as Apple's are (Swift refuses Swift-declared structs
// in a C function type). Headers only; OpenAudioToolbox re-exports this module and adds the Swift
// conveniences (Hashable, initialisers) in extensions.
#ifndef OAT_CAUDIOTOOLBOXTYPES_H
#define OAT_CAUDIOTOOLBOXTYPES_H

#include <stdint.h>
#include "CCoreAudioTypes.h"

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

#pragma clang assume_nonnull end

#endif
