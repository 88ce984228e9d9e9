#pragma once
// A small C API over libwebm's C++ webm_parser, so Swift can use it as an
// independent reader of the files our own muxer writes (verify, repair, tests).
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint64_t ebml_version, ebml_read_version, max_id_length, max_size_length;
    uint64_t doc_type_version, doc_type_read_version;
    const char *doc_type;
} cwebm_ebml_header;

typedef struct {
    uint64_t timecode_scale;
    int has_duration;
    double duration;
    const char *muxing_app;   /* NULL when absent */
    const char *writing_app;  /* NULL when absent */
} cwebm_info;

typedef struct {
    uint64_t number, uid, type;
    const char *codec_id;
    const uint8_t *codec_private;
    size_t codec_private_size;
    uint64_t codec_delay, seek_pre_roll;
    int uses_lacing;
    uint64_t pixel_width, pixel_height;  /* 0 when absent */
    int has_projection;                  /* a Projection element is present */
    uint64_t projection_type;
    double projection_pose_roll;
    double sampling_frequency;           /* 0 when absent */
    uint64_t channels;                   /* 0 when absent */
} cwebm_track;

typedef struct {
    void *context;
    /* Every element header, in file order (depth-first). size is UINT64_MAX when unknown. */
    void (*on_element)(void *context, uint32_t id, uint64_t position, uint32_t header_size, uint64_t size);
    void (*on_ebml)(void *context, const cwebm_ebml_header *header);
    void (*on_info)(void *context, const cwebm_info *info);
    void (*on_track)(void *context, const cwebm_track *track);
    void (*on_seek)(void *context, uint32_t id, uint64_t position);
    void (*on_cluster_begin)(void *context, uint64_t position, uint64_t timecode);
    void (*on_cluster_end)(void *context);
    /* One call per frame of a SimpleBlock or Block; data is valid during the call only. */
    void (*on_frame)(void *context, uint64_t track, int16_t relative_timecode, int is_key_frame,
                     int is_simple_block, const uint8_t *data, size_t size);
    void (*on_cue_point)(void *context, uint64_t time, uint64_t track, uint64_t cluster_position);
} cwebm_callbacks;

/* Returned by cwebm_parse_file when the file cannot be opened. */
#define CWEBM_STATUS_CANNOT_OPEN (-4096)

/* Status codes are libwebm's webm::Status codes: 0 complete, -1 partial,
   -2 would block (input ended early), -3 end of file, <= -1025 parse errors. */
int32_t cwebm_parse_buffer(const uint8_t *data, size_t size, const cwebm_callbacks *callbacks);
int32_t cwebm_parse_file(const char *path, const cwebm_callbacks *callbacks);

#ifdef __cplusplus
}
#endif
