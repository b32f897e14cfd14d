package io.ferry;

import java.io.IOException;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Predicate;
import java.util.function.ToLongBiFunction;

/**
 * ferry's TTL query cache (the C++ {@code ferry::TtlCache}) holding Java values under String
 * keys (paths, or NFSRODS-style {@code "user#path"}): bounded, thread-safe, with single-flight
 * loading. Concurrent misses on one key run the loader once, on the thread that missed first;
 * the others wait for its value or its error.
 *
 * <pre>{@code
 * try (TtlCache<Stat> stats = TtlCache.<Stat>builder()
 *          .refreshTime(Duration.ofSeconds(1))
 *          .loader(path -> irods.stat(path))
 *          .build()) {
 *   Stat st = stats.get("/tempZone/home/alice/file");
 *   stats.invalidatePrefix("/tempZone/home/alice");   // after a write below it
 * }
 * }</pre>
 *
 * <p>Errors: the thread whose loader threw gets that exception back unchanged (a checked
 * exception that is not an {@link IOException} arrives wrapped in a {@link FerryException}
 * whose cause it is); threads that waited on that load get ferry's exception for the same
 * status ({@link java.io.FileNotFoundException}, {@link java.nio.file.AccessDeniedException},
 * ...), whose message names the key and the loader's exception. "Not found" (a loader that
 * returns null or throws FileNotFoundException/NoSuchFileException) is cached for the
 * negative refresh time; other errors are not cached.
 *
 * <p>Refresh-ahead ({@link Builder#refreshAfter}) needs a {@link FerryRuntime}: reloads run on its
 * blocking threads (attached to the JVM as daemon threads), while readers keep getting the
 * current value. Keys are compared as UTF-8 bytes; {@link #invalidatePrefix} matches path
 * components.
 *
 * <p>Thread-safe. AutoCloseable: close waits for calls in progress and background reloads; any
 * use after close throws
 * {@link IllegalStateException}; a Cleaner frees a cache a user forgot to close.
 */
public final class TtlCache<V> extends NativeObject {
  /** How long, in Java terms: a Duration, or {@code null} for "never" (until evicted). */
  private static final long DEFAULT = Long.MIN_VALUE;  // the C++ default
  private static final long NEVER = Long.MAX_VALUE;
  private final ToLongBiFunction<String, ? super V> weigher;

  /** Options; unset ones keep ferry's C++ defaults (30 s, 1 s negative, 100,000 entries). */
  public static final class Builder<V> {
    private long refreshNanos = DEFAULT;
    private long refreshAfterNanos = DEFAULT;
    private long negativeNanos = DEFAULT;
    private long maxEntries = DEFAULT;
    private long maxWeight = DEFAULT;
    private int shards;
    private ToLongBiFunction<String, ? super V> weigher;
    private CacheLoader<V> loader;
    private FerryRuntime runtime;

    private Builder() {}

    /** How long a value is served after its load started; null: until evicted. */
    public Builder<V> refreshTime(Duration d) {
      refreshNanos = nanos(d);
      return this;
    }

    /** Reload a hot entry in the background once it is this old (needs {@link #runtime}). */
    public Builder<V> refreshAfter(Duration d) {
      refreshAfterNanos = nanos(d);
      return this;
    }

    /** How long "not found" is remembered; zero: not at all. */
    public Builder<V> negativeRefreshTime(Duration d) {
      negativeNanos = nanos(d);
      return this;
    }

    public Builder<V> maxEntries(long n) {
      maxEntries = nonNegative(n, "maxEntries");
      return this;
    }

    /** Bounds the sum of {@link #weigher} over the entries. */
    public Builder<V> maxWeight(long w) {
      maxWeight = nonNegative(w, "maxWeight");
      return this;
    }

    /** An entry's weight (>= 0), asked once when it is loaded or put. Default: 1. */
    public Builder<V> weigher(ToLongBiFunction<String, ? super V> w) {
      weigher = w;
      return this;
    }

    /** The loader {@link TtlCache#get(String)} uses. */
    public Builder<V> loader(CacheLoader<V> l) {
      loader = l;
      return this;
    }

    /** Where refresh-ahead reloads run (the cache keeps its threads alive). */
    public Builder<V> runtime(FerryRuntime r) {
      runtime = r;
      return this;
    }

    /** Lock shards (a power of two); 0: ferry chooses. */
    public Builder<V> shards(int n) {
      shards = (int) nonNegative(n, "shards");
      return this;
    }

    public TtlCache<V> build() {
      return new TtlCache<>(this);
    }

    private static long nonNegative(long n, String what) {
      if (n < 0) throw new IllegalArgumentException(what + " must be >= 0");
      return n;
    }

    private static long nanos(Duration d) {
      if (d == null) return NEVER;
      if (d.isNegative()) throw new IllegalArgumentException("a negative duration: " + d);
      try {
        return d.toNanos();
      } catch (ArithmeticException tooLong) {  // beyond 292 years: never
        return NEVER;
      }
    }
  }

