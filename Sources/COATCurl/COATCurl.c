#include "COATCurl.h"

CURLcode oat_curl_setopt_long(CURL *easy, CURLoption option, long value) { return curl_easy_setopt(easy, option, value); }
CURLcode oat_curl_setopt_off(CURL *easy, CURLoption option, curl_off_t value) { return curl_easy_setopt(easy, option, value); }
CURLcode oat_curl_setopt_string(CURL *easy, CURLoption option, const char *value) { return curl_easy_setopt(easy, option, value); }
CURLcode oat_curl_setopt_pointer(CURL *easy, CURLoption option, void *value) { return curl_easy_setopt(easy, option, value); }
CURLcode oat_curl_setopt_write_function(CURL *easy, oat_curl_data_callback callback) { return curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, callback); }
CURLcode oat_curl_setopt_header_function(CURL *easy, oat_curl_data_callback callback) { return curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, callback); }
CURLcode oat_curl_setopt_xferinfo_function(CURL *easy, oat_curl_xferinfo_callback callback) { return curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, callback); }

CURLcode oat_curl_getinfo_long(CURL *easy, CURLINFO info, long *value) { return curl_easy_getinfo(easy, info, value); }
CURLcode oat_curl_getinfo_off(CURL *easy, CURLINFO info, curl_off_t *value) { return curl_easy_getinfo(easy, info, value); }
CURLcode oat_curl_getinfo_string(CURL *easy, CURLINFO info, const char **value) { return curl_easy_getinfo(easy, info, value); }

CURLMcode oat_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) { return curl_multi_setopt(multi, option, value); }

CURLcode oat_curl_unpause(CURL *easy) { return curl_easy_pause(easy, CURLPAUSE_CONT); }
size_t oat_curl_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }
const char *oat_curl_version_string(void) { return curl_version_info(CURLVERSION_NOW)->version; }
