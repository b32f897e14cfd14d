// An NFSRODS-shaped virtual file system whose calls go through ferry: how
// NFSRODS (an NFSv4.1 server over Jargon, with Ehcache caches) would swap
// its caches and its Jargon I/O for ferry's.
//
//   NFSRODS today                              with ferry
//   Ehcache stat_info / list_op / perms ...    IrodsCaches (NFSRODS's five caches, its own
//     (refresh times from server.json)           server.json; invalidation across users)
//   IRODSFileSystemAO.getListInDir             IrodsCaches.list: one GenQuery per page, cached
//   IRODSRandomAccessFile.read/write           FerryFile (a SeekableByteChannel over ferry's
//                                                fd table: parallel ranged reads, writes that
//                                                publish atomically at close)
//
// Run (scripts/test-java runs it against ferry's iRODS test peer):
//   java -cp ferry.jar examples/java/NfsrodsFacade.java \
//        irods://rods@127.0.0.1:1247/tempZone /tempZone/home/rods/facade [server.json]
// Prints what it did and ends with "ok".

import io.ferry.FerryFile;
import io.ferry.FileSystems;
import io.ferry.IrodsCaches;
import io.ferry.IrodsEntry;
import io.ferry.IrodsStat;
import io.ferry.FerryRuntime;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

public final class NfsrodsFacade implements AutoCloseable {
  private final String server;  // irods://user@host:port, without the zone
  private final FerryRuntime runtime = new FerryRuntime();
  private final FileSystems files = new FileSystems(runtime);
  private final IrodsCaches caches;
  // Open files by path, as NFSRODS keeps them by inode between NFS calls:
  // readers until released, writers until COMMIT publishes them.
  private final ConcurrentHashMap<String, FerryFile> readers = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, FerryFile> writers = new ConcurrentHashMap<>();

  /** {@code zoneUrl}: irods://user@host:port/zone; {@code serverJson}: NFSRODS's config or null. */
  public NfsrodsFacade(String zoneUrl, String serverJson) throws IOException {
    server = zoneUrl.substring(0, zoneUrl.indexOf('/', "irods://".length()));
    caches = IrodsCaches.connect(zoneUrl, serverJson);
  }

  /** READDIR: the listing cache (list_op_cache), per user. */
  public List<IrodsEntry> readdir(String user, String path) throws IOException {
    return caches.list(user, path);
  }

  /** GETATTR: the stat cache (stat_info_cache), per user. */
  public IrodsStat getattr(String user, String path) throws IOException {
    return caches.stat(user, path);
  }

  /** MKDIR: a collection; every user's cached listing of its parent goes. */
  public void mkdir(String path) throws IOException {
    files.mkdir(server + path, false);
    caches.changed(path);
  }

  /** READ: {@code dst.remaining()} bytes at {@code offset}; fewer only at the end of the file. */
  public int read(String path, long offset, ByteBuffer dst) throws IOException {
    FerryFile f = readers.get(path);
    if (f == null) {
      FerryFile opened = files.open(server + path, "r");
      f = readers.putIfAbsent(path, opened);
      if (f == null) {
        f = opened;
      } else {
        opened.close();
      }
    }
    synchronized (f) {  // position + read as one step for this path
      f.position(offset);
      int total = 0;
      while (dst.hasRemaining()) {
        int n = f.read(dst);
        if (n < 0) break;
        total += n;
      }
      return total == 0 && offset >= f.size() ? -1 : total;
    }
  }

  /** WRITE: sequential, from offset 0 (what an NFS client's write-back sends for a new file). */
  public void write(String path, long offset, ByteBuffer src) throws IOException {
    FerryFile f = writers.computeIfAbsent(path, p -> {
      try {
        return files.open(server + p, "w");
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
    synchronized (f) {
      if (offset != f.position()) {
        throw new IOException(path + ": write at " + offset + ", expected " + f.position()
            + " (ferry's writers are sequential; NFSRODS's Jargon streams are too)");
      }
      while (src.hasRemaining()) f.write(src);
    }
  }

  /** COMMIT: publishes the written file whole, then drops every user's stale cache entries. */
  public void commit(String path) throws IOException {
    FerryFile f = writers.remove(path);
    if (f == null) return;
    try {
      f.close();
    } finally {
      caches.changed(path);
      FerryFile stale = readers.remove(path);
      if (stale != null) stale.close();
    }
  }

  @Override
  public void close() throws IOException {
    for (FerryFile f : writers.values()) f.close();
    for (FerryFile f : readers.values()) f.close();
    caches.close();
    files.close();
    runtime.close();
  }

  public static void main(String[] args) throws Exception {
    String zoneUrl = args[0], dir = args[1];
    String json = args.length > 2 ? Files.readString(Path.of(args[2])) : null;
    try (NfsrodsFacade nfs = new NfsrodsFacade(zoneUrl, json)) {
      nfs.mkdir(dir);
      byte[] data = new byte[3 << 20];
      new java.util.Random(1).nextBytes(data);
      for (int i = 0; i < 3; i++) {
        String path = dir + "/file" + i;
        for (int off = 0; off < data.length; off += 1 << 20) {  // 1 MiB NFS WRITEs
          nfs.write(path, off, ByteBuffer.wrap(data, off, 1 << 20));
        }
        nfs.commit(path);
      }
      long t0 = System.nanoTime();
      List<IrodsEntry> first = nfs.readdir("rods", dir);
      long t1 = System.nanoTime();
      List<IrodsEntry> second = nfs.readdir("rods", dir);
      long t2 = System.nanoTime();
      System.out.printf("readdir %s: %d entries; %.3f ms from the server, %.4f ms cached%n", dir,
          first.size(), (t1 - t0) / 1e6, (t2 - t1) / 1e6);
      IrodsStat st = nfs.getattr("rods", dir + "/file1");
      System.out.printf("getattr file1: %s, %d bytes, owner %s%n", st.type(), st.size(), st.owner());
      ByteBuffer got = ByteBuffer.allocate(4096);
      int n = nfs.read(dir + "/file2", 2_000_000, got);
      boolean same = n == 4096
          && Arrays.equals(Arrays.copyOf(got.array(), n), Arrays.copyOfRange(data, 2_000_000, 2_004_096));
      System.out.printf("read file2 at 2,000,000: %d bytes, %s%n", n, same ? "as written" : "DIFFERENT");
      if (first.size() != 3 || second.size() != 3 || st.size() != data.length || !same) {
        throw new IllegalStateException("the facade did not read back what it wrote");
      }
      System.out.println("ok");
    }
  }
}
