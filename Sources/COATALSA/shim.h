#ifndef OAT_CALSA_SHIM_H
#define OAT_CALSA_SHIM_H
#include <alsa/asoundlib.h>
#endif
