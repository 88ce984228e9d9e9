#pragma once
// opus_*_ctl are variadic and their requests are macros; Swift imports neither,
// so the few controls recbot needs are wrapped here.
#include <opus/opus.h>

static inline int recbot_opus_encoder_set_bitrate(OpusEncoder *enc, opus_int32 bitrate) {
    return opus_encoder_ctl(enc, OPUS_SET_BITRATE(bitrate));
}

static inline int recbot_opus_encoder_get_lookahead(OpusEncoder *enc, opus_int32 *lookahead) {
    return opus_encoder_ctl(enc, OPUS_GET_LOOKAHEAD(lookahead));
}
