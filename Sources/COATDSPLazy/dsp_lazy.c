/* Trampolines that load Rubber Band and SpeexDSP on first use. See include/oat_dsp_lazy.h.

   The definitions are hidden (not exported from the executable), so dlsym() on the library
   handle always reaches the library's own functions, never these. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#pragma GCC visibility push(hidden)
#include <rubberband/rubberband-c.h>
#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>
#include <mysofa.h>
#pragma GCC visibility pop

#include <dlfcn.h>
#include <pthread.h>

#include "oat_dsp_lazy.h"
#include "oat_lazy.h"

/* X(library, return type, name, (parameters), (arguments), value when the library is missing)
   V(library, name, (parameters), (arguments)) for functions returning void. */
#define OAT_RB_FUNCTIONS(X, V) \
    X(rb, RubberBandState, rubberband_new, (unsigned int rate, unsigned int channels, RubberBandOptions options, double ratio, double scale), (rate, channels, options, ratio, scale), NULL) \
    V(rb, rubberband_delete, (RubberBandState s), (s)) \
    V(rb, rubberband_reset, (RubberBandState s), (s)) \
    V(rb, rubberband_set_time_ratio, (RubberBandState s, double ratio), (s, ratio)) \
    V(rb, rubberband_set_pitch_scale, (RubberBandState s, double scale), (s, scale)) \
    X(rb, unsigned int, rubberband_get_preferred_start_pad, (const RubberBandState s), (s), 0) \
    X(rb, unsigned int, rubberband_get_start_delay, (const RubberBandState s), (s), 0) \
    X(rb, unsigned int, rubberband_get_samples_required, (const RubberBandState s), (s), 0) \
    V(rb, rubberband_set_max_process_size, (RubberBandState s, unsigned int samples), (s, samples)) \
    V(rb, rubberband_process, (RubberBandState s, const float *const *input, unsigned int samples, int final), (s, input, samples, final)) \
    X(rb, int, rubberband_available, (const RubberBandState s), (s), -1) \
    X(rb, unsigned int, rubberband_retrieve, (const RubberBandState s, float *const *output, unsigned int samples), (s, output, samples), 0)

#define OAT_SPEEX_FUNCTIONS(X, V) \
    X(speex, SpeexEchoState *, speex_echo_state_init, (int frame_size, int filter_length), (frame_size, filter_length), NULL) \
    V(speex, speex_echo_state_destroy, (SpeexEchoState *st), (st)) \
    V(speex, speex_echo_cancellation, (SpeexEchoState *st, const spx_int16_t *rec, const spx_int16_t *play, spx_int16_t *out), (st, rec, play, out)) \
    V(speex, speex_echo_state_reset, (SpeexEchoState *st), (st)) \
    X(speex, int, speex_echo_ctl, (SpeexEchoState *st, int request, void *ptr), (st, request, ptr), -1) \
    X(speex, SpeexPreprocessState *, speex_preprocess_state_init, (int frame_size, int sampling_rate), (frame_size, sampling_rate), NULL) \
    V(speex, speex_preprocess_state_destroy, (SpeexPreprocessState *st), (st)) \
    X(speex, int, speex_preprocess_run, (SpeexPreprocessState *st, spx_int16_t *x), (st, x), 0) \
    X(speex, int, speex_preprocess_ctl, (SpeexPreprocessState *st, int request, void *ptr), (st, request, ptr), -1)

/* libmysofa (SOFA HRTF sets: the spatial mixer's HRTF rendering). */
#define OAT_MYSOFA_FUNCTIONS(X, V) \
    X(mysofa, struct MYSOFA_EASY *, mysofa_open, (const char *filename, float samplerate, int *filterlength, int *err), (filename, samplerate, filterlength, err), NULL) \
    V(mysofa, mysofa_getfilter_float, (struct MYSOFA_EASY *easy, float x, float y, float z, float *IRleft, float *IRright, float *delayLeft, float *delayRight), (easy, x, y, z, IRleft, IRright, delayLeft, delayRight)) \
    V(mysofa, mysofa_close, (struct MYSOFA_EASY *easy), (easy))

/* OAT_RUBBERBAND_LIBRARY names another file or soname to load (a build elsewhere, or a path that
   does not exist to check how a missing library is reported). */
OAT_LAZY_LOADER(rb, OAT_RB_FUNCTIONS, "librubberband.so.2", "Rubber Band (Debian: librubberband2)",
                "OAT_RUBBERBAND_LIBRARY", oat_rubberband_load)
OAT_LAZY_LOADER(speex, OAT_SPEEX_FUNCTIONS, "libspeexdsp.so.1", "SpeexDSP (Debian: libspeexdsp1)", NULL, oat_speexdsp_load)
/* OAT_MYSOFA_LIBRARY names another file or soname to load (or a path that does not exist, to check
   how a missing library is reported). */
OAT_LAZY_LOADER(mysofa, OAT_MYSOFA_FUNCTIONS, "libmysofa.so.1", "libmysofa (Debian: libmysofa1)", "OAT_MYSOFA_LIBRARY", oat_mysofa_load)
