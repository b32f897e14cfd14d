package io.ferry;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.util.List;
import java.util.stream.Stream;

/**
 * Every place ferry reaches, by URL: local paths, {@code s3://}, {@code nfs://},
 * {@code irods://} (the C++ registry resolves the URL; the C++ engine copies). Mirrors the
 * Python {@code ferry.FileSystems}.
 *
 * <pre>{@code
 * try (FerryRuntime rt = new FerryRuntime(); FileSystems fs = new FileSystems(rt)) {
 *   TransferStats s = fs.copy("irods://alice@host:1247/zone/home/alice/big.bin", "/tmp/big.bin", false,
 *       (done, total) -> System.out.println(done + " / " + total));
 *   Entry e = fs.stat("s3://bucket/key");
 *   try (FerryFile f = fs.open("s3://bucket/key", "r")) {
 *     f.position(1 << 20).read(ByteBuffer.allocateDirect(4096));
 *   }
 *   try (Stream<Entry> entries = fs.walk("nfs://host/export/tree")) {
 *     long bytes = entries.filter(Entry::isFile).mapToLong(Entry::size).sum();
 *   }
 * }
 * }</pre>
 *
 * Errors: {@link java.io.FileNotFoundException}, {@link java.nio.file.AccessDeniedException},
 * {@link java.nio.file.FileAlreadyExistsException}, {@link FerryAuthenticationException} (wrong
 * credentials), {@link IllegalArgumentException} (a bad URL), {@link IOException} (a server
 * that cannot be reached), each with ferry's message. Thread-safe; AutoCloseable. Files and walks
 * it opened stay usable after it is closed (each holds the native filesystems until closed).
 */
public final class FileSystems extends NativeObject {
  public FileSystems(FerryRuntime runtime) {
    this(runtime, 0, 0);
  }

  /**
   * @param irodsConnections logins per iRODS endpoint (0: ferry's default)
   * @param irodsParallelism streams per iRODS file (0: ferry's default)
   */
  public FileSystems(FerryRuntime runtime, int irodsConnections, int irodsParallelism) {
    this(runtime, irodsConnections, irodsParallelism, null);
  }

  /**
   * As {@link #FileSystems(FerryRuntime, int, int)}, every {@code irods://} call made for
   * {@code irodsClientUser} (null: the URL's user): a proxy login, the URL's user a rodsadmin
   * logging in for that user, whose permissions the server then checks (what NFSRODS does for
   * each NFS caller).
   */
  public FileSystems(FerryRuntime runtime, int irodsConnections, int irodsParallelism,
      String irodsClientUser) {
    this(runtime, new Options().irodsConnections(irodsConnections)
        .irodsParallelism(irodsParallelism).irodsClientUser(irodsClientUser));
  }

  /** With every setting of {@code options} (ferry's {@code BuiltinFileSystemOptions}). */
  public FileSystems(FerryRuntime runtime, Options options) {
    super(open(runtime, options));
  }

  /**
   * Settings for the adapters, as Python's {@code FileSystems} keyword arguments; unset ones keep
   * each adapter's default. Not thread-safe; read once, when a FileSystems is made.
   */
  public static final class Options {
    private int irodsConnections;
    private int irodsParallelism;
    private String irodsClientUser;
    private boolean s3MakeBucket;

    /** Logins per iRODS endpoint (0: ferry's default). */
    public Options irodsConnections(int n) {
      irodsConnections = n;
      return this;
    }

    /** Streams per iRODS file (0: ferry's default). */
    public Options irodsParallelism(int n) {
      irodsParallelism = n;
      return this;
    }

    /** Every irods:// call made for this user (null: the URL's user); see the constructor. */
    public Options irodsClientUser(String user) {
      irodsClientUser = user;
      return this;
    }

    /**
     * {@link FileSystems#mkdir} of a bucket URL ({@code s3://bucket/}) that does not exist creates
     * the bucket (Python's {@code s3_make_bucket}); without it, it only checks the bucket is there.
     */
    public Options s3MakeBucket(boolean make) {
      s3MakeBucket = make;
      return this;
    }
  }

  private static NativeHandle open(FerryRuntime runtime, Options o) {
    if (o.irodsConnections < 0 || o.irodsParallelism < 0) {
      throw new IllegalArgumentException("connections and parallelism must be >= 0");
    }
    return new NativeHandle("FileSystems",
        newFileSystems(runtime.handle(), o.irodsConnections, o.irodsParallelism, o.irodsClientUser,
            o.s3MakeBucket),
        FileSystems::disposeFileSystems);
  }

