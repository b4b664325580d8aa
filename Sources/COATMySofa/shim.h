#ifndef OAT_CMYSOFA_SHIM_H
#define OAT_CMYSOFA_SHIM_H
/* libmysofa's header only (Debian: libmysofa-dev): COATDSPLazy loads libmysofa.so.1 with dlopen on
   first use and defines the functions the package calls. */
#include <mysofa.h>
#endif
