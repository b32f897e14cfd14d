// Fuzzes the record-marking and length-prefix readers.
//
// The input chooses the maximum record size, a way of splitting the stream
// into Consume calls, and the stream itself. Feeding the stream in pieces
// must give exactly what feeding it whole gives (records, status,
// buffered_bytes), records must respect the maximum, and every record read
// must survive being framed again (with small fragments) and read back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fuzzer/FuzzedDataProvider.h>

#include "ferry/rpc/framing.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void FuzzFraming(const ferry::Framing& framing, size_t max_record_size, bool empty_records_ok,
                 const std::string& stream, const std::vector<size_t>& cuts) {
  // Whole.
  auto whole = framing.NewReader();
  std::vector<std::string> whole_records;
  const absl::Status whole_status = whole->Consume(stream, &whole_records);
  if (!whole_status.ok()) Check(whole_status.code() == absl::StatusCode::kDataLoss);

  // In pieces (each piece an exact-size heap copy, so ASan sees overruns).
  auto pieces = framing.NewReader();
  std::vector<std::string> piece_records;
  absl::Status piece_status;
  size_t pos = 0;
  for (size_t i = 0; pos < stream.size(); ++i) {
    const size_t n = i < cuts.size() ? std::min(cuts[i], stream.size() - pos) : stream.size() - pos;
    const std::string piece = stream.substr(pos, n);
    pos += n;
    piece_status = pieces->Consume(piece, &piece_records);
    if (!piece_status.ok()) break;
  }
  Check(piece_status == whole_status);
  Check(piece_records == whole_records);
  if (whole_status.ok()) Check(pieces->buffered_bytes() == whole->buffered_bytes());
  // Errors are sticky.
  if (!whole_status.ok()) Check(whole->Consume(std::string_view("\x80\0\0\1x", 5), &whole_records) == whole_status);

  // Records are within the limit and re-frame to themselves.
  std::string again;
  for (const std::string& r : piece_records) {
    Check(r.size() <= max_record_size);
    Check(empty_records_ok || !r.empty());
    framing.Append(r, &again);
  }
  auto reread = framing.NewReader();
  std::vector<std::string> reread_records;
  Check(reread->Consume(again, &reread_records).ok());
  Check(reread_records == piece_records);
  Check(reread->buffered_bytes() == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  FuzzedDataProvider in(bytes, size);
  const size_t max_record_size = in.ConsumeIntegralInRange<size_t>(0, 4096);
  const size_t max_fragment_size = in.ConsumeIntegralInRange<size_t>(0, 64);
  std::vector<size_t> cuts(in.ConsumeIntegralInRange<size_t>(0, 64));
  for (size_t& c : cuts) c = in.ConsumeIntegralInRange<size_t>(0, 64);
  const std::string stream = in.ConsumeRemainingBytesAsString();

  const auto record_marking = ferry::NewRecordMarkingFraming(
      {.max_record_size = max_record_size, .max_fragment_size = max_fragment_size});
  FuzzFraming(*record_marking, max_record_size, /*empty_records_ok=*/false, stream, cuts);
  const auto length_prefix = ferry::NewLengthPrefixFraming(max_record_size);
  FuzzFraming(*length_prefix, max_record_size, /*empty_records_ok=*/true, stream, cuts);
  return 0;
}
