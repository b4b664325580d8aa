// Core Audio's C structs (CoreAudioTypes.h) that Apple's @convention(c) callback types point at,
// declared in C with Apple's field names, types and layout, so that those callback typealiases can
// be C function types as Apple's are (Swift refuses Swift-declared structs in a C function type).
// Headers only; AudioCore re-exports this module and adds the Swift API (``startOffset``, ...,
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

#pragma clang assume_nonnull end

#endif
