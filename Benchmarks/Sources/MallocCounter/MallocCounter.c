#define _GNU_SOURCE
#include "MallocCounter.h"
#include <dlfcn.h>
#include <execinfo.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static __thread int tracking __attribute__((tls_model("initial-exec")));
static atomic_long window_counts[OAT_MC_KINDS];
static atomic_long callback_counts[OAT_MC_KINDS];
static atomic_long all_counts;

#define CALLER_LOG 512
static void *caller_log[CALLER_LOG];
static int caller_kind[CALLER_LOG];
static atomic_int caller_next;

// Stacks of the first window allocations (backtrace; warmed up by oat_mc_reset so that
// libgcc's unwinder is loaded before any counted call).
#define STACKS 64
#define STACK_DEPTH 10
static void *stacks[STACKS][STACK_DEPTH];
static int stack_depths[STACKS];
static __thread int in_backtrace __attribute__((tls_model("initial-exec")));

static inline void count(int kind, void *caller) {
    atomic_fetch_add_explicit(&all_counts, 1, memory_order_relaxed);
    int flags = tracking;
    if (__builtin_expect(flags == 0, 1) || in_backtrace) return;
    if (flags & OAT_MC_WINDOW) {
        atomic_fetch_add_explicit(&window_counts[kind], 1, memory_order_relaxed);
        int i = atomic_fetch_add_explicit(&caller_next, 1, memory_order_relaxed);
        if (i < CALLER_LOG) {
            caller_log[i] = caller;
            caller_kind[i] = kind;
        }
        if (i < STACKS) {
            in_backtrace = 1;
            stack_depths[i] = backtrace(stacks[i], STACK_DEPTH);
            in_backtrace = 0;
        }
    }
    if (flags & OAT_MC_CALLBACK) atomic_fetch_add_explicit(&callback_counts[kind], 1, memory_order_relaxed);
}

void *malloc(size_t size) {
    count(OAT_MC_MALLOC, __builtin_return_address(0));
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
    count(OAT_MC_CALLOC, __builtin_return_address(0));
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
    count(OAT_MC_REALLOC, __builtin_return_address(0));
    return __libc_realloc(p, size);
}

void free(void *p) {
    if (p == NULL) return;
    count(OAT_MC_FREE, __builtin_return_address(0));
    __libc_free(p);
}

void *memalign(size_t alignment, size_t size) {
    count(OAT_MC_MEMALIGN, __builtin_return_address(0));
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    count(OAT_MC_MEMALIGN, __builtin_return_address(0));
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    count(OAT_MC_MEMALIGN, __builtin_return_address(0));
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *p = __libc_memalign(alignment, size);
    if (p == NULL && size != 0) return ENOMEM;
    *out = p;
    return 0;
}

int oat_mc_set_flags(int flags) {
    int old = tracking;
    tracking = flags;
    return old;
}

int oat_mc_flags(void) { return tracking; }

void oat_mc_reset(void) {
    static int warmed;
    if (!warmed) {
        void *frames[4];
        in_backtrace = 1;
        backtrace(frames, 4);
        in_backtrace = 0;
        warmed = 1;
    }
    for (int k = 0; k < OAT_MC_KINDS; k++) {
        atomic_store(&window_counts[k], 0);
        atomic_store(&callback_counts[k], 0);
    }
    atomic_store(&caller_next, 0);
}

long oat_mc_count(int flag, int kind) {
    if (kind < 0 || kind >= OAT_MC_KINDS) return 0;
    return atomic_load(flag == OAT_MC_CALLBACK ? &callback_counts[kind] : &window_counts[kind]);
}

long oat_mc_all_threads(void) { return atomic_load(&all_counts); }

int oat_mc_callers(void **out, int max, int *kinds) {
    int n = atomic_load(&caller_next);
    if (n > CALLER_LOG) n = CALLER_LOG;
    if (n > max) n = max;
    for (int i = 0; i < n; i++) {
        out[i] = caller_log[i];
        if (kinds) kinds[i] = caller_kind[i];
    }
    return n;
}

const char *oat_mc_object_name(const void *address) {
    Dl_info info;
    if (dladdr(address, &info) == 0) return NULL;
    return info.dli_fname;
}

const char *oat_mc_symbol_name(const void *address) {
    Dl_info info;
    if (dladdr(address, &info) == 0) return NULL;
    return info.dli_sname;
}

int oat_mc_stack(int index, void **out, int max) {
    int n = atomic_load(&caller_next);
    if (index < 0 || index >= STACKS || index >= n) return 0;
    int d = stack_depths[index];
    if (d > max) d = max;
    for (int i = 0; i < d; i++) out[i] = stacks[index][i];
    return d;
}
