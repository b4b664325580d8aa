#ifndef OAT_DSP_LAZY_H
#define OAT_DSP_LAZY_H

/* Rubber Band (time-stretch / pitch-shift) and SpeexDSP (echo cancellation, noise suppression)
   are loaded with dlopen() on first use instead of being linked, as FFmpeg and libcurl are, so a
   program that never changes rate or pitch and never processes voice (afplay FILE) does not map
   them (nor Rubber Band's C++ runtime) at launch.

   oat_rubberband_load() / oat_speexdsp_load() load the library once (thread-safe) and return NULL
   on success, or a message naming what could not be loaded. Every Rubber Band and SpeexDSP
   function the package calls is defined by this target as a trampoline into the loaded library;
   when loading failed they return NULL / 0 / -1 or do nothing instead of crashing. */
const char *oat_rubberband_load(void);
const char *oat_speexdsp_load(void);

/* libmysofa (HRTF sets in the SOFA format, for the spatial mixer's HRTF algorithms) likewise:
   oat_mysofa_load() returns NULL once libmysofa.so.1 is loaded, else a message naming it. */
const char *oat_mysofa_load(void);

#endif
