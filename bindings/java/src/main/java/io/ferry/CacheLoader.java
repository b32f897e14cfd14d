package io.ferry;

/**
 * Loads the value for a {@link TtlCache} key on a miss. Return {@code null} or throw {@link
 * java.io.FileNotFoundException} / {@link java.nio.file.NoSuchFileException} for "no such
 * thing": the cache remembers that for its negative refresh time. Any other exception is not
 * cached.
 */
@FunctionalInterface
public interface CacheLoader<V> {
  V load(String key) throws Exception;
}