  /** What {@code url} names. */
  public Entry stat(String url) throws IOException {
    return handle.call(h -> stat(h, url));
  }

  /**
   * Copies file {@code src} to {@code dst} (or, {@code recursive}, every file below directory
   * {@code src} to the same path below {@code dst}), between any two places. A tree copy with
   * failed files throws the first failure (naming how many failed). {@link Thread#interrupt()} of
   * the calling thread stops the copy within about 0.1 s of bytes moving: files in flight are
   * discarded, targets left as they were, and the copy throws {@link
   * java.io.InterruptedIOException} with the thread's interrupt flag still set.
   */
  public TransferStats copy(String src, String dst, boolean recursive) throws IOException {
    return TransferStats.fromRecord(handle.call(h -> copy(h, src, dst, recursive, null)));
  }

  /**
   * {@link #copy(String, String, boolean)}, reporting to {@code listener} (null: none) on this
   * thread; an exception the listener throws stops the copy and is thrown from here unchanged.
   */
  public TransferStats copy(String src, String dst, boolean recursive, ProgressListener listener)
      throws IOException {
    return TransferStats.fromRecord(handle.call(h -> copy(h, src, dst, recursive, listener)));
  }

  /**
   * Makes the tree {@code dst} a copy of the tree {@code src}, as {@code rclone sync} does (the
   * engine of ferry-sync): copies what is missing or changed and, unless {@code options} say
   * otherwise, then removes what {@code src} lacks, never after a failure. Files that fail throw
   * the first failure; interrupting the thread stops the sync as it stops {@link #copy}.
   */
  public SyncResult sync(String src, String dst, SyncOptions options) throws IOException {
    return sync(src, dst, options, null);
  }

  /** {@link #sync(String, String, SyncOptions)}, reporting to {@code listener} (null: none). */
  public SyncResult sync(String src, String dst, SyncOptions options, ProgressListener listener)
      throws IOException {
    SyncOptions o = options == null ? new SyncOptions() : options;
    Object[] r = handle.call(h -> sync(h, src, dst, o.compare.ordinal(), o.delete, o.dryRun,
        o.maxDelete, o.include.toArray(new String[0]), o.exclude.toArray(new String[0]),
        o.filter.toArray(new String[0]), listener));
    return SyncResult.fromNative((long[]) r[0], (String[]) r[1], (String[]) r[2], (String[]) r[3]);
  }

  /**
   * Opens {@code url} to read ({@code "r"}) or to write ({@code "w"}: created, or replaced when
   * the file is closed). See {@link FerryFile}.
   */
  public FerryFile open(String url, String mode) throws IOException {
    return open(url, mode, -1);
  }

  /**
   * {@link #open(String, String)}; {@code size}: a written file's final size if known (object
   * stores lay multipart parts out by it), else -1.
   */
  public FerryFile open(String url, String mode, long size) throws IOException {
    if (!mode.equals("r") && !mode.equals("w")) {
      throw new IllegalArgumentException(
          "open " + url + ": mode must be \"r\" or \"w\", got \"" + mode + "\"");
    }
    return handle.call(h -> new FerryFile(h, url, mode.equals("w"), size));
  }

  /** An unbuffered InputStream over {@link #open(String, String) open(url, "r")}. */
  public InputStream newInputStream(String url) throws IOException {
    return Channels.newInputStream(open(url, "r"));
  }

  /**
   * An unbuffered OutputStream over {@link #open(String, String) open(url, "w")}: the file is
   * published by the stream's close, which throws if that fails.
   */
  public OutputStream newOutputStream(String url) throws IOException {
    return Channels.newOutputStream(open(url, "w"));
  }

  /** {@link #walk(String, WalkOptions)} with {@link WalkOptions#DEFAULTS}. */
  public Stream<Entry> walk(String url) throws IOException {
    return walk(url, WalkOptions.DEFAULTS);
  }

  /**
   * Every entry below {@code url} (not the root itself), once, in no particular order, paths
   * relative to it; symlinks are reported, never followed. Close the stream
   * (try-with-resources) to stop a walk early. A root that cannot be walked throws here; an
   * error after the first batch throws from the stream's terminal operation, an
   * {@link java.io.UncheckedIOException} around the mapped IOException (an unchecked mapped
   * exception as itself). Directories that could not be read go to {@code options.onError()}.
   */
  public Stream<Entry> walk(String url, WalkOptions options) throws IOException {
    return handle.call(h -> Walk.stream(h, url, options));
  }

