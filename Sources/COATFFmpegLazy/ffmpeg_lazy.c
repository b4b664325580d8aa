/* Trampolines that load FFmpeg on first use. See include/oat_ffmpeg_lazy.h.

   Every definition here is hidden (not exported from the executable), so when libavcodec itself
   calls av_malloc() or av_frame_alloc() the dynamic linker resolves them to libavutil, never to
   these trampolines; and dlsym() on a library handle looks the name up in that library and its
   dependencies only, so the trampolines always reach FFmpeg's own definitions. */
/* The C library's headers first, so only FFmpeg's own declarations fall under the pragma. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#pragma GCC visibility push(hidden)
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>
#pragma GCC visibility pop

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "oat_ffmpeg_lazy.h"

#define OAT_STR2(x) #x
#define OAT_STR(x) OAT_STR2(x)

enum { LIB_AVUTIL, LIB_AVCODEC, LIB_SWRESAMPLE, LIB_COUNT };
static const char *const library_names[LIB_COUNT] = {
    "libavutil.so." OAT_STR(LIBAVUTIL_VERSION_MAJOR),
    "libavcodec.so." OAT_STR(LIBAVCODEC_VERSION_MAJOR),
    "libswresample.so." OAT_STR(LIBSWRESAMPLE_VERSION_MAJOR),
};

/* X(library, return type, name, (parameters), (arguments), value when FFmpeg is missing)
   V(library, name, (parameters), (arguments)) for functions returning void. */
#define OAT_FUNCTIONS(X, V) \
    X(LIB_AVUTIL, int, av_channel_layout_copy, (AVChannelLayout *dst, const AVChannelLayout *src), (dst, src), AVERROR(ENOSYS)) \
    V(LIB_AVUTIL, av_channel_layout_default, (AVChannelLayout *layout, int channels), (layout, channels)) \
    X(LIB_AVUTIL, AVFrame *, av_frame_alloc, (void), (), NULL) \
    X(LIB_AVUTIL, int, av_frame_get_buffer, (AVFrame *frame, int align), (frame, align), AVERROR(ENOSYS)) \
    V(LIB_AVUTIL, av_frame_unref, (AVFrame *frame), (frame)) \
    X(LIB_AVUTIL, int, av_get_bytes_per_sample, (enum AVSampleFormat format), (format), 0) \
    X(LIB_AVUTIL, void *, av_malloc, (size_t size), (size), NULL) \
    X(LIB_AVUTIL, void *, av_mallocz, (size_t size), (size), NULL) \
    X(LIB_AVUTIL, int, av_opt_set, (void *obj, const char *name, const char *val, int flags), (obj, name, val, flags), AVERROR(ENOSYS)) \
    X(LIB_AVUTIL, int, av_opt_set_int, (void *obj, const char *name, int64_t val, int flags), (obj, name, val, flags), AVERROR(ENOSYS)) \
    X(LIB_AVUTIL, int, av_sample_fmt_is_planar, (enum AVSampleFormat format), (format), 0) \
    X(LIB_AVCODEC, int, av_new_packet, (AVPacket *pkt, int size), (pkt, size), AVERROR(ENOSYS)) \
    X(LIB_AVCODEC, AVPacket *, av_packet_alloc, (void), (), NULL) \
    X(LIB_AVCODEC, uint8_t *, av_packet_get_side_data, (const AVPacket *pkt, enum AVPacketSideDataType type, size_t *size), (pkt, type, size), NULL) \
    V(LIB_AVCODEC, av_packet_unref, (AVPacket *pkt), (pkt)) \
    X(LIB_AVCODEC, AVCodecContext *, avcodec_alloc_context3, (const AVCodec *codec), (codec), NULL) \
    X(LIB_AVCODEC, const AVCodec *, avcodec_find_decoder, (enum AVCodecID id), (id), NULL) \
    X(LIB_AVCODEC, const AVCodec *, avcodec_find_encoder, (enum AVCodecID id), (id), NULL) \
    X(LIB_AVCODEC, const AVCodec *, avcodec_find_encoder_by_name, (const char *name), (name), NULL) \
    V(LIB_AVCODEC, avcodec_flush_buffers, (AVCodecContext *ctx), (ctx)) \
    X(LIB_AVCODEC, int, avcodec_open2, (AVCodecContext *ctx, const AVCodec *codec, AVDictionary **options), (ctx, codec, options), AVERROR(ENOSYS)) \
    X(LIB_AVCODEC, int, avcodec_receive_frame, (AVCodecContext *ctx, AVFrame *frame), (ctx, frame), AVERROR(ENOSYS)) \
    X(LIB_AVCODEC, int, avcodec_receive_packet, (AVCodecContext *ctx, AVPacket *pkt), (ctx, pkt), AVERROR(ENOSYS)) \
    X(LIB_AVCODEC, int, avcodec_send_frame, (AVCodecContext *ctx, const AVFrame *frame), (ctx, frame), AVERROR(ENOSYS)) \
    X(LIB_AVCODEC, int, avcodec_send_packet, (AVCodecContext *ctx, const AVPacket *pkt), (ctx, pkt), AVERROR(ENOSYS)) \
    X(LIB_AVCODEC, unsigned, avcodec_version, (void), (), 0) \
    X(LIB_AVCODEC, const char *, avcodec_get_name, (enum AVCodecID id), (id), "unknown (FFmpeg not loaded)") \
    X(LIB_SWRESAMPLE, int, swr_alloc_set_opts2, (struct SwrContext **ps, AVChannelLayout *out_layout, enum AVSampleFormat out_format, int out_rate, AVChannelLayout *in_layout, enum AVSampleFormat in_format, int in_rate, int log_offset, void *log_ctx), (ps, out_layout, out_format, out_rate, in_layout, in_format, in_rate, log_offset, log_ctx), AVERROR(ENOSYS)) \
    X(LIB_SWRESAMPLE, int, swr_convert, (struct SwrContext *s, uint8_t **out, int out_count, const uint8_t **in, int in_count), (s, out, out_count, in, in_count), AVERROR(ENOSYS)) \
    X(LIB_SWRESAMPLE, int, swr_get_out_samples, (struct SwrContext *s, int in_samples), (s, in_samples), AVERROR(ENOSYS)) \
    X(LIB_SWRESAMPLE, int, swr_init, (struct SwrContext *s), (s), AVERROR(ENOSYS))