  public static <V> Builder<V> builder() {
    return new Builder<>();
  }

  private TtlCache(Builder<V> b) {
    super(open(b));
    weigher = b.weigher;
  }

  private static NativeHandle open(Builder<?> b) {
    NativeLibrary.load();
    long rt = 0;
    if (b.runtime != null) rt = b.runtime.acquireHandle();
    try {
      return new NativeHandle("TtlCache",
          newCache(rt, b.refreshNanos, b.refreshAfterNanos, b.negativeNanos, b.maxEntries,
              b.maxWeight, b.shards, b.weigher, b.loader),
          TtlCache::disposeCache);
    } finally {
      if (b.runtime != null) b.runtime.releaseHandle();
    }
  }

  /** The value for {@code key}, loaded by the cache's loader on a miss. */
  public V get(String key) throws IOException {
    return get(key, null);
  }

  /** The value for {@code key}, loaded by {@code loader} (null: the cache's) on a miss. */
  @SuppressWarnings("unchecked")
  public V get(String key, CacheLoader<V> loader) throws IOException {
    Objects.requireNonNull(key, "key");
    long h = handle.acquire();
    try {
      return (V) get(h, key, loader);
    } catch (IOException | RuntimeException e) {
      throw e;
    } catch (Exception e) {  // a loader's checked exception, rethrown by the native call
      throw new FerryException("TtlCache loader for \"" + key + "\": " + e, e);
    } finally {
      handle.release();
    }
  }

  /** The cached value, or null when absent, expired or cached as not found. Never loads. */
  @SuppressWarnings("unchecked")
  public V getIfPresent(String key) {
    Objects.requireNonNull(key, "key");
    return handle.call(h -> (V) getIfPresent(h, key));
  }

  /** Stores {@code value}, replacing any entry and superseding a load in flight. */
  public void put(String key, V value) {
    put(key, value, DEFAULT);
  }

  /** As {@link #put(String, Object)}, with this entry's own refresh time (null: never). */
  public void put(String key, V value, Duration refreshTime) {
    put(key, value, Builder.nanos(refreshTime));
  }

  private void put(String key, V value, long refreshNanos) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
    final long weight = weigher == null ? 1 : weigher.applyAsLong(key, value);
    if (weight < 0) {
      throw new IllegalArgumentException(
          "TtlCache weigher for \"" + key + "\" returned " + weight + " (must be >= 0)");
    }
    handle.run(h -> put(h, key, value, weight, refreshNanos));
  }

  /** Drops {@code key}'s entry and any load of it in flight. True if there was one. */
  public boolean invalidate(String key) {
    Objects.requireNonNull(key, "key");
    return handle.call(h -> invalidate(h, key));
  }

  /**
   * Drops the entry for path {@code prefix} and every entry below it ("/a/b" drops "/a/b" and
   * "/a/b/c", not "/a/bc"). Returns how many.
   */
  public long invalidatePrefix(String prefix) {
    Objects.requireNonNull(prefix, "prefix");
    return handle.call(h -> invalidatePrefix(h, prefix));
  }

  /**
   * Drops every entry whose key satisfies {@code predicate}. It runs under a cache lock: it
   * must be quick and must not use this cache. An exception from it stops the matching and is
   * rethrown.
   */
  public long invalidateIf(Predicate<String> predicate) {
    Objects.requireNonNull(predicate, "predicate");
    return handle.call(h -> invalidateIf(h, predicate));
  }

  /** Drops every entry and supersedes every load in flight. Returns how many. */
  public long invalidateAll() {
    return handle.call(h -> invalidateAll(h));
  }

  /** Drops the entries whose time is up. Returns how many. */
  public long purgeExpired() {
    return handle.call(h -> purgeExpired(h));
  }

  /** Entries stored (cached not-founds and expired ones not yet dropped included). */
  public long size() {
    return handle.call(h -> size(h));
  }

  public long weight() {
    return handle.call(h -> weight(h));
  }

  public int shardCount() {
    return handle.call(h -> shardCount(h));
  }

  public TtlCacheStats stats() {
    return handle.call(h -> TtlCacheStats.fromRecord(stats(h)));
  }

  private static native long newCache(long runtime, long refreshNanos, long refreshAfterNanos,
      long negativeNanos, long maxEntries, long maxWeight, int shards, Object weigher,
      Object loader);

  private static native void disposeCache(long handle);

  private static native Object get(long handle, String key, CacheLoader<?> loader)
      throws IOException;

  private static native Object getIfPresent(long handle, String key);

  private static native void put(long handle, String key, Object value, long weight,
      long refreshNanos);

  private static native boolean invalidate(long handle, String key);

  private static native long invalidatePrefix(long handle, String prefix);

  private static native long invalidateIf(long handle, Predicate<String> predicate);

  private static native long invalidateAll(long handle);

  private static native long purgeExpired(long handle);

  private static native long size(long handle);

  private static native long weight(long handle);

  private static native int shardCount(long handle);

  private static native byte[] stats(long handle);
}
