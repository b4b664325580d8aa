#ifndef OAT_CRUBBERBAND_SHIM_H
#define OAT_CRUBBERBAND_SHIM_H
#include <rubberband/rubberband-c.h>
#endif
