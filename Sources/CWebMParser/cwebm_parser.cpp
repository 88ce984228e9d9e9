// Adapts libwebm's webm::Callback to the C function pointers of cwebm_parser.h.
#include "cwebm_parser.h"

#include <cstdio>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include <webm/buffer_reader.h>
#include <webm/callback.h>
#include <webm/file_reader.h>
#include <webm/status.h>
#include <webm/webm_parser.h>

namespace {

class ForwardingCallback final : public webm::Callback {
 public:
  explicit ForwardingCallback(const cwebm_callbacks *callbacks) : c_(callbacks) {}

  webm::Status OnElementBegin(const webm::ElementMetadata &metadata, webm::Action *action) override {
    if (c_->on_element) {
      uint64_t size = metadata.size == webm::kUnknownElementSize ? std::numeric_limits<uint64_t>::max()
                                                                  : metadata.size;
      c_->on_element(c_->context, static_cast<uint32_t>(metadata.id), metadata.position,
                     metadata.header_size, size);
    }
    *action = webm::Action::kRead;
    return webm::Status(webm::Status::kOkCompleted);
  }

  webm::Status OnEbml(const webm::ElementMetadata &, const webm::Ebml &ebml) override {
    if (c_->on_ebml) {
      cwebm_ebml_header h{};
      h.ebml_version = ebml.ebml_version.value();
      h.ebml_read_version = ebml.ebml_read_version.value();
      h.max_id_length = ebml.ebml_max_id_length.value();
      h.max_size_length = ebml.ebml_max_size_length.value();
      h.doc_type_version = ebml.doc_type_version.value();
      h.doc_type_read_version = ebml.doc_type_read_version.value();
      h.doc_type = ebml.doc_type.value().c_str();
      c_->on_ebml(c_->context, &h);
    }
    return webm::Status(webm::Status::kOkCompleted);
  }

  webm::Status OnInfo(const webm::ElementMetadata &, const webm::Info &info) override {
    if (c_->on_info) {
      cwebm_info i{};
      i.timecode_scale = info.timecode_scale.value();
      i.has_duration = info.duration.is_present() ? 1 : 0;
      i.duration = info.duration.value();
      i.muxing_app = info.muxing_app.is_present() ? info.muxing_app.value().c_str() : nullptr;
      i.writing_app = info.writing_app.is_present() ? info.writing_app.value().c_str() : nullptr;
      c_->on_info(c_->context, &i);
    }
    return webm::Status(webm::Status::kOkCompleted);
  }

  webm::Status OnTrackEntry(const webm::ElementMetadata &, const webm::TrackEntry &entry) override {
    if (c_->on_track) {
      cwebm_track t{};
      t.number = entry.track_number.value();
      t.uid = entry.track_uid.value();
      t.type = static_cast<uint64_t>(entry.track_type.value());
      t.codec_id = entry.codec_id.value().c_str();
      const std::vector<std::uint8_t> &priv = entry.codec_private.value();
      t.codec_private = priv.empty() ? nullptr : priv.data();
      t.codec_private_size = priv.size();
      t.codec_delay = entry.codec_delay.value();
      t.seek_pre_roll = entry.seek_pre_roll.value();
      t.uses_lacing = entry.uses_lacing.value() ? 1 : 0;
      if (entry.video.is_present()) {
        t.pixel_width = entry.video.value().pixel_width.value();
        t.pixel_height = entry.video.value().pixel_height.value();
        const auto &projection = entry.video.value().projection;
        if (projection.is_present()) {
          t.has_projection = 1;
          t.projection_type = static_cast<uint64_t>(projection.value().type.value());
          t.projection_pose_roll = projection.value().pose_roll.value();
        }
      }
      if (entry.audio.is_present()) {
        t.sampling_frequency = entry.audio.value().sampling_frequency.value();
        t.channels = entry.audio.value().channels.value();
      }
      c_->on_track(c_->context, &t);
    }
    return webm::Status(webm::Status::kOkCompleted);
  }

  webm::Status OnSeek(const webm::ElementMetadata &, const webm::Seek &seek) override {
    if (c_->on_seek) {
      c_->on_seek(c_->context, static_cast<uint32_t>(seek.id.value()), seek.position.value());
    }
    return webm::Status(webm::Status::kOkCompleted);
  }

