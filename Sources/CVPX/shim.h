#pragma once
// libvpx's init calls are macros that pass the ABI version; Swift cannot import
// them, so these static inline wrappers do (Swift imports static inline functions).
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>
#include <string.h>

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

// VP9 spatial SVC (for tests that need a real multi-layer stream): `layers` spatial layers,
// each half the size of the next, one temporal layer, CBR. Set on the config before init…
static inline void recbot_vpx_configure_vp9_svc(vpx_codec_enc_cfg_t *cfg, int layers) {
    cfg->ss_number_layers = (unsigned int)layers;
    cfg->ts_number_layers = 1;
    cfg->rc_end_usage = VPX_CBR;
    cfg->g_error_resilient = 0;
    for (int i = 0; i < layers; i++) {
        cfg->ss_target_bitrate[i] = cfg->rc_target_bitrate * (unsigned int)(i + 1) / (unsigned int)(layers * (layers + 1) / 2);
        cfg->layer_target_bitrate[i] = cfg->ss_target_bitrate[i];
    }
}

// …and switched on after init.
static inline vpx_codec_err_t recbot_vpx_enable_vp9_svc(vpx_codec_ctx_t *ctx, int layers) {
    vpx_svc_extra_cfg_t svc;
    memset(&svc, 0, sizeof svc);
    for (int i = 0; i < layers; i++) {
        svc.scaling_factor_num[i] = 1;
        svc.scaling_factor_den[i] = 1 << (layers - 1 - i);
        svc.max_quantizers[i] = 56;
        svc.min_quantizers[i] = 2;
    }
    vpx_codec_err_t status = vpx_codec_control(ctx, VP9E_SET_SVC, 1);
    if (status != VPX_CODEC_OK) return status;
    return vpx_codec_control(ctx, VP9E_SET_SVC_PARAMETERS, &svc);
}
