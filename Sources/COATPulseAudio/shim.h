#ifndef OAT_CPULSEAUDIO_SHIM_H
#define OAT_CPULSEAUDIO_SHIM_H
#include <pulse/pulseaudio.h>
#endif
