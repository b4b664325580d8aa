/* Trampolines that load PulseAudio (libpulse) and ALSA (libasound) on first use. See
   include/oat_device_lazy.h.

   The definitions are hidden (not exported from the executable), so dlsym() on the library
   handle always reaches the library's own functions, never these, and ALSA's plugins (the pulse
   PCM plugin, for one) bind to libasound's and libpulse's own definitions, not to these.
   A function the package starts calling must be added to its list below (the link fails with
   an undefined symbol until it is); its prototype is the header's, which the compiler checks. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#pragma GCC visibility push(hidden)
#include <pulse/pulseaudio.h>
#include <alsa/asoundlib.h>
#pragma GCC visibility pop

#include <dlfcn.h>
#include <pthread.h>

#include "oat_device_lazy.h"
#include "oat_lazy.h"

/* X(library, return type, name, (parameters), (arguments), value when the library is missing)
   V(library, name, (parameters), (arguments)) for functions returning void. */
#define OAT_PULSE_FUNCTIONS(X, V) \
    X(pulse, pa_channel_map *, pa_channel_map_init_extend, (pa_channel_map *m, unsigned int channels, pa_channel_map_def_t def), (m, channels, def), NULL) \
    X(pulse, int, pa_context_connect, (pa_context *c, const char *server, pa_context_flags_t flags, const pa_spawn_api *api), (c, server, flags, api), -1) \
    V(pulse, pa_context_disconnect, (pa_context *c), (c)) \
    X(pulse, int, pa_context_errno, (const pa_context *c), (c), -1) \
    X(pulse, pa_operation *, pa_context_get_server_info, (pa_context *c, pa_server_info_cb_t cb, void *userdata), (c, cb, userdata), NULL) \
    X(pulse, pa_operation *, pa_context_get_sink_info_list, (pa_context *c, pa_sink_info_cb_t cb, void *userdata), (c, cb, userdata), NULL) \
    X(pulse, pa_operation *, pa_context_get_source_info_list, (pa_context *c, pa_source_info_cb_t cb, void *userdata), (c, cb, userdata), NULL) \
    X(pulse, pa_operation *, pa_context_set_source_volume_by_name, (pa_context *c, const char *name, const pa_cvolume *volume, pa_context_success_cb_t cb, void *userdata), (c, name, volume, cb, userdata), NULL) \
    X(pulse, pa_cvolume *, pa_cvolume_set, (pa_cvolume *a, unsigned channels, pa_volume_t v), (a, channels, v), NULL) \
    X(pulse, pa_volume_t, pa_cvolume_avg, (const pa_cvolume *a), (a), 0) \
    X(pulse, pa_context_state_t, pa_context_get_state, (const pa_context *c), (c), PA_CONTEXT_FAILED) \
    X(pulse, pa_context *, pa_context_new, (pa_mainloop_api *mainloop, const char *name), (mainloop, name), NULL) \
    V(pulse, pa_context_set_state_callback, (pa_context *c, pa_context_notify_cb_t cb, void *userdata), (c, cb, userdata)) \
    V(pulse, pa_context_set_subscribe_callback, (pa_context *c, pa_context_subscribe_cb_t cb, void *userdata), (c, cb, userdata)) \
    X(pulse, pa_operation *, pa_context_subscribe, (pa_context *c, pa_subscription_mask_t m, pa_context_success_cb_t cb, void *userdata), (c, m, cb, userdata), NULL) \
    V(pulse, pa_context_unref, (pa_context *c), (c)) \
    X(pulse, const char *, pa_get_library_version, (void), (), "") \
    X(pulse, struct timeval *, pa_gettimeofday, (struct timeval *tv), (tv), NULL) \
    X(pulse, int, pa_mainloop_dispatch, (pa_mainloop *m), (m), -1) \
    V(pulse, pa_mainloop_free, (pa_mainloop *m), (m)) \
    X(pulse, pa_mainloop_api *, pa_mainloop_get_api, (pa_mainloop *m), (m), NULL) \
    X(pulse, pa_mainloop *, pa_mainloop_new, (void), (), NULL) \
    X(pulse, int, pa_mainloop_poll, (pa_mainloop *m), (m), -1) \
    X(pulse, int, pa_mainloop_prepare, (pa_mainloop *m, int timeout), (m, timeout), -1) \
    V(pulse, pa_mainloop_wakeup, (pa_mainloop *m), (m)) \
    X(pulse, pa_operation_state_t, pa_operation_get_state, (const pa_operation *o), (o), PA_OPERATION_CANCELLED) \
    V(pulse, pa_operation_unref, (pa_operation *o), (o)) \
    X(pulse, int, pa_stream_begin_write, (pa_stream *p, void **data, size_t *nbytes), (p, data, nbytes), -1) \
    X(pulse, int, pa_stream_cancel_write, (pa_stream *p), (p), -1) \
    X(pulse, int, pa_stream_connect_playback, (pa_stream *s, const char *dev, const pa_buffer_attr *attr, pa_stream_flags_t flags, const pa_cvolume *volume, pa_stream *sync_stream), (s, dev, attr, flags, volume, sync_stream), -1) \
    X(pulse, int, pa_stream_connect_record, (pa_stream *s, const char *dev, const pa_buffer_attr *attr, pa_stream_flags_t flags), (s, dev, attr, flags), -1) \
    X(pulse, pa_operation *, pa_stream_cork, (pa_stream *s, int b, pa_stream_success_cb_t cb, void *userdata), (s, b, cb, userdata), NULL) \
    X(pulse, int, pa_stream_disconnect, (pa_stream *s), (s), -1) \
    X(pulse, pa_operation *, pa_stream_drain, (pa_stream *s, pa_stream_success_cb_t cb, void *userdata), (s, cb, userdata), NULL) \
    X(pulse, int, pa_stream_drop, (pa_stream *p), (p), -1) \
    X(pulse, pa_operation *, pa_stream_flush, (pa_stream *s, pa_stream_success_cb_t cb, void *userdata), (s, cb, userdata), NULL) \
    X(pulse, int, pa_stream_get_latency, (pa_stream *s, pa_usec_t *r_usec, int *negative), (s, r_usec, negative), -1) \
    X(pulse, pa_stream_state_t, pa_stream_get_state, (const pa_stream *p), (p), PA_STREAM_FAILED) \
    X(pulse, int, pa_stream_get_time, (pa_stream *s, pa_usec_t *r_usec), (s, r_usec), -1) \
    X(pulse, pa_stream *, pa_stream_new, (pa_context *c, const char *name, const pa_sample_spec *ss, const pa_channel_map *map), (c, name, ss, map), NULL) \
    X(pulse, int, pa_stream_peek, (pa_stream *p, const void **data, size_t *nbytes), (p, data, nbytes), -1) \
    X(pulse, size_t, pa_stream_readable_size, (const pa_stream *p), (p), (size_t)-1) \
    X(pulse, pa_operation *, pa_stream_set_buffer_attr, (pa_stream *s, const pa_buffer_attr *attr, pa_stream_success_cb_t cb, void *userdata), (s, attr, cb, userdata), NULL) \
    V(pulse, pa_stream_set_latency_update_callback, (pa_stream *p, pa_stream_notify_cb_t cb, void *userdata), (p, cb, userdata)) \
    V(pulse, pa_stream_set_overflow_callback, (pa_stream *p, pa_stream_notify_cb_t cb, void *userdata), (p, cb, userdata)) \
    V(pulse, pa_stream_set_read_callback, (pa_stream *p, pa_stream_request_cb_t cb, void *userdata), (p, cb, userdata)) \
    V(pulse, pa_stream_set_started_callback, (pa_stream *p, pa_stream_notify_cb_t cb, void *userdata), (p, cb, userdata)) \
    V(pulse, pa_stream_set_state_callback, (pa_stream *s, pa_stream_notify_cb_t cb, void *userdata), (s, cb, userdata)) \
    V(pulse, pa_stream_set_underflow_callback, (pa_stream *p, pa_stream_notify_cb_t cb, void *userdata), (p, cb, userdata)) \
    V(pulse, pa_stream_set_write_callback, (pa_stream *p, pa_stream_request_cb_t cb, void *userdata), (p, cb, userdata)) \
    V(pulse, pa_stream_unref, (pa_stream *s), (s)) \
    X(pulse, int, pa_stream_write, (pa_stream *p, const void *data, size_t nbytes, pa_free_cb_t free_cb, int64_t offset, pa_seek_mode_t seek), (p, data, nbytes, free_cb, offset, seek), -1) \
    X(pulse, const char *, pa_strerror, (int error), (error), "PulseAudio is not loaded") \
    V(pulse, pa_threaded_mainloop_free, (pa_threaded_mainloop *m), (m)) \
    X(pulse, pa_mainloop_api *, pa_threaded_mainloop_get_api, (pa_threaded_mainloop *m), (m), NULL) \
    V(pulse, pa_threaded_mainloop_lock, (pa_threaded_mainloop *m), (m)) \
    V(pulse, pa_threaded_mainloop_once_unlocked, (pa_threaded_mainloop *m, void (*callback)(pa_threaded_mainloop *m, void *userdata), void *userdata), (m, callback, userdata)) \
    X(pulse, pa_threaded_mainloop *, pa_threaded_mainloop_new, (void), (), NULL) \
    V(pulse, pa_threaded_mainloop_set_name, (pa_threaded_mainloop *m, const char *name), (m, name)) \
    X(pulse, int, pa_threaded_mainloop_start, (pa_threaded_mainloop *m), (m), -1) \
    V(pulse, pa_threaded_mainloop_stop, (pa_threaded_mainloop *m), (m)) \
    V(pulse, pa_threaded_mainloop_unlock, (pa_threaded_mainloop *m), (m)) \
    X(pulse, struct timeval *, pa_timeval_add, (struct timeval *tv, pa_usec_t v), (tv, v), NULL)

