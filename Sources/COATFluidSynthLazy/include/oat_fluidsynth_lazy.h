#ifndef OAT_FLUIDSYNTH_LAZY_H
#define OAT_FLUIDSYNTH_LAZY_H

/* FluidSynth (the sampler's and the MIDI synth's SoundFont 2 / DLS engine) is loaded with dlopen()
   on first use instead of being linked, as Rubber Band and SpeexDSP are, so a program that never
   makes a music device does not map it (nor its dependencies: glib, libsndfile, libinstpatch).

   oat_fluidsynth_load() loads the library once (thread-safe), installs a log handler that keeps
   FluidSynth's messages off stderr (the last error is kept for oat_fluidsynth_last_error()), and
   returns NULL on success or a message naming what could not be loaded. Every FluidSynth
   function the package calls is defined by this target as a trampoline into the loaded library;
   when loading failed they return NULL / -1 (FLUID_FAILED) or do nothing instead of crashing. */
const char *oat_fluidsynth_load(void);

/* The last error or warning FluidSynth logged (empty when none); control plane only (the text is
   overwritten by the next message). */
const char *oat_fluidsynth_last_error(void);

/* Clears the text oat_fluidsynth_last_error() returns. */
void oat_fluidsynth_clear_error(void);

#endif
