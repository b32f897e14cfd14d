// An IrodsListing as bytes for the shared cache tier: records.proto's
// IrodsListing message, written and read by hand (the protobuf wire format
// is five varints and a length-prefixed name per entry) so that ferry_irods
// does not link protobuf. About 20 bytes per entry for typical names.
//
// Thread-safety: pure functions.
#ifndef FERRY_IRODS_INTERNAL_IRODS_LISTING_CODEC_H_
#define FERRY_IRODS_INTERNAL_IRODS_LISTING_CODEC_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ferry/irods/irods_client.h"

namespace ferry::irods {

std::string EncodeIrodsListing(const std::vector<IrodsEntry>& listing);

// DataLoss for bytes that are not a well-formed IrodsListing. Unknown
// fields are skipped (a newer writer may add some).
absl::StatusOr<std::vector<IrodsEntry>> DecodeIrodsListing(std::string_view bytes);

}  // namespace ferry::irods

#endif  // FERRY_IRODS_INTERNAL_IRODS_LISTING_CODEC_H_
