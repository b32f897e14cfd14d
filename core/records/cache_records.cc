#include "ferry/records/cache_records.h"

#include "ferry/records.pb.h"

namespace ferry::records {

std::string SerializeCacheStats(const TtlCacheStats& s, int64_t entries, int64_t weight) {
  CacheStats out;
  out.set_hits(s.hits);
  out.set_negative_hits(s.negative_hits);
  out.set_misses(s.misses);
  out.set_loads(s.loads);
  out.set_load_failures(s.load_failures);
  out.set_refreshes(s.refreshes);
  out.set_evictions(s.evictions);
  out.set_expirations(s.expirations);
  out.set_invalidations(s.invalidations);
  out.set_loads_in_flight(s.loads_in_flight);
  out.set_entries(entries);
  out.set_weight(weight);
  return out.SerializeAsString();
}

}  // namespace ferry::records
