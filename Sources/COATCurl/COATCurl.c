/* libcurl, loaded with dlopen() on first use (see include/COATCurl.h), and non-variadic wrappers
   for its variadic calls and macros.

   The curl functions the package calls are defined here as hidden trampolines (not exported from
   the executable): libcurl's own internal calls never reach them, and dlsym() on the library
   handle finds libcurl's definitions. A program that never opens a URL (afplay FILE, afinfo)
   therefore does not load libcurl and the TLS, Kerberos, LDAP and SSH libraries it needs. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#pragma GCC visibility push(hidden)
#include <curl/curl.h>
#pragma GCC visibility pop
#include "COATCurl.h"

static const char *const library_name = "libcurl.so.4";

/* X(return type, name, (parameters), (arguments), value when libcurl is missing) */
#define OAT_CURL_FUNCTIONS(X) \
    X(CURLcode, curl_global_init, (long flags), (flags), CURLE_FAILED_INIT) \
    X(CURL *, curl_easy_init, (void), (), NULL) \
    X(const char *, curl_easy_strerror, (CURLcode code), (code), "libcurl is not loaded") \
    X(time_t, curl_getdate, (const char *p, const time_t *unused), (p, unused), -1) \
    X(CURLM *, curl_multi_init, (void), (), NULL) \
    X(CURLMcode, curl_multi_add_handle, (CURLM *multi, CURL *easy), (multi, easy), CURLM_INTERNAL_ERROR) \
    X(CURLMcode, curl_multi_remove_handle, (CURLM *multi, CURL *easy), (multi, easy), CURLM_INTERNAL_ERROR) \
    X(CURLMsg *, curl_multi_info_read, (CURLM *multi, int *left), (multi, left), NULL) \
    X(CURLMcode, curl_multi_perform, (CURLM *multi, int *running), (multi, running), CURLM_INTERNAL_ERROR) \
    X(CURLMcode, curl_multi_poll, (CURLM *multi, struct curl_waitfd extra[], unsigned int count, int timeout, int *numfds), (multi, extra, count, timeout, numfds), CURLM_INTERNAL_ERROR) \
    X(CURLMcode, curl_multi_wakeup, (CURLM *multi), (multi), CURLM_INTERNAL_ERROR) \
    X(struct curl_slist *, curl_slist_append, (struct curl_slist *list, const char *text), (list, text), NULL) \
    X(CURLcode, curl_easy_pause, (CURL *easy, int mask), (easy, mask), CURLE_FAILED_INIT) \
    X(curl_version_info_data *, curl_version_info, (CURLversion stamp), (stamp), NULL)

static struct {
#define OAT_FIELD(ret, name, params, args, fail) ret (*name) params;
    OAT_CURL_FUNCTIONS(OAT_FIELD)
    void (*curl_easy_cleanup)(CURL *);
    CURLMcode (*curl_multi_cleanup)(CURLM *);
    void (*curl_slist_free_all)(struct curl_slist *);
    CURLcode (*curl_easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*curl_easy_getinfo)(CURL *, CURLINFO, ...);
    CURLMcode (*curl_multi_setopt)(CURLM *, CURLMoption, ...);
} fn;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *load_error;
static char load_error_text[512];
static int loaded; /* atomic */

