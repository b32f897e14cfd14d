package io.ferry;

import com.google.protobuf.InvalidProtocolBufferException;
import io.ferry.records.CacheStats;

/**
 * What a {@link TtlCache} counted since it was made (the C++ {@code TtlCacheStats}), with the
 * entries it holds and their weight: records.proto's CacheStats, decoded.
 */
public record TtlCacheStats(
    long hits,
    long negativeHits,
    long misses,
    long loads,
    long loadFailures,
    long refreshes,
    long evictions,
    long expirations,
    long invalidations,
    long loadsInFlight,
    long entries,
    long weight) {
  static TtlCacheStats fromRecord(byte[] bytes) {
    CacheStats s;
    try {
      s = CacheStats.parseFrom(bytes);
    } catch (InvalidProtocolBufferException e) {  // ferry made these bytes: a bug, not input
      throw new IllegalStateException("cache stats do not decode: " + e.getMessage(), e);
    }
    return new TtlCacheStats(s.getHits(), s.getNegativeHits(), s.getMisses(), s.getLoads(),
        s.getLoadFailures(), s.getRefreshes(), s.getEvictions(), s.getExpirations(),
        s.getInvalidations(), s.getLoadsInFlight(), s.getEntries(), s.getWeight());
  }
}
