#ifndef OAT_COATCURL_H
#define OAT_COATCURL_H
// libcurl is loaded with dlopen() on first use (COATCurl.c defines the curl functions the package
// calls as trampolines), and non-variadic wrappers around its variadic setopt/getinfo calls and its
// function-like macros, which Swift cannot call directly.
#include <curl/curl.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Loads libcurl once (thread-safe): NULL on success, else a message naming what is missing.
/// The curl functions return failure values (NULL, CURLE_FAILED_INIT) when it could not be loaded.
const char *oat_curl_load(void);
/// 1 when libcurl has been loaded into the process.
int oat_curl_is_loaded(void);

/// Body and header callbacks have the same shape as fwrite.
typedef size_t (*oat_curl_data_callback)(char *data, size_t size, size_t count, void *user);
/// A transfer-progress callback; return non-zero to abort the transfer.
typedef int (*oat_curl_xferinfo_callback)(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);

CURLcode oat_curl_setopt_long(CURL *easy, CURLoption option, long value);
CURLcode oat_curl_setopt_off(CURL *easy, CURLoption option, curl_off_t value);
CURLcode oat_curl_setopt_string(CURL *easy, CURLoption option, const char *value);
CURLcode oat_curl_setopt_pointer(CURL *easy, CURLoption option, void *value);
CURLcode oat_curl_setopt_write_function(CURL *easy, oat_curl_data_callback callback);
CURLcode oat_curl_setopt_header_function(CURL *easy, oat_curl_data_callback callback);
CURLcode oat_curl_setopt_xferinfo_function(CURL *easy, oat_curl_xferinfo_callback callback);

CURLcode oat_curl_getinfo_long(CURL *easy, CURLINFO info, long *value);
CURLcode oat_curl_getinfo_off(CURL *easy, CURLINFO info, curl_off_t *value);
/// The string is owned by the handle; copy it before the next call on that handle.
CURLcode oat_curl_getinfo_string(CURL *easy, CURLINFO info, const char **value);

CURLMcode oat_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);

/// `curl_easy_pause(easy, CURLPAUSE_CONT)`.
CURLcode oat_curl_unpause(CURL *easy);
/// `CURL_WRITEFUNC_PAUSE`.
size_t oat_curl_writefunc_pause(void);
/// The curl version string (e.g. "8.1.2").
const char *oat_curl_version_string(void);

#ifdef __cplusplus
}
#endif
#endif