/* Functions that free or reset: a call with nothing to free must not load FFmpeg (a converter that
   decodes through libmpg123 still runs the same deinit). Defined by hand below. */
#define OAT_FREE_FUNCTIONS(F) \
    F(LIB_AVUTIL, av_free, void *) \
    F(LIB_AVUTIL, av_frame_free, AVFrame **) \
    F(LIB_AVUTIL, av_channel_layout_uninit, AVChannelLayout *) \
    F(LIB_AVCODEC, av_packet_free, AVPacket **) \
    F(LIB_AVCODEC, avcodec_free_context, AVCodecContext **) \
    F(LIB_SWRESAMPLE, swr_free, struct SwrContext **)

static struct {
#define OAT_FIELD(lib, ret, name, params, args, fail) ret (*name) params;
#define OAT_VFIELD(lib, name, params, args) void (*name) params;
#define OAT_FREEFIELD(lib, name, type) void (*name)(type);
    OAT_FUNCTIONS(OAT_FIELD, OAT_VFIELD)
    OAT_FREE_FUNCTIONS(OAT_FREEFIELD)
    void (*av_log_set_level)(int);
    int (*av_strerror)(int, char *, size_t);
} fn;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *load_error; /* written once inside pthread_once, read after it */
static char load_error_text[512];
static int loaded; /* atomic */
static int pending_log_level = AV_LOG_INFO;
static int log_level_set; /* atomic */

