// Header-described framing: [4-byte big-endian header length][header]
// [body of the length the header gives]. The reader collects the prefix
// and the header across Consume calls, asks HeaderBodyLength how long the
// body is, checks both against their maxima before buffering them, and
// moves out the whole frame (prefix included), so the protocol parses the
// header it already knows how to read. Errors are sticky.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ferry/rpc/framing.h"
#include "ferry/rpc/xdr.h"

namespace ferry {
namespace {

constexpr size_t kPrefixSize = 4;

class HeaderDescribedReader final : public RecordReader {
 public:
  HeaderDescribedReader(HeaderBodyLength body_length, HeaderDescribedOptions options)
      : body_length_(std::move(body_length)), options_(options) {}

  absl::Status Consume(std::string_view data, std::vector<std::string>* records) override {
    if (!error_.ok()) return error_;
    for (;;) {
      switch (state_) {
        case State::kPrefix:
          if (!Take(kPrefixSize, &data)) return absl::OkStatus();
          header_size_ = xdr_internal::LoadBigEndian32(frame_.data());
          if (header_size_ == 0 || header_size_ > options_.max_header_size) {
            return Fail(absl::StrCat("header-described framing: a header of ", header_size_,
                                     " bytes (allowed: 1 to ", options_.max_header_size, ")"));
          }
          state_ = State::kHeader;
          break;
        case State::kHeader: {
          if (!Take(kPrefixSize + header_size_, &data)) return absl::OkStatus();
          absl::StatusOr<size_t> body =
              body_length_(std::string_view(frame_).substr(kPrefixSize, header_size_));
          if (!body.ok()) {
            return Fail(absl::StrCat("header-described framing: ", body.status().message()));
          }
          if (*body > options_.max_body_size) {
            return Fail(absl::StrCat("header-described framing: a body of ", *body,
                                     " bytes exceeds the maximum of ", options_.max_body_size));
          }
          frame_end_ = frame_.size() + *body;
          frame_.reserve(frame_end_);
          state_ = State::kBody;
          break;
        }
        case State::kBody:
          if (!Take(frame_end_, &data)) return absl::OkStatus();
          records->push_back(std::move(frame_));
          frame_ = std::string();
          state_ = State::kPrefix;
          break;
      }
    }
  }

  size_t buffered_bytes() const override { return frame_.size(); }

 private:
  enum class State { kPrefix, kHeader, kBody };

  // Moves bytes from `*data` until the frame holds `size` bytes; true once
  // it does.
  bool Take(size_t size, std::string_view* data) {
    const size_t n = std::min(size - frame_.size(), data->size());
    frame_.append(data->data(), n);
    data->remove_prefix(n);
    return frame_.size() == size;
  }

  absl::Status Fail(std::string message) {
    error_ = absl::DataLossError(std::move(message));
    return error_;
  }

  const HeaderBodyLength body_length_;
  const HeaderDescribedOptions options_;
  State state_ = State::kPrefix;
  std::string frame_;       // the frame so far, prefix included
  size_t header_size_ = 0;  // from the prefix
  size_t frame_end_ = 0;    // the whole frame's size, once the header is read
  absl::Status error_;      // sticky
};

class HeaderDescribedFraming final : public Framing {
 public:
  HeaderDescribedFraming(HeaderBodyLength body_length, HeaderDescribedOptions options)
      : body_length_(std::move(body_length)), options_(options) {}
  // The record is the frame: its header already says how long it is.
  void Append(std::string_view record, std::string* out) const override { out->append(record); }
  using Framing::AppendPieces;
  void AppendPieces(absl::Span<const std::string_view> parts, std::string* /*framing_bytes*/,
                    std::vector<WirePiece>* pieces) const override {
    for (std::string_view part : parts) pieces->push_back(WirePiece{.body = part});
  }
  std::unique_ptr<RecordReader> NewReader() const override {
    return std::make_unique<HeaderDescribedReader>(body_length_, options_);
  }
  std::string_view name() const override { return "header-described"; }

 private:
  const HeaderBodyLength body_length_;
  const HeaderDescribedOptions options_;
};

}  // namespace

std::unique_ptr<Framing> NewHeaderDescribedFraming(HeaderBodyLength body_length,
                                                   const HeaderDescribedOptions& options) {
  return std::make_unique<HeaderDescribedFraming>(std::move(body_length), options);
}

}  // namespace ferry
