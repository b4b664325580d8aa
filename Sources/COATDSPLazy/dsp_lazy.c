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
#pragma GCC visibility pop

#include <dlfcn.h>
#include <pthread.h>

#include "oat_dsp_lazy.h"

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

#define OAT_FIELD(lib, ret, name, params, args, fail) ret (*name) params;
#define OAT_VFIELD(lib, name, params, args) void (*name) params;

/* One loader per library: its function table, a once-flag, the error, and a loaded flag. */
struct loader {
    const char *soname;
    const char *package;
    pthread_once_t once;
    const char *error; /* written once inside pthread_once, read after it */
    char error_text[384];
    int loaded; /* atomic */
    void *handle;
};

static struct { OAT_RB_FUNCTIONS(OAT_FIELD, OAT_VFIELD) } rb_fn;
static struct { OAT_SPEEX_FUNCTIONS(OAT_FIELD, OAT_VFIELD) } speex_fn;
static struct loader rb = { "librubberband.so.2", "Rubber Band (Debian: librubberband2)", PTHREAD_ONCE_INIT, NULL, {0}, 0, NULL };
static struct loader speex = { "libspeexdsp.so.1", "SpeexDSP (Debian: libspeexdsp1)", PTHREAD_ONCE_INIT, NULL, {0}, 0, NULL };

static int open_library(struct loader *l) {
    /* RTLD_LOCAL: the library's symbols do not join the global namespace. */
    l->handle = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
    if (!l->handle) {
        const char *why = dlerror();
        snprintf(l->error_text, sizeof l->error_text, "%s is not installed or not loadable: cannot load %s (%s)",
                 l->package, l->soname, why ? why : "unknown error");
        l->error = l->error_text;
        return 0;
    }
    return 1;
}

static void missing_function(struct loader *l, const char *name) {
    snprintf(l->error_text, sizeof l->error_text, "the installed %s lacks the function %s", l->soname, name);
    l->error = l->error_text;
}

#define OAT_RESOLVE_AS(lib, name) \
    if (!missing) { *(void **)(&lib##_fn.name) = dlsym(lib.handle, #name); if (!lib##_fn.name) missing = #name; }
#define OAT_RESOLVE(lib, ret, name, params, args, fail) OAT_RESOLVE_AS(lib, name)
#define OAT_VRESOLVE(lib, name, params, args) OAT_RESOLVE_AS(lib, name)

static void load_rb(void) {
    /* OAT_RUBBERBAND_LIBRARY names another file or soname to load (a build elsewhere, or a
       path that does not exist to check how a missing library is reported). */
    const char *other = getenv("OAT_RUBBERBAND_LIBRARY");
    if (other && *other) rb.soname = other;
    if (!open_library(&rb)) return;
    const char *missing = NULL;
    OAT_RB_FUNCTIONS(OAT_RESOLVE, OAT_VRESOLVE)
    if (missing) { missing_function(&rb, missing); return; }
    __atomic_store_n(&rb.loaded, 1, __ATOMIC_RELEASE);
}

static void load_speex(void) {
    if (!open_library(&speex)) return;
    const char *missing = NULL;
    OAT_SPEEX_FUNCTIONS(OAT_RESOLVE, OAT_VRESOLVE)
    if (missing) { missing_function(&speex, missing); return; }
    __atomic_store_n(&speex.loaded, 1, __ATOMIC_RELEASE);
}

const char *oat_rubberband_load(void) {
    pthread_once(&rb.once, load_rb);
    return rb.error;
}

const char *oat_speexdsp_load(void) {
    pthread_once(&speex.once, load_speex);
    return speex.error;
}

static inline int rb_ready(void) {
    if (__builtin_expect(__atomic_load_n(&rb.loaded, __ATOMIC_ACQUIRE), 1)) return 1;
    return oat_rubberband_load() == NULL;
}

static inline int speex_ready(void) {
    if (__builtin_expect(__atomic_load_n(&speex.loaded, __ATOMIC_ACQUIRE), 1)) return 1;
    return oat_speexdsp_load() == NULL;
}

#define OAT_DEFINE(lib, ret, name, params, args, fail) \
    ret name params { if (!lib##_ready()) return fail; return lib##_fn.name args; }
#define OAT_VDEFINE(lib, name, params, args) \
    void name params { if (lib##_ready()) lib##_fn.name args; }
OAT_RB_FUNCTIONS(OAT_DEFINE, OAT_VDEFINE)
OAT_SPEEX_FUNCTIONS(OAT_DEFINE, OAT_VDEFINE)
