package io.ferry;

import java.util.function.Consumer;

/**
 * How {@link FileSystems#walk(String, WalkOptions)} walks (the core's fs::WalkOptions that a
 * caller tunes): {@code batchEntries} entries per batch (one JNI crossing and one decode each),
 * {@code maxInFlight} directory listings at once, and {@code onError} for each directory that
 * could not be read (null: such directories are skipped; {@link FileSystems#walk(String)}
 * skips them). A walk is depth-unbounded and reports directories as entries: the core offers
 * neither a depth limit nor a files-only walk, so filter the stream.
 */
public record WalkOptions(int batchEntries, int maxInFlight, Consumer<WalkError> onError) {
  /** The core's defaults: 4096 entries per batch, 256 listings in flight, errors skipped. */
  public static final WalkOptions DEFAULTS = new WalkOptions(4096, 256, null);

  public WalkOptions {
    if (batchEntries <= 0 || maxInFlight <= 0) {
      throw new IllegalArgumentException("walk: batchEntries (" + batchEntries
          + ") and maxInFlight (" + maxInFlight + ") must be > 0");
    }
  }

  public WalkOptions withBatchEntries(int n) {
    return new WalkOptions(n, maxInFlight, onError);
  }

  public WalkOptions withMaxInFlight(int n) {
    return new WalkOptions(batchEntries, n, onError);
  }

  public WalkOptions withOnError(Consumer<WalkError> listener) {
    return new WalkOptions(batchEntries, maxInFlight, listener);
  }
}
