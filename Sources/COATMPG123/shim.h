#ifndef OAT_CMPG123_SHIM_H
#define OAT_CMPG123_SHIM_H
#include <sys/types.h>
#include <mpg123.h>

/* mpg123_param and mpg123_decode_frame are macros (API renames) Swift cannot import. */
static inline int oat_mpg123_param(mpg123_handle *mh, enum mpg123_parms type, long value) {
    return mpg123_param(mh, type, value, 0.0);
}
static inline int oat_mpg123_decode_frame(mpg123_handle *mh, unsigned char **audio, size_t *bytes) {
    off_t num = 0;
    return mpg123_decode_frame(mh, &num, audio, bytes);
}
/* mpg123_getstate is a macro (mpg123_getstate2 on newer libmpg123). Bytes held in the feed buffer, or -1. */
static inline long oat_mpg123_buffer_fill(mpg123_handle *mh) {
    long value = 0;
    double fvalue = 0;
    if (mpg123_getstate(mh, MPG123_BUFFERFILL, &value, &fvalue) != MPG123_OK) return -1;
    return value;
}
#endif
