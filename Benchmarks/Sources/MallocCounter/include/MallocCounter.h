#ifndef OAT_MALLOC_COUNTER_H
#define OAT_MALLOC_COUNTER_H

// Counts calls into the C allocator made by threads that opt in.
//
// Linked into an executable, this file's malloc/calloc/realloc/free/posix_memalign/
// aligned_alloc/memalign take precedence over glibc's for every library in the process
// (the executable comes first in symbol lookup); each forwards to glibc's __libc_* entry
// points. A thread opts in with oat_mc_set_flags: bit 0 counts into the "window" counters
// (and records the caller of the allocation), bit 1 into the "callback" counters.

#include <stddef.h>

enum {
    OAT_MC_MALLOC = 0,
    OAT_MC_CALLOC = 1,
    OAT_MC_REALLOC = 2,
    OAT_MC_FREE = 3,
    OAT_MC_MEMALIGN = 4,
    OAT_MC_KINDS = 5,
};

enum { OAT_MC_WINDOW = 1, OAT_MC_CALLBACK = 2 };

/// Sets the calling thread's counting flags (OAT_MC_WINDOW | OAT_MC_CALLBACK); returns the old ones.
int oat_mc_set_flags(int flags);
/// The calling thread's flags.
int oat_mc_flags(void);
/// Zeroes every counter and the caller log.
void oat_mc_reset(void);
/// Calls of `kind` counted under `flag` (OAT_MC_WINDOW or OAT_MC_CALLBACK) since the last reset.
long oat_mc_count(int flag, int kind);
/// Calls of any kind made by any thread since the process started (proves the shim is in use).
long oat_mc_all_threads(void);
/// Copies up to `max` recorded callers (return addresses of window allocations); returns how many.
int oat_mc_callers(void **out, int max, int *kinds);
/// The file name of the object holding `address` (dladdr), or NULL.
const char *oat_mc_object_name(const void *address);
/// The symbol nearest `address` (dladdr), or NULL.
const char *oat_mc_symbol_name(const void *address);

/// The stack (return addresses, innermost first) of window allocation `index` (< 64); returns its depth.
int oat_mc_stack(int index, void **out, int max);

#endif