static void load_library(void) {
    void *handle = dlopen(library_name, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        snprintf(load_error_text, sizeof load_error_text,
                 "libcurl is not installed or not loadable: cannot load %s (%s); install it (Debian: libcurl4)",
                 library_name, why ? why : "unknown error");
        load_error = load_error_text;
        return;
    }
    const char *missing = NULL;
#define OAT_RESOLVE_AS(name) \
    if (!missing) { *(void **)(&fn.name) = dlsym(handle, #name); if (!fn.name) missing = #name; }
#define OAT_RESOLVE(ret, name, params, args, fail) OAT_RESOLVE_AS(name)
    OAT_CURL_FUNCTIONS(OAT_RESOLVE)
    OAT_RESOLVE_AS(curl_easy_cleanup)
    OAT_RESOLVE_AS(curl_multi_cleanup)
    OAT_RESOLVE_AS(curl_slist_free_all)
    OAT_RESOLVE_AS(curl_easy_setopt)
    OAT_RESOLVE_AS(curl_easy_getinfo)
    OAT_RESOLVE_AS(curl_multi_setopt)
    if (missing) {
        snprintf(load_error_text, sizeof load_error_text, "the installed %s lacks the function %s", library_name, missing);
        load_error = load_error_text;
        return;
    }
    __atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
}

const char *oat_curl_load(void) {
    pthread_once(&load_once, load_library);
    return load_error;
}

int oat_curl_is_loaded(void) { return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE); }

static inline int ready(void) {
    if (__builtin_expect(__atomic_load_n(&loaded, __ATOMIC_ACQUIRE), 1)) return 1;
    return oat_curl_load() == NULL;
}

#pragma GCC visibility push(hidden)
#define OAT_DEFINE(ret, name, params, args, fail) \
    ret name params { if (!ready()) return fail; return fn.name args; }
OAT_CURL_FUNCTIONS(OAT_DEFINE)

/* Freeing nothing must not load libcurl. */
void curl_easy_cleanup(CURL *easy) { if (easy && ready()) fn.curl_easy_cleanup(easy); }
CURLMcode curl_multi_cleanup(CURLM *multi) { return (multi && ready()) ? fn.curl_multi_cleanup(multi) : CURLM_OK; }
void curl_slist_free_all(struct curl_slist *list) { if (list && ready()) fn.curl_slist_free_all(list); }
#pragma GCC visibility pop

CURLcode oat_curl_setopt_long(CURL *easy, CURLoption option, long value) { return ready() ? fn.curl_easy_setopt(easy, option, value) : CURLE_FAILED_INIT; }
CURLcode oat_curl_setopt_off(CURL *easy, CURLoption option, curl_off_t value) { return ready() ? fn.curl_easy_setopt(easy, option, value) : CURLE_FAILED_INIT; }
CURLcode oat_curl_setopt_string(CURL *easy, CURLoption option, const char *value) { return ready() ? fn.curl_easy_setopt(easy, option, value) : CURLE_FAILED_INIT; }
CURLcode oat_curl_setopt_pointer(CURL *easy, CURLoption option, void *value) { return ready() ? fn.curl_easy_setopt(easy, option, value) : CURLE_FAILED_INIT; }
CURLcode oat_curl_setopt_write_function(CURL *easy, oat_curl_data_callback callback) { return ready() ? fn.curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, callback) : CURLE_FAILED_INIT; }
CURLcode oat_curl_setopt_header_function(CURL *easy, oat_curl_data_callback callback) { return ready() ? fn.curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, callback) : CURLE_FAILED_INIT; }
CURLcode oat_curl_setopt_xferinfo_function(CURL *easy, oat_curl_xferinfo_callback callback) { return ready() ? fn.curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, callback) : CURLE_FAILED_INIT; }

CURLcode oat_curl_getinfo_long(CURL *easy, CURLINFO info, long *value) { return ready() ? fn.curl_easy_getinfo(easy, info, value) : CURLE_FAILED_INIT; }
CURLcode oat_curl_getinfo_off(CURL *easy, CURLINFO info, curl_off_t *value) { return ready() ? fn.curl_easy_getinfo(easy, info, value) : CURLE_FAILED_INIT; }
CURLcode oat_curl_getinfo_string(CURL *easy, CURLINFO info, const char **value) { return ready() ? fn.curl_easy_getinfo(easy, info, value) : CURLE_FAILED_INIT; }

CURLMcode oat_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) { return ready() ? fn.curl_multi_setopt(multi, option, value) : CURLM_INTERNAL_ERROR; }

CURLcode oat_curl_unpause(CURL *easy) { return curl_easy_pause(easy, CURLPAUSE_CONT); }
size_t oat_curl_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }
const char *oat_curl_version_string(void) {
    curl_version_info_data *info = curl_version_info(CURLVERSION_NOW);
    return info ? info->version : "libcurl not loaded";
}
