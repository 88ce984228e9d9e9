#pragma once
// OpenH264's decoder (Debian libopenh264-dev) for `recbot verify`. Its C API is a table of
// function pointers behind a double pointer; these wrappers call through it.
#include <string.h>
#include <wels/codec_api.h>

/// A decoder for Annex-B input with error concealment off, so a broken frame is reported.
static inline ISVCDecoder *recbot_openh264_create(void) {
    ISVCDecoder *decoder = NULL;
    if (WelsCreateDecoder(&decoder) != 0 || decoder == NULL) return NULL;
    SDecodingParam param;
    memset(&param, 0, sizeof param);
    param.sVideoProperty.eVideoBsType = VIDEO_BITSTREAM_DEFAULT;
    param.eEcActiveIdc = ERROR_CON_DISABLE;
    if ((*decoder)->Initialize(decoder, &param) != 0) {
        WelsDestroyDecoder(decoder);
        return NULL;
    }
    return decoder;
}

static inline void recbot_openh264_destroy(ISVCDecoder *decoder) {
    (*decoder)->Uninitialize(decoder);
    WelsDestroyDecoder(decoder);
}

/// Decodes one access unit; returns the decoder's state flags (0 is success) and, when a
/// picture came out, its size.
static inline int recbot_openh264_decode(ISVCDecoder *decoder, const unsigned char *data, int length, int *width, int *height) {
    unsigned char *planes[3] = {NULL, NULL, NULL};
    SBufferInfo info;
    memset(&info, 0, sizeof info);
    DECODING_STATE state = (*decoder)->DecodeFrameNoDelay(decoder, data, length, planes, &info);
    *width = info.iBufferStatus == 1 ? info.UsrData.sSystemBuffer.iWidth : 0;
    *height = info.iBufferStatus == 1 ? info.UsrData.sSystemBuffer.iHeight : 0;
    return (int)state;
}
