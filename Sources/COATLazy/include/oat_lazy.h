#ifndef OAT_LAZY_H
#define OAT_LAZY_H

/* The loader that COATDeviceLazy (libpulse, libasound) and COATDSPLazy (Rubber Band, SpeexDSP)
   share: a library is opened with dlopen() on first use, the functions the package calls are
   looked up once, and each is defined as a hidden trampoline into the loaded library.

   A target lists a library's functions as an X-macro, LIST(X, V):
     X(lib, return type, name, (parameters), (arguments), value when the library is missing)
     V(lib, name, (parameters), (arguments))   for functions returning void
   where `lib` is the loader's name, and writes once, at file scope:
     OAT_LAZY_LOADER(lib, LIST, "soname", "what to install (Debian: package)", "ENV_VARIABLE" or NULL, load_function)
   That defines the function table, the loader `lib`, `const char *load_function(void)` (loads once,
   thread-safe; NULL on success or a message naming the library and its package) and every
   trampoline. A trampoline whose library could not be loaded returns the listed failure value (or
   does nothing) instead of crashing. After the first call a trampoline costs one acquire load and
   an indirect call: nothing that blocks, so they are as fit for the render and device threads as
   the functions they call.

   The environment variable, when set and not empty, names another file or soname to load (a build
   elsewhere, or a path that does not exist to check how a missing library is reported); it is read
   once, on first use.

   Include the library's own headers under `#pragma GCC visibility push(hidden)` so that the
   trampolines are not exported from the executable: dlsym() on the library handle then always
   reaches the library's own functions, never these. */
#include <pthread.h>

/* One loader a library: its name and package, a once-flag, the error, and a loaded flag. */
struct oat_lazy_library {
    const char *soname;
    const char *package;
    const char *environment; /* the variable naming another file to load, or NULL */
    pthread_once_t once;
    const char *error; /* written once inside pthread_once, read after it */
    char error_text[512];
    int loaded; /* atomic */
    void *handle;
};

/* Opens the library (RTLD_LOCAL: its symbols do not join the global namespace). 1 when it is
   open; 0, with the error set, when it is not. */
__attribute__((visibility("hidden"))) int oat_lazy_open(struct oat_lazy_library *l);

/* The library lacks `name`: sets the error and closes the library. */
__attribute__((visibility("hidden"))) void oat_lazy_missing(struct oat_lazy_library *l, const char *name);

/* 1 when the library has been loaded by its loader, 0 otherwise. */
static inline int oat_lazy_is_loaded(struct oat_lazy_library *l) { return __atomic_load_n(&l->loaded, __ATOMIC_ACQUIRE); }

#define OAT_LAZY_FIELD(lib, ret, name, params, args, fail) ret (*name) params;
#define OAT_LAZY_VFIELD(lib, name, params, args) void (*name) params;
#define OAT_LAZY_RESOLVE_AS(lib, name) \
    if (!missing) { *(void **)(&lib##_fn.name) = dlsym(lib.handle, #name); if (!lib##_fn.name) missing = #name; }
#define OAT_LAZY_RESOLVE(lib, ret, name, params, args, fail) OAT_LAZY_RESOLVE_AS(lib, name)
#define OAT_LAZY_VRESOLVE(lib, name, params, args) OAT_LAZY_RESOLVE_AS(lib, name)
#define OAT_LAZY_DEFINE(lib, ret, name, params, args, fail) \
    ret name params { if (!lib##_ready()) return fail; return lib##_fn.name args; }
#define OAT_LAZY_VDEFINE(lib, name, params, args) \
    void name params { if (lib##_ready()) lib##_fn.name args; }

/* The table, the loader, its load function and the trampolines of one library (see above). */
#define OAT_LAZY_LOADER(lib, LIST, soname, package, environment, load_function) \
    static struct { LIST(OAT_LAZY_FIELD, OAT_LAZY_VFIELD) } lib##_fn; \
    static struct oat_lazy_library lib = { soname, package, environment, PTHREAD_ONCE_INIT, NULL, {0}, 0, NULL }; \
    static void lib##_load_once(void) { \
        if (!oat_lazy_open(&lib)) return; \
        const char *missing = NULL; \
        LIST(OAT_LAZY_RESOLVE, OAT_LAZY_VRESOLVE) \
        if (missing) { oat_lazy_missing(&lib, missing); return; } \
        __atomic_store_n(&lib.loaded, 1, __ATOMIC_RELEASE); \
    } \
    const char *load_function(void) { \
        pthread_once(&lib.once, lib##_load_once); \
        return lib.error; \
    } \
    static inline int lib##_ready(void) { \
        if (__builtin_expect(__atomic_load_n(&lib.loaded, __ATOMIC_ACQUIRE), 1)) return 1; \
        return load_function() == NULL; \
    } \
    LIST(OAT_LAZY_DEFINE, OAT_LAZY_VDEFINE)

#endif