#define OAT_ALSA_FUNCTIONS(X, V) \
    X(alsa, const char *, snd_asoundlib_version, (void), (), "") \
    X(alsa, int, snd_config_delete, (snd_config_t *config), (config), -ENODEV) \
    X(alsa, int, snd_config_load, (snd_config_t *config, snd_input_t *in), (config, in), -ENODEV) \
    X(alsa, int, snd_config_update_free, (snd_config_update_t *update), (update), -ENODEV) \
    X(alsa, int, snd_config_update_r, (snd_config_t **top, snd_config_update_t **update, const char *path), (top, update, path), -ENODEV) \
    X(alsa, int, snd_device_name_free_hint, (void **hints), (hints), -ENODEV) \
    X(alsa, char *, snd_device_name_get_hint, (const void *hint, const char *id), (hint, id), NULL) \
    X(alsa, int, snd_device_name_hint, (int card, const char *iface, void ***hints), (card, iface, hints), -ENODEV) \
    X(alsa, int, snd_input_buffer_open, (snd_input_t **inputp, const char *buffer, ssize_t size), (inputp, buffer, size), -ENODEV) \
    X(alsa, int, snd_input_close, (snd_input_t *input), (input), -ENODEV) \
    X(alsa, snd_local_error_handler_t, snd_lib_error_set_local, (snd_local_error_handler_t func), (func), NULL) \
    X(alsa, int, snd_pcm_close, (snd_pcm_t *pcm), (pcm), -ENODEV) \
    X(alsa, int, snd_pcm_delay, (snd_pcm_t *pcm, snd_pcm_sframes_t *delayp), (pcm, delayp), -ENODEV) \
    X(alsa, int, snd_pcm_drain, (snd_pcm_t *pcm), (pcm), -ENODEV) \
    X(alsa, int, snd_pcm_drop, (snd_pcm_t *pcm), (pcm), -ENODEV) \
    X(alsa, int, snd_pcm_hw_params, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params), (pcm, params), -ENODEV) \
    X(alsa, int, snd_pcm_hw_params_any, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params), (pcm, params), -ENODEV) \
    X(alsa, int, snd_pcm_hw_params_can_pause, (const snd_pcm_hw_params_t *params), (params), -ENODEV) \
    V(alsa, snd_pcm_hw_params_free, (snd_pcm_hw_params_t *obj), (obj)) \
    X(alsa, int, snd_pcm_hw_params_get_buffer_size, (const snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val), (params, val), -ENODEV) \
    X(alsa, int, snd_pcm_hw_params_get_period_size, (const snd_pcm_hw_params_t *params, snd_pcm_uframes_t *frames, int *dir), (params, frames, dir), -ENODEV) \
    X(alsa, int, snd_pcm_hw_params_malloc, (snd_pcm_hw_params_t **ptr), (ptr), -ENODEV) \
    X(alsa, int, snd_pcm_hw_params_set_access, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_access_t _access), (pcm, params, _access), -ENODEV) \
    X(alsa, int, snd_pcm_hw_params_set_buffer_size_near, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val), (pcm, params, val), -ENODEV) \
    X(alsa, int, snd_pcm_hw_params_set_channels, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int val), (pcm, params, val), -ENODEV) \
    X(alsa, int, snd_pcm_hw_params_set_format, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_format_t val), (pcm, params, val), -ENODEV) \
    X(alsa, int, snd_pcm_hw_params_set_period_size_near, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val, int *dir), (pcm, params, val, dir), -ENODEV) \
    X(alsa, int, snd_pcm_hw_params_set_rate_near, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int *val, int *dir), (pcm, params, val, dir), -ENODEV) \
    X(alsa, int, snd_pcm_open, (snd_pcm_t **pcm, const char *name, snd_pcm_stream_t stream, int mode), (pcm, name, stream, mode), -ENODEV) \
    X(alsa, int, snd_pcm_open_lconf, (snd_pcm_t **pcm, const char *name, snd_pcm_stream_t stream, int mode, snd_config_t *lconf), (pcm, name, stream, mode, lconf), -ENODEV) \
    X(alsa, int, snd_pcm_pause, (snd_pcm_t *pcm, int enable), (pcm, enable), -ENODEV) \
    X(alsa, int, snd_pcm_prepare, (snd_pcm_t *pcm), (pcm), -ENODEV) \
    X(alsa, snd_pcm_sframes_t, snd_pcm_readi, (snd_pcm_t *pcm, void *buffer, snd_pcm_uframes_t size), (pcm, buffer, size), -ENODEV) \
    X(alsa, int, snd_pcm_recover, (snd_pcm_t *pcm, int err, int silent), (pcm, err, silent), -ENODEV) \
    X(alsa, int, snd_pcm_set_chmap, (snd_pcm_t *pcm, const snd_pcm_chmap_t *map), (pcm, map), -ENODEV) \
    X(alsa, int, snd_pcm_start, (snd_pcm_t *pcm), (pcm), -ENODEV) \
    X(alsa, int, snd_pcm_sw_params, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params), (pcm, params), -ENODEV) \
    X(alsa, int, snd_pcm_sw_params_current, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params), (pcm, params), -ENODEV) \
    V(alsa, snd_pcm_sw_params_free, (snd_pcm_sw_params_t *obj), (obj)) \
    X(alsa, int, snd_pcm_sw_params_malloc, (snd_pcm_sw_params_t **ptr), (ptr), -ENODEV) \
    X(alsa, int, snd_pcm_sw_params_set_avail_min, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val), (pcm, params, val), -ENODEV) \
    X(alsa, int, snd_pcm_sw_params_set_start_threshold, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val), (pcm, params, val), -ENODEV) \
    X(alsa, snd_pcm_type_t, snd_pcm_type, (snd_pcm_t *pcm), (pcm), SND_PCM_TYPE_NULL) \
    X(alsa, int, snd_pcm_dump, (snd_pcm_t *pcm, snd_output_t *out), (pcm, out), -ENODEV) \
    X(alsa, int, snd_output_buffer_open, (snd_output_t **outputp), (outputp), -ENODEV) \
    X(alsa, size_t, snd_output_buffer_string, (snd_output_t *output, char **buf), (output, buf), 0) \
    X(alsa, int, snd_output_close, (snd_output_t *output), (output), -ENODEV) \
    X(alsa, snd_pcm_sframes_t, snd_pcm_writei, (snd_pcm_t *pcm, const void *buffer, snd_pcm_uframes_t size), (pcm, buffer, size), -ENODEV) \
    X(alsa, const char *, snd_strerror, (int errnum), (errnum), "ALSA is not loaded")

OAT_LAZY_LOADER(pulse, OAT_PULSE_FUNCTIONS, "libpulse.so.0", "the PulseAudio client library (Debian: libpulse0)",
                "OAT_PULSEAUDIO_LIBRARY", oat_pulse_load)
/* dlsym without a version finds a symbol's default version (libasound keeps older ones of some
   hw_params functions beside them), the one a link against the library would bind. */
OAT_LAZY_LOADER(alsa, OAT_ALSA_FUNCTIONS, "libasound.so.2", "the ALSA library (Debian: libasound2)",
                "OAT_ALSA_LIBRARY", oat_alsa_load)

int oat_pulse_is_loaded(void) { return oat_lazy_is_loaded(&pulse); }
int oat_alsa_is_loaded(void) { return oat_lazy_is_loaded(&alsa); }
