/* Trampolines that load FluidSynth on first use. See include/oat_fluidsynth_lazy.h.

   The definitions are hidden (not exported from the executable), so dlsym() on the library
   handle always reaches the library's own functions, never these. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#pragma GCC visibility push(hidden)
#include <fluidsynth.h>
#pragma GCC visibility pop

#include <dlfcn.h>
#include <pthread.h>

#include "oat_fluidsynth_lazy.h"
#include "oat_lazy.h"

/* X(library, return type, name, (parameters), (arguments), value when the library is missing)
   V(library, name, (parameters), (arguments)) for functions returning void. */
#define OAT_FLUID_FUNCTIONS(X, V) \
    X(fluid, fluid_settings_t *, new_fluid_settings, (void), (), NULL) \
    V(fluid, delete_fluid_settings, (fluid_settings_t *s), (s)) \
    X(fluid, int, fluid_settings_setnum, (fluid_settings_t *s, const char *name, double val), (s, name, val), FLUID_FAILED) \
    X(fluid, int, fluid_settings_setint, (fluid_settings_t *s, const char *name, int val), (s, name, val), FLUID_FAILED) \
    X(fluid, int, fluid_settings_setstr, (fluid_settings_t *s, const char *name, const char *str), (s, name, str), FLUID_FAILED) \
    X(fluid, fluid_synth_t *, new_fluid_synth, (fluid_settings_t *s), (s), NULL) \
    V(fluid, delete_fluid_synth, (fluid_synth_t *s), (s)) \
    X(fluid, int, fluid_synth_sfload, (fluid_synth_t *s, const char *filename, int reset), (s, filename, reset), FLUID_FAILED) \
    X(fluid, int, fluid_synth_program_select, (fluid_synth_t *s, int chan, int sfont, int bank, int preset), (s, chan, sfont, bank, preset), FLUID_FAILED) \
    X(fluid, int, fluid_synth_noteon, (fluid_synth_t *s, int chan, int key, int vel), (s, chan, key, vel), FLUID_FAILED) \
    X(fluid, int, fluid_synth_noteoff, (fluid_synth_t *s, int chan, int key), (s, chan, key), FLUID_FAILED) \
    X(fluid, int, fluid_synth_cc, (fluid_synth_t *s, int chan, int ctrl, int val), (s, chan, ctrl, val), FLUID_FAILED) \
    X(fluid, int, fluid_synth_pitch_bend, (fluid_synth_t *s, int chan, int val), (s, chan, val), FLUID_FAILED) \
    X(fluid, int, fluid_synth_program_change, (fluid_synth_t *s, int chan, int program), (s, chan, program), FLUID_FAILED) \
    X(fluid, int, fluid_synth_channel_pressure, (fluid_synth_t *s, int chan, int val), (s, chan, val), FLUID_FAILED) \
    X(fluid, int, fluid_synth_key_pressure, (fluid_synth_t *s, int chan, int key, int val), (s, chan, key, val), FLUID_FAILED) \
    X(fluid, int, fluid_synth_sysex, (fluid_synth_t *s, const char *data, int len, char *response, int *response_len, int *handled, int dryrun), \
      (s, data, len, response, response_len, handled, dryrun), FLUID_FAILED) \
    X(fluid, int, fluid_synth_set_gen, (fluid_synth_t *s, int chan, int param, float value), (s, chan, param, value), FLUID_FAILED) \
    X(fluid, int, fluid_synth_all_sounds_off, (fluid_synth_t *s, int chan), (s, chan), FLUID_FAILED) \
    X(fluid, int, fluid_synth_set_channel_type, (fluid_synth_t *s, int chan, int type), (s, chan, type), FLUID_FAILED) \
    X(fluid, int, fluid_synth_get_active_voice_count, (fluid_synth_t *s), (s), 0) \
    X(fluid, int, fluid_synth_write_float, (fluid_synth_t *s, int len, void *lout, int loff, int lincr, void *rout, int roff, int rincr), \
      (s, len, lout, loff, lincr, rout, roff, rincr), FLUID_FAILED) \
    X(fluid, fluid_log_function_t, fluid_set_log_function, (int level, fluid_log_function_t fun, void *data), (level, fun, data), NULL)

/* OAT_FLUIDSYNTH_LIBRARY names another file or soname to load (a build elsewhere, or a path that
   does not exist to check how a missing library is reported). */
OAT_LAZY_LOADER(fluid, OAT_FLUID_FUNCTIONS, "libfluidsynth.so.3", "FluidSynth (Debian: libfluidsynth3)",
                "OAT_FLUIDSYNTH_LIBRARY", oat_fluidsynth_load_library)

static char last_error[512];

/* Keeps the message (no allocation: a copy into a static buffer) instead of printing it. */
static void oat_fluid_log(int level, const char *message, void *data) {
    (void)data;
    if (!message || level > FLUID_WARN) return;
    strncpy(last_error, message, sizeof last_error - 1);
    last_error[sizeof last_error - 1] = 0;
}

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static void oat_fluid_install_log(void) {
    for (int level = FLUID_PANIC; level < LAST_LOG_LEVEL; level++) fluid_set_log_function(level, oat_fluid_log, NULL);
}

const char *oat_fluidsynth_load(void) {
    const char *why = oat_fluidsynth_load_library();
    if (why) return why;
    pthread_once(&log_once, oat_fluid_install_log);
    return NULL;
}

const char *oat_fluidsynth_last_error(void) { return last_error; }

void oat_fluidsynth_clear_error(void) { last_error[0] = 0; }