  webm::Status OnClusterBegin(const webm::ElementMetadata &metadata, const webm::Cluster &cluster,
                              webm::Action *action) override {
    if (c_->on_cluster_begin) c_->on_cluster_begin(c_->context, metadata.position, cluster.timecode.value());
    *action = webm::Action::kRead;
    return webm::Status(webm::Status::kOkCompleted);
  }

  webm::Status OnClusterEnd(const webm::ElementMetadata &, const webm::Cluster &) override {
    if (c_->on_cluster_end) c_->on_cluster_end(c_->context);
    return webm::Status(webm::Status::kOkCompleted);
  }

  webm::Status OnSimpleBlockBegin(const webm::ElementMetadata &, const webm::SimpleBlock &block,
                                  webm::Action *action) override {
    track_ = block.track_number;
    timecode_ = block.timecode;
    key_frame_ = block.is_key_frame;
    simple_ = true;
    *action = webm::Action::kRead;
    return webm::Status(webm::Status::kOkCompleted);
  }

  webm::Status OnBlockBegin(const webm::ElementMetadata &, const webm::Block &block,
                            webm::Action *action) override {
    track_ = block.track_number;
    timecode_ = block.timecode;
    key_frame_ = false;
    simple_ = false;
    *action = webm::Action::kRead;
    return webm::Status(webm::Status::kOkCompleted);
  }

  webm::Status OnFrame(const webm::FrameMetadata &, webm::Reader *reader,
                       std::uint64_t *bytes_remaining) override {
    // Frames may arrive in several calls when input is partial: accumulate.
    if (frame_.empty()) frame_.reserve(static_cast<size_t>(*bytes_remaining));
    while (*bytes_remaining > 0) {
      std::uint8_t chunk[4096];
      std::uint64_t want = *bytes_remaining < sizeof(chunk) ? *bytes_remaining : sizeof(chunk);
      std::uint64_t got = 0;
      webm::Status status = reader->Read(static_cast<std::size_t>(want), chunk, &got);
      frame_.insert(frame_.end(), chunk, chunk + got);
      *bytes_remaining -= got;
      if (!status.completed_ok() && *bytes_remaining > 0) {
        if (status.code == webm::Status::kOkPartial && got > 0) continue;
        return status;
      }
    }
    if (c_->on_frame) {
      c_->on_frame(c_->context, track_, timecode_, key_frame_ ? 1 : 0, simple_ ? 1 : 0,
                   frame_.empty() ? nullptr : frame_.data(), frame_.size());
    }
    frame_.clear();
    return webm::Status(webm::Status::kOkCompleted);
  }

  webm::Status OnCuePoint(const webm::ElementMetadata &, const webm::CuePoint &cue_point) override {
    if (c_->on_cue_point) {
      for (const auto &positions : cue_point.cue_track_positions) {
        c_->on_cue_point(c_->context, cue_point.time.value(), positions.value().track.value(),
                         positions.value().cluster_position.value());
      }
    }
    return webm::Status(webm::Status::kOkCompleted);
  }

 private:
  const cwebm_callbacks *c_;
  std::uint64_t track_ = 0;
  std::int16_t timecode_ = 0;
  bool key_frame_ = false;
  bool simple_ = true;
  std::vector<std::uint8_t> frame_;
};

int32_t parse(webm::Reader *reader, const cwebm_callbacks *callbacks) {
  try {
    ForwardingCallback callback(callbacks);
    webm::WebmParser parser;
    webm::Status status = parser.Feed(&callback, reader);
    return status.code;
  } catch (const std::bad_alloc &) {
    return webm::Status::kNotEnoughMemory;
  } catch (...) {
    return webm::Status::kInvalidElementValue;
  }
}

}  // namespace

extern "C" int32_t cwebm_parse_buffer(const uint8_t *data, size_t size, const cwebm_callbacks *callbacks) {
  // BufferReader copies into a vector; the copy keeps the shim simple and the
  // reader is only used for verification, never on the recording path.
  webm::BufferReader reader(std::vector<std::uint8_t>(data, data + size));
  return parse(&reader, callbacks);
}

extern "C" int32_t cwebm_parse_file(const char *path, const cwebm_callbacks *callbacks) {
  std::FILE *file = std::fopen(path, "rb");
  if (file == nullptr) return CWEBM_STATUS_CANNOT_OPEN;
  webm::FileReader reader(file);  // takes ownership and closes the file
  return parse(&reader, callbacks);
}
