#pragma once
// libvpx's init calls are macros that pass the ABI version; Swift cannot import
// them, so these static inline wrappers do (Swift imports static inline functions).
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

static inline vpx_codec_err_t recbot_vpx_encoder_init(vpx_codec_ctx_t *ctx, vpx_codec_iface_t *iface,
                                                      const vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_init(ctx, iface, cfg, 0);
}

static inline vpx_codec_err_t recbot_vpx_decoder_init(vpx_codec_ctx_t *ctx, vpx_codec_iface_t *iface) {
    return vpx_codec_dec_init(ctx, iface, NULL, 0);
}

static inline vpx_codec_err_t recbot_vpx_set_cpu_used(vpx_codec_ctx_t *ctx, int cpu_used) {
    return vpx_codec_control(ctx, VP8E_SET_CPUUSED, cpu_used);
}

static inline int recbot_vpx_frame_is_keyframe(const vpx_codec_cx_pkt_t *pkt) {
    return (pkt->data.frame.flags & VPX_FRAME_IS_KEY) != 0;
}

static inline long recbot_vpx_deadline_realtime(void) { return VPX_DL_REALTIME; }
static inline vpx_enc_frame_flags_t recbot_vpx_force_keyframe_flag(void) { return VPX_EFLAG_FORCE_KF; }
