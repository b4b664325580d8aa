#ifndef OAT_DEVICE_LAZY_H
#define OAT_DEVICE_LAZY_H

/* PulseAudio (libpulse) and ALSA (libasound) are loaded with dlopen() on first use instead of
   being linked, as FFmpeg, libcurl, Rubber Band and SpeexDSP are, so a program that never opens
   a device (afinfo, afconvert, afplay --help, afplay --output wav:...) does not map them and their
   ~25 dependencies (libsndfile, FLAC, Vorbis, Opus, systemd, X11, D-Bus, libgcrypt ...) at launch.

   oat_pulse_load() / oat_alsa_load() load the library once (thread-safe) and return NULL on
   success, or a message naming the library that could not be loaded and its Debian package.
   Every libpulse and libasound function the package calls is defined by this target as a hidden
   trampoline into the loaded library; when loading failed they return a failure value (NULL, a
   negative error, a FAILED state, a fixed error text) or do nothing instead of crashing.

   OAT_PULSEAUDIO_LIBRARY / OAT_ALSA_LIBRARY in the environment name another file or soname to
   load (a build elsewhere, or a path that does not exist, to check how a missing library is
   reported). They are read once, on first use. */
const char *oat_pulse_load(void);
const char *oat_alsa_load(void);

/* 1 when the library has been loaded into the process by this loader, 0 otherwise. */
int oat_pulse_is_loaded(void);
int oat_alsa_is_loaded(void);

#endif
