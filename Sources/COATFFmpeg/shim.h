#ifndef OAT_CFFMPEG_SHIM_H
#define OAT_CFFMPEG_SHIM_H
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>

/* Macros Swift cannot import, as inline functions. */
static inline int oat_averror(int e) { return AVERROR(e); }
static inline int oat_averror_eof(void) { return AVERROR_EOF; }
static inline int oat_averror_eagain(void) { return AVERROR(EAGAIN); }
#endif
