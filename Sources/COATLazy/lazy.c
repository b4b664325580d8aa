/* The shared half of the dlopen-on-first-use loaders. See include/oat_lazy.h. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "oat_lazy.h"

int oat_lazy_open(struct oat_lazy_library *l) {
    const char *other = l->environment ? getenv(l->environment) : NULL;
    if (other && *other) l->soname = other;
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

void oat_lazy_missing(struct oat_lazy_library *l, const char *name) {
    snprintf(l->error_text, sizeof l->error_text, "the installed %s lacks the function %s (%s)", l->soname, name, l->package);
    l->error = l->error_text;
    dlclose(l->handle);
    l->handle = NULL;
}
