package io.ferry;

import java.util.ArrayList;
import java.util.List;

/**
 * How {@link FileSystems#sync} decides and what it may do: rclone sync's rules and flags, the
 * same engine as ferry-sync and Python's {@code FileSystems.sync}. A builder; not thread-safe.
 *
 * <pre>{@code
 * SyncResult r = fs.sync("/data/tree", "s3://bucket/tree",
 *     new SyncOptions().compare(SyncOptions.Compare.CHECKSUM).exclude("*.tmp").dryRun(true));
 * }</pre>
 */
public final class SyncOptions {
  /** What makes a file already at the destination up to date. */
  public enum Compare {
    /** Same size and modification time (rclone's default); equal content under another time only gets its time set. */
    SIZE_AND_TIME,
    /** Same size. */
    SIZE,
    /** Same size and content hash (MD5, or SHA-256 where iRODS is a side; ones the servers keep or compute, else both files read). */
    CHECKSUM,
    /** Any file there. */
    EXISTING,
    /** None: every file is copied. */
    NEVER
  }

  Compare compare = Compare.SIZE_AND_TIME;
  boolean delete = true;
  boolean dryRun = false;
  long maxDelete = -1;
  final List<String> include = new ArrayList<>();
  final List<String> exclude = new ArrayList<>();
  final List<String> filter = new ArrayList<>();

  public SyncOptions compare(Compare c) {
    compare = c;
    return this;
  }

  /** Whether destination files the source lacks are removed (after every copy succeeded). */
  public SyncOptions delete(boolean d) {
    delete = d;
    return this;
  }

  /** Decide and report, write nothing. */
  public SyncOptions dryRun(boolean d) {
    dryRun = d;
    return this;
  }

  /** More removals than this: none is made and the sync fails. Negative: no limit. */
  public SyncOptions maxDelete(long n) {
    maxDelete = n;
    return this;
  }

  /** Take only files matching {@code pattern} (rclone's globs). */
  public SyncOptions include(String pattern) {
    include.add(pattern);
    return this;
  }

  /** Leave out files matching {@code pattern}. */
  public SyncOptions exclude(String pattern) {
    exclude.add(pattern);
    return this;
  }

  /** A rule {@code "+ PATTERN"} or {@code "- PATTERN"}, tried in order. */
  public SyncOptions filter(String rule) {
    filter.add(rule);
    return this;
  }
}
