package io.ferry;

/** What a {@link TtlCache} counted since it was made (the C++ {@code TtlCacheStats}). */
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
    long loadsInFlight) {
  static TtlCacheStats of(long[] v) {
    return new TtlCacheStats(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]);
  }
}
