#ifndef OAT_CCURL_SHIM_H
#define OAT_CCURL_SHIM_H
// libcurl (Debian: libcurl4-openssl-dev), found through pkg-config.
#include <curl/curl.h>
#endif
