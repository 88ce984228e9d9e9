#pragma once
// OpenH264's decoder (Debian libopenh264-dev) for `recbot verify` and `recbot compose`. Its C API is a table of
// function pointers behind a double pointer; these wrappers call through it.
#include <string.h>
#include <wels/codec_api.h>

/// A decoder for Annex-B input. `verify` turns error concealment off, so a broken frame is
/// reported; `compose` turns it on, as a player does, so a picture is drawn from what arrived.
static inline ISVCDecoder *recbot_openh264_create(int conceal) {
    ISVCDecoder *decoder = NULL;
    if (WelsCreateDecoder(&decoder) != 0 || decoder == NULL) return NULL;
    SDecodingParam param;
    memset(&param, 0, sizeof param);
    param.sVideoProperty.eVideoBsType = VIDEO_BITSTREAM_DEFAULT;
    param.eEcActiveIdc = conceal ? ERROR_CON_SLICE_COPY_CROSS_IDR : ERROR_CON_DISABLE;
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

/// One decoded I420 picture in OpenH264's own buffers (valid until the next decode).
typedef struct {
    const unsigned char *planes[3];
    int strides[2];
    int width;
    int height;
} recbot_openh264_picture;

/// Decodes one access unit; returns the decoder's state flags (0 is success) and, when a
/// picture came out, where it is (width 0 when none did).
static inline int recbot_openh264_decode_picture(ISVCDecoder *decoder, const unsigned char *data, int length, recbot_openh264_picture *picture) {
    unsigned char *planes[3] = {NULL, NULL, NULL};
    SBufferInfo info;
    memset(&info, 0, sizeof info);
    memset(picture, 0, sizeof *picture);
    DECODING_STATE state = (*decoder)->DecodeFrameNoDelay(decoder, data, length, planes, &info);
    if (info.iBufferStatus == 1 && planes[0] && planes[1] && planes[2]) {
        for (int i = 0; i < 3; i++) picture->planes[i] = planes[i];
        picture->strides[0] = info.UsrData.sSystemBuffer.iStride[0];
        picture->strides[1] = info.UsrData.sSystemBuffer.iStride[1];
        picture->width = info.UsrData.sSystemBuffer.iWidth;
        picture->height = info.UsrData.sSystemBuffer.iHeight;
    }
    return (int)state;
}
