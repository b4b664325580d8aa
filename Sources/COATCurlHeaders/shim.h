#ifndef OAT_CCURL_SHIM_H
#define OAT_CCURL_SHIM_H
// libcurl's headers (Debian: libcurl4-openssl-dev). Not linked: COATCurl loads libcurl on first use.
#include <curl/curl.h>
#endif
