// A TtlCache's counters as records.proto CacheStats bytes, the form they
// cross languages in (Java's TtlCacheStats decodes them).
//
//   std::string bytes = ferry::records::SerializeCacheStats(cache.stats(), cache.size(), cache.weight());
//
// Part of ferry::records. Thread-safety: pure functions.
#ifndef FERRY_RECORDS_CACHE_RECORDS_H_
#define FERRY_RECORDS_CACHE_RECORDS_H_

#include <cstdint>
#include <string>

#include "ferry/cache/ttl_cache.h"

namespace ferry::records {

std::string SerializeCacheStats(const TtlCacheStats& stats, int64_t entries, int64_t weight);

}  // namespace ferry::records

#endif  // FERRY_RECORDS_CACHE_RECORDS_H_
