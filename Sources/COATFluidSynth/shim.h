#ifndef OAT_CFLUIDSYNTH_SHIM_H
#define OAT_CFLUIDSYNTH_SHIM_H
#include <fluidsynth.h>
#endif