  /**
   * Creates the directory (collection, prefix) {@code url} names; with {@code parents}, the
   * missing ones above it too, and an existing directory is not an error.
   */
  public void mkdir(String url, boolean parents) throws IOException {
    handle.run(h -> mkdir(h, url, parents));
  }

  /** Removes the file {@code url} names. */
  public void remove(String url) throws IOException {
    handle.run(h -> remove(h, url));
  }

  /** Removes the empty directory {@code url} names. */
  public void rmdir(String url) throws IOException {
    handle.run(h -> rmdir(h, url));
  }

  /**
   * Renames {@code from} to {@code to} on one filesystem (replacing a file there);
   * IllegalArgumentException when they are on different ones.
   */
  public void rename(String from, String to) throws IOException {
    handle.run(h -> rename(h, from, to));
  }

  /**
   * The iRODS metadata (AVUs) on the data object or collection {@code url} names;
   * IllegalArgumentException for a URL that is not {@code irods://}.
   */
  public List<IrodsAvu> irodsMetadata(String url) throws IOException {
    return List.of(handle.call(h -> irodsMetadata(h, url)));
  }

  /** Adds the metadata triple to what {@code url} names ({@code units} may be empty). */
  public void addIrodsMetadata(String url, String attribute, String value, String units)
      throws IOException {
    handle.run(h -> irodsModifyMetadata(h, url, true, attribute, value, units));
  }

  /** Removes the metadata triple from what {@code url} names. */
  public void removeIrodsMetadata(String url, String attribute, String value, String units)
      throws IOException {
    handle.run(h -> irodsModifyMetadata(h, url, false, attribute, value, units));
  }

  /** The access list of what {@code url} names, as the catalog spells it ("own", "read_object"...). */
  public List<IrodsAccess> irodsAccess(String url) throws IOException {
    return List.of(handle.call(h -> irodsAccess(h, url)));
  }

  /**
   * Grants {@code user} {@code level} ("read", "write", "own"; "null" revokes) on what
   * {@code url} names; {@code recursive} for a collection and everything below it.
   */
  public void setIrodsAccess(String url, String user, String level, boolean recursive)
      throws IOException {
    handle.run(h -> setIrodsAccess(h, url, user, level, recursive));
  }

  /**
   * The logical path ({@code /zone/home/...}) of the data object (or, {@code collection}, the
   * collection) whose catalog id is {@code id}, on the zone {@code url} names (any irods:// URL
   * of it): one GenQuery. {@link java.io.FileNotFoundException} when no such object exists (it
   * was removed), which is how a server handing out ids as file handles tells a stale handle.
   */
  public String irodsPathOfId(String url, long id, boolean collection) throws IOException {
    return handle.call(h -> irodsPathOfId(h, url, id, collection));
  }

  private static native String irodsPathOfId(long handle, String url, long id, boolean collection)
      throws IOException;

  private static native long newFileSystems(long runtime, int irodsConnections, int irodsParallelism,
      String irodsClientUser, boolean s3MakeBucket);

  private static native IrodsAvu[] irodsMetadata(long handle, String url) throws IOException;

  private static native void irodsModifyMetadata(long handle, String url, boolean add,
      String attribute, String value, String units) throws IOException;

  private static native IrodsAccess[] irodsAccess(long handle, String url) throws IOException;

  private static native void setIrodsAccess(long handle, String url, String user, String level,
      boolean recursive) throws IOException;

  private static native void disposeFileSystems(long handle);

  private static native Entry stat(long handle, String url) throws IOException;

  private static native void mkdir(long handle, String url, boolean parents) throws IOException;

  private static native void remove(long handle, String url) throws IOException;

  private static native void rmdir(long handle, String url) throws IOException;

  private static native void rename(long handle, String from, String to) throws IOException;

  private static native byte[] copy(long handle, String src, String dst, boolean recursive,
      ProgressListener listener) throws IOException;

  // {long[] counts, String[] copied, String[] deleted, String[] warnings} (SyncResult.fromNative).
  private static native Object[] sync(long handle, String src, String dst, int compare,
      boolean delete, boolean dryRun, long maxDelete, String[] include, String[] exclude,
      String[] filter, ProgressListener listener) throws IOException;
}
