// Fuzzes the decoder of cached iRODS listings (irods_listing_codec.h):
// the bytes come back from the shared cache tier (Redis), which other
// processes write, so they are a peer's bytes too.
//
// Whatever the bytes: a listing or DataLoss; and an accepted listing
// encodes and decodes back to itself.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "irods_listing_codec.h"

using ferry::fuzz::Check;
namespace irods = ferry::irods;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string copy(reinterpret_cast<const char*>(data), size);  // exact size for ASan
  absl::StatusOr<std::vector<irods::IrodsEntry>> listing = irods::DecodeIrodsListing(copy);
  if (!listing.ok()) {
    Check(listing.status().code() == absl::StatusCode::kDataLoss);
    return 0;
  }
  absl::StatusOr<std::vector<irods::IrodsEntry>> back =
      irods::DecodeIrodsListing(irods::EncodeIrodsListing(*listing));
  Check(back.ok() && back->size() == listing->size());
  for (size_t i = 0; i < listing->size(); ++i) {
    const irods::IrodsEntry& a = (*listing)[i];
    const irods::IrodsEntry& b = (*back)[i];
    Check(a.name == b.name && a.type == b.type && a.size == b.size && a.id == b.id &&
          a.modify_time == b.modify_time);
  }
  return 0;
}
