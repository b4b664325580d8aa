// Audio Toolbox and Core Audio HAL structs that Apple's C callback types point at, declared in C
// with Apple's field names, types and layout, so that the callback typealiases of the compat API
// (OpenAudioToolbox) can be `@convention(c)` as Apple's are (Swift refuses Swift-declared structs
// in a C function type). Headers only; OpenAudioToolbox re-exports this module and adds the Swift
// conveniences (Hashable, initialisers) in extensions.
#ifndef OAT_CAUDIOTOOLBOXTYPES_H
#define OAT_CAUDIOTOOLBOXTYPES_H

#include <stdint.h>

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

#pragma clang assume_nonnull end

#endif