static void load_libraries(void) {
    void *handles[LIB_COUNT] = {0};
    for (int i = 0; i < LIB_COUNT; i++) {
        /* RTLD_LOCAL: FFmpeg's symbols do not join the global namespace. */
        handles[i] = dlopen(library_names[i], RTLD_NOW | RTLD_LOCAL);
        if (!handles[i]) {
            const char *why = dlerror();
            snprintf(load_error_text, sizeof load_error_text,
                     "FFmpeg is not installed or not loadable: cannot load %s (%s); install libavcodec, libavutil and libswresample (Debian: libavcodec59 libswresample4)",
                     library_names[i], why ? why : "unknown error");
            load_error = load_error_text;
            return;
        }
    }
    const char *missing = NULL;
#define OAT_RESOLVE_AS(lib, name) \
    if (!missing) { *(void **)(&fn.name) = dlsym(handles[lib], #name); if (!fn.name) missing = #name; }
#define OAT_RESOLVE(lib, ret, name, params, args, fail) OAT_RESOLVE_AS(lib, name)
#define OAT_VRESOLVE(lib, name, params, args) OAT_RESOLVE_AS(lib, name)
#define OAT_FREERESOLVE(lib, name, type) OAT_RESOLVE_AS(lib, name)
    OAT_FUNCTIONS(OAT_RESOLVE, OAT_VRESOLVE)
    OAT_FREE_FUNCTIONS(OAT_FREERESOLVE)
    OAT_RESOLVE_AS(LIB_AVUTIL, av_log_set_level)
    OAT_RESOLVE_AS(LIB_AVUTIL, av_strerror)
    if (missing) {
        snprintf(load_error_text, sizeof load_error_text,
                 "the installed FFmpeg libraries (%s, %s, %s) lack the function %s",
                 library_names[0], library_names[1], library_names[2], missing);
        load_error = load_error_text;
        return;
    }
    if (__atomic_load_n(&log_level_set, __ATOMIC_ACQUIRE)) {
        fn.av_log_set_level(__atomic_load_n(&pending_log_level, __ATOMIC_ACQUIRE));
    }
    __atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
}

const char *oat_ffmpeg_load(void) {
    pthread_once(&load_once, load_libraries);
    return load_error;
}

int oat_ffmpeg_is_loaded(void) { return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE); }

static inline int ready(void) {
    if (__builtin_expect(__atomic_load_n(&loaded, __ATOMIC_ACQUIRE), 1)) return 1;
    return oat_ffmpeg_load() == NULL;
}

#define OAT_DEFINE(lib, ret, name, params, args, fail) \
    ret name params { if (!ready()) return fail; return fn.name args; }
#define OAT_VDEFINE(lib, name, params, args) \
    void name params { if (ready()) fn.name args; }
OAT_FUNCTIONS(OAT_DEFINE, OAT_VDEFINE)

void av_free(void *ptr) { if (ptr && ready()) fn.av_free(ptr); }
void av_frame_free(AVFrame **p) { if (p && *p && ready()) fn.av_frame_free(p); }
void av_packet_free(AVPacket **p) { if (p && *p && ready()) fn.av_packet_free(p); }
void avcodec_free_context(AVCodecContext **p) { if (p && *p && ready()) fn.avcodec_free_context(p); }
void swr_free(struct SwrContext **p) { if (p && *p && ready()) fn.swr_free(p); }
void av_channel_layout_uninit(AVChannelLayout *layout) {
    /* A layout FFmpeg never filled in owns nothing. */
    if (layout && oat_ffmpeg_is_loaded()) fn.av_channel_layout_uninit(layout);
}

/* Setting the log level does not load FFmpeg: the level is applied when it is loaded. */
void av_log_set_level(int level) {
    __atomic_store_n(&pending_log_level, level, __ATOMIC_RELEASE);
    __atomic_store_n(&log_level_set, 1, __ATOMIC_RELEASE);
    if (oat_ffmpeg_is_loaded()) fn.av_log_set_level(level);
}

int av_strerror(int errnum, char *buf, size_t size) {
    if (ready()) return fn.av_strerror(errnum, buf, size);
    if (buf && size > 0) snprintf(buf, size, "%s", load_error ? load_error : "FFmpeg not loaded");
    return AVERROR(ENOSYS);
}
