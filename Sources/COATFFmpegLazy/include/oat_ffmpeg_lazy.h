#ifndef OAT_FFMPEG_LAZY_H
#define OAT_FFMPEG_LAZY_H

/* FFmpeg (libavcodec, libavutil, libswresample) is loaded with dlopen() on first use instead of
   being linked, so programs that never decode through it (afplay --help, MP3 playback through
   libmpg123) do not pay for loading it and its ~100 dependent libraries.

   oat_ffmpeg_load() loads the three libraries once (thread-safe) and returns NULL on success, or
   a message naming what could not be loaded. Every FFmpeg function the package calls is defined
   by this target as a trampoline into the loaded library; when loading failed, they return a
   failure value (NULL, a negative error code, 0) instead of crashing. */
const char *oat_ffmpeg_load(void);

/* 1 when FFmpeg has been loaded into the process (by any caller), 0 otherwise. */
int oat_ffmpeg_is_loaded(void);

#endif
