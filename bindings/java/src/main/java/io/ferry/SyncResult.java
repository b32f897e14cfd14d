package io.ferry;

import java.util.List;

/**
 * What {@link FileSystems#sync} did (or, in a dry run, would do). Paths are relative to the
 * trees' roots; the lists hold the first 10,000, {@code *Unlisted} counts the rest. Immutable.
 */
public record SyncResult(boolean dryRun, long copied, long skipped, long timesUpdated,
    long deleted, long excluded, long refused, long bytes, List<String> copiedFiles,
    long copiedUnlisted, List<String> deletedFiles, long deletedUnlisted, List<String> warnings) {

  // counts: dry_run, copied, skipped, times_updated, deleted, excluded, refused, bytes,
  // copied_unlisted, deleted_unlisted (the native side's order).
  static SyncResult fromNative(long[] counts, String[] copied, String[] deleted, String[] warnings) {
    return new SyncResult(counts[0] != 0, counts[1], counts[2], counts[3], counts[4], counts[5],
        counts[6], counts[7], List.of(copied), counts[8], List.of(deleted), counts[9],
        List.of(warnings));
  }
}
