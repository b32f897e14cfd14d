package io.ferry.nfsrods;

import io.ferry.FerryFile;
import io.ferry.FileSystems;
import io.ferry.IrodsCaches;
import io.ferry.IrodsEntry;
import io.ferry.IrodsObjectType;
import io.ferry.IrodsStat;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Pattern;

/**
 * The file system an NFS server serves, over one iRODS zone, every iRODS call made through
 * ferry's Java binding: {@link IrodsCaches} (NFSRODS's caches, invalidated for every user) for
 * stats and listings, {@link FileSystems} for the namespace calls, by-id lookups and the files
 * ({@link FerryFile}). Its calls are nfs4j's {@code VirtualFileSystem} contract (lookup, getattr,
 * list with a verifier and cookies, read, write with a stability level, commit, create, mkdir,
 * remove, move, setattr, access, parentOf), so it moves onto nfs4j where nfs4j is available.
 *
 * <p><b>Handles</b> carry the iRODS catalog id (data_id or coll_id) and whether it is a
 * collection, never a path: a handle is resolved by a path remembered for its id, checked by a
 * (cached) stat that must report the same id, else by one GenQuery on the id
 * ({@link FileSystems#irodsPathOfId}). So handles survive a restart, and a handle whose object
 * was removed is STALE, never another object. ferry publishes a written file as a new object (a
 * temporary renamed into place, so readers never see a partial one), which gets a new id: the
 * old id is recorded as an alias of the new one ({@link IdAliases}, kept in the state directory),
 * so the writer's handle stays valid.
 *
 * <p><b>Reads</b> keep one {@link FerryFile} open per data object across READs, closed after
 * {@code readIdleMillis} without use or when the object changed (another id, size or mtime).
 * <b>Writes</b> go into one ferry writer per object at any offset; COMMIT, a stable WRITE, a
 * SETATTR, a READ of the object, or {@code writeIdleMillis} without a write (NFSv3 has no
 * close) publishes it. A writer starts as a copy of the object's bytes unless it was created
 * or truncated empty, so a partial overwrite keeps the rest; GETATTR meanwhile reports the
 * writer's size.
 *
 * <p><b>Listings</b> are snapshots keyed by a verifier, a digest of the collection's names and
 * types. A new listing starts from the collection's newest snapshot while it is younger than the
 * listing refresh time and nothing changed the collection through this server, else from a new
 * one. A page after the first is served from the snapshot its verifier names while that is
 * younger than the refresh time (a consistent view: a busy collection still lists, each entry
 * once); after that, or once the snapshot was evicted, the current listing is fetched, and a
 * different digest is BAD_COOKIE. Entry i has cookie i + 3 (0-2 are reserved, as NFSRODS does
 * since its issue #77).
 *
 * <p>Thread-safe: calls come from the RPC worker pool in parallel.
 */
final class IrodsVfs implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(IrodsVfs.class.getName());
  /** ferry's writer temporaries ({@code .ferry-<name>-<16 hex>}): hidden from listings. */
  private static final Pattern FERRY_TEMPORARY = Pattern.compile("\\.ferry-.*-[0-9a-f]{16}");
  private static final int MAX_NAME_BYTES = 1024;
  private static final int MAX_PATHS = 200_000;
  private static final int MAX_SNAPSHOTS = 16;
  private static final int COPY_CHUNK = 8 << 20;
  private static final int MAX_USERS = 64;
  private static final int CONNECTIONS_PER_USER = 8;

  /** A file handle: a collection or data object by its catalog id. */
  record Handle(boolean collection, long id) {
    private static final byte MAGIC = 'F', VERSION = 1;

    byte[] bytes() {
      return ByteBuffer.allocate(11).put(MAGIC).put(VERSION).put((byte) (collection ? 'C' : 'D'))
          .putLong(id).array();
    }

    static Handle parse(byte[] b) throws NfsException {
      if (b.length != 11 || b[0] != MAGIC || b[1] != VERSION || (b[2] != 'C' && b[2] != 'D')) {
        throw new NfsException(NfsException.BADHANDLE, "not a handle of this server");
      }
      return new Handle(b[2] == 'C', ByteBuffer.wrap(b, 3, 8).getLong());
    }
  }

  /** What GETATTR reports (fattr3's fields that vary). */
  record Attr(boolean directory, long size, long fileid, long mtimeSeconds) {}

  /** A resolved handle. */
  record Node(Handle handle, String path, IrodsStat stat) {}

  /**
   * One entry of a listing snapshot. {@code encoded} memoizes the protocol layer's bytes for it
   * (a snapshot is immutable, so a warm listing is copies of them).
   */
  static final class DirEntry {
    final String name;
    final Handle handle;
    final Attr attr;
    final long cookie;
    volatile byte[] encoded;

    DirEntry(String name, Handle handle, Attr attr, long cookie) {
      this.name = name;
      this.handle = handle;
      this.attr = attr;
      this.cookie = cookie;
    }

    String name() {
      return name;
    }

    Handle handle() {
      return handle;
    }

    Attr attr() {
      return attr;
    }

    long cookie() {
      return cookie;
    }
  }

  /** A page source: the snapshot's entries after the cookie asked for. */
  record Listing(byte[] verifier, List<DirEntry> entries) {}

  record WriteResult(int count, boolean stable) {}

  private final NfsrodsConfig config;
  private final io.ferry.FerryRuntime runtime;
  // The iRODS user the calling thread's NFS call acts for (null: the proxy admin itself).
  private final ThreadLocal<String> caller = new ThreadLocal<>();
  // A FileSystems per user the server acts for (proxy logins), the least recently used closed
  // past MAX_USERS (its open files keep what they need).
  private final Map<String, FileSystems> userFiles = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, FileSystems> e) {
      if (size() <= MAX_USERS) return false;
      e.getValue().close();
      return true;
    }
  };
  private final String zoneUrl;  // irods://user@host:port
  private final FileSystems files;
  private final IrodsCaches caches;
  private final IdAliases aliases;
  private final Handle root;
  private final Map<Handle, String> paths = new LinkedHashMap<>(1024, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Handle, String> e) {
      return size() > MAX_PATHS;
    }
  };
  private final Map<String, Snapshot> snapshots = new LinkedHashMap<>(32, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Snapshot> e) {
      return size() > MAX_SNAPSHOTS;
    }
  };
  // The newest snapshot of each collection (valid while it is also in `snapshots`).
  private final Map<Long, Snapshot> newest = new LinkedHashMap<>(32, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, Snapshot> e) {
      return size() > MAX_SNAPSHOTS;
    }
  };
  // Readers by iRODS user and data id: one user's open file never serves another's READ.
  private final ConcurrentHashMap<String, OpenFile> readers = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<Long, OpenFile> writers = new ConcurrentHashMap<>();
  private final ScheduledExecutorService reaper;

  private record Snapshot(long dirId, byte[] verifier, List<DirEntry> entries, long madeNanos) {}

  /** An open reader or writer of one data object. */
  private static final class OpenFile {
    final FerryFile file;
    final String user;  // the iRODS user it was opened as
    final String path;
    final long id;
    final long size;  // a reader's, as opened
    final long mtime;
    volatile long lastUseNanos = System.nanoTime();

    OpenFile(FerryFile file, String user, String path, long id, long size, long mtime) {
      this.file = file;
      this.user = user;
      this.path = path;
      this.id = id;
      this.size = size;
      this.mtime = mtime;
    }
  }

  IrodsVfs(NfsrodsConfig config, io.ferry.FerryRuntime runtime, FileSystems files, IrodsCaches caches,
      IdAliases aliases) throws IOException {
    this.config = config;
    this.runtime = runtime;
    this.files = files;
    this.caches = caches;
    this.aliases = aliases;
    this.zoneUrl = "irods://" + config.proxyUser + "@" + config.irodsHost + ":" + config.irodsPort;
    IrodsStat st = caches.stat(config.proxyUser, config.mountPoint);
    if (st.type() != IrodsObjectType.COLLECTION) {
      throw new IllegalArgumentException(
          "irods_mount_point " + config.mountPoint + " is not a collection");
    }
    root = new Handle(true, st.id());
    remember(root, config.mountPoint);
    reaper = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "nfsrods-idle");
      t.setDaemon(true);
      return t;
    });
    reaper.scheduleWithFixedDelay(this::closeIdle, 200, 200, TimeUnit.MILLISECONDS);
  }

  Handle root() {
    return root;
  }

  /**
   * The iRODS user this thread's next calls act for (the NFS caller's mapped user); null: the
   * proxy admin.
   */
  void actAs(String user) {
    caller.set(user == null || user.equals(config.proxyUser) ? null : user);
  }

  private String user() {
    String u = caller.get();
    return u == null ? config.proxyUser : u;
  }

  /** The caller's files: the proxy admin's, or a proxy login acting for the caller's user. */
  private FileSystems files() {
    String u = caller.get();
    if (u == null) return files;
    synchronized (userFiles) {
      FileSystems f = userFiles.get(u);
      if (f == null) {
        f = new FileSystems(runtime, CONNECTIONS_PER_USER, 1, u);
        userFiles.put(u, f);
      }
      return f;
    }
  }

  private static String readerKey(String user, long id) {
    return user + "#" + id;
  }

  // ---- resolving handles and names ----

  /** The node a handle names now; STALE when its object is gone. */
  Node resolve(Handle h) throws NfsException {
    Handle current = h.collection() ? h : new Handle(false, aliases.current(h.id()));
    String path;
    synchronized (paths) {
      path = paths.get(current);
    }
    if (path != null) {
      IrodsStat st = statOrNull(path);
      if (st != null && matches(st, current)) return new Node(h, path, st);
    }
    try {
      path = files.irodsPathOfId(zoneUrl + config.mountPoint, current.id(), current.collection());
    } catch (FileNotFoundException e) {
      throw new NfsException(NfsException.STALE, "no iRODS object has id " + current.id());
    } catch (IOException | RuntimeException e) {
      throw NfsException.of(e);
    }
    if (!isUnderMountPoint(path)) {
      throw new NfsException(NfsException.STALE, path + " is outside " + config.mountPoint);
    }
    // The object was just found by id: a cached "not found" for its path is out of date.
    caches.changed(path);
    IrodsStat st = statOrNull(path);
    if (st == null || !matches(st, current)) {
      throw new NfsException(NfsException.STALE, "id " + current.id() + " moved while resolved");
    }
    remember(current, path);
    return new Node(h, path, st);
  }

  private static boolean matches(IrodsStat st, Handle h) {
    return st.id() == h.id() && (st.type() == IrodsObjectType.COLLECTION) == h.collection();
  }

  private boolean isUnderMountPoint(String path) {
    String mp = config.mountPoint;
    return path.equals(mp) || path.startsWith(mp.endsWith("/") ? mp : mp + "/");
  }

  private void remember(Handle h, String path) {
    synchronized (paths) {
      paths.put(h, path);
    }
  }

  private IrodsStat statOrNull(String path) throws NfsException {
    try {
      return caches.stat(config.proxyUser, path);
    } catch (FileNotFoundException e) {
      return null;
    } catch (IOException | RuntimeException e) {
      throw NfsException.of(e);
    }
  }

  static void checkName(String name) throws NfsException {
    if (name.isEmpty() || name.indexOf('/') >= 0 || name.indexOf('\0') >= 0) {
      throw new NfsException(NfsException.INVAL, "bad name \"" + name + "\"");
    }
    if (name.getBytes(StandardCharsets.UTF_8).length > MAX_NAME_BYTES) {
      throw new NfsException(NfsException.NAMETOOLONG, "name of more than " + MAX_NAME_BYTES + " bytes");
    }
  }

  private static String child(String dir, String name) {
    return dir.endsWith("/") ? dir + name : dir + "/" + name;
  }

  private static String parentPath(String path) {
    int slash = path.lastIndexOf('/');
    return slash <= 0 ? "/" : path.substring(0, slash);
  }

  private Node directory(Handle h) throws NfsException {
    Node n = resolve(h);
    if (!h.collection()) throw new NfsException(NfsException.NOTDIR, n.path() + " is not a collection");
    return n;
  }

  Handle lookup(Handle parent, String name) throws NfsException {
    Node dir = directory(parent);
    if (name.equals(".")) return parent;
    if (name.equals("..")) return parentOf(parent);
    checkName(name);
    String path = child(dir.path(), name);
    IrodsStat st = statOrNull(path);
    if (st == null) throw new NfsException(NfsException.NOENT, path + ": no such object");
    Handle h = new Handle(st.type() == IrodsObjectType.COLLECTION, st.id());
    remember(h, path);
    return h;
  }

  Handle parentOf(Handle h) throws NfsException {
    Node n = resolve(h);
    if (n.path().equals(config.mountPoint)) return root;
    String parent = parentPath(n.path());
    IrodsStat st = statOrNull(parent);
    if (st == null) throw new NfsException(NfsException.STALE, parent + " is gone");
    Handle p = new Handle(true, st.id());
    remember(p, parent);
    return p;
  }

  // ---- attributes ----

  Attr getattr(Handle h) throws NfsException {
    return attrOf(resolve(h));
  }

  Attr attrOf(Node n) throws NfsException {
    long size = n.stat().size();
    OpenFile w = writers.get(n.stat().id());
    if (w != null) {
      try {
        size = w.file.size();  // the bytes the file will have when published
      } catch (IOException e) {
        throw NfsException.of(e);
      }
    }
    return new Attr(n.handle().collection(), size, n.handle().id(), n.stat().modifyTime());
  }

  /** SETATTR: a size (truncate or extend, published at once: SETATTR is synchronous). */
  void setSize(Handle h, long size) throws NfsException {
    Node n = resolve(h);
    if (h.collection()) throw new NfsException(NfsException.ISDIR, n.path() + " is a collection");
    if (size < 0) throw new NfsException(NfsException.INVAL, "size " + size);
    long current = attrOf(n).size();
    if (size == current) return;
    publish(n.stat().id());
    n = resolve(h);
    OpenFile w = openWriter(n, Math.min(size, n.stat().size()));
    try {
      synchronized (w) {
        if (size > w.file.size()) {
          w.file.position(size - 1);
          w.file.write(ByteBuffer.wrap(new byte[1]));
        }
      }
    } catch (IOException e) {
      throw NfsException.of(e);
    }
    publish(n.stat().id());
  }

  /**
   * ACCESS: the bits of {@code mask} the caller's iRODS user has, from the object's access list
   * (the permissions cache): own grants all, modify read and write, read reading. The proxy
   * admin has all. Groups other than public are not expanded (iRODS still decides each call).
   */
  int access(Handle h, int mask) throws NfsException {
    Node n = resolve(h);
    String u = caller.get();
    if (u == null) return mask;
    List<io.ferry.IrodsAccess> acl;
    try {
      acl = caches.permissions(n.path(), h.collection());
    } catch (IOException | RuntimeException e) {
      throw NfsException.of(e);
    }
    int level = 0;  // 1 read, 2 modify, 3 own
    for (io.ferry.IrodsAccess a : acl) {
      if (!a.user().equals(u) && !a.user().equals("public")) continue;
      String name = a.access().replace(' ', '_');
      if (name.equals("own")) level = Math.max(level, 3);
      else if (name.startsWith("modify")) level = Math.max(level, 2);
      else if (name.startsWith("read")) level = Math.max(level, 1);
    }
    int read = 0x01 | 0x02 | 0x20;           // READ, LOOKUP, EXECUTE
    int write = 0x04 | 0x08 | 0x10;          // MODIFY, EXTEND, DELETE
    int granted = level >= 2 ? read | write : level == 1 ? read : 0;
    return mask & granted;
  }

  // ---- reads and writes ----

  /** READ: up to {@code count} bytes at {@code offset} into {@code dst}; the bytes and EOF. */
  int read(Handle h, long offset, byte[] dst, int count, boolean[] eof) throws NfsException {
    Node n = resolve(h);
    if (h.collection()) throw new NfsException(NfsException.ISDIR, n.path() + " is a collection");
    long id = n.stat().id();
    if (writers.containsKey(id)) {  // read what was written: publish it first
      publish(id);
      n = resolve(h);
      id = n.stat().id();
    }
    OpenFile r = reader(n);
    try {
      int total = 0;
      synchronized (r) {
        r.lastUseNanos = System.nanoTime();
        if (offset < r.size) {
          r.file.position(offset);
          ByteBuffer buf = ByteBuffer.wrap(dst, 0, count);
          while (buf.hasRemaining()) {
            int got = r.file.read(buf);
            if (got < 0) break;
            total += got;
          }
        }
      }
      eof[0] = offset + total >= r.size;
      return total;
    } catch (IOException e) {
      closeReader(id);  // a broken reader is reopened by the next READ
      throw NfsException.of(e);
    }
  }

  private OpenFile reader(Node n) throws NfsException {
    long id = n.stat().id();
    String key = readerKey(user(), id);
    OpenFile r = readers.get(key);
    if (r != null && (r.size != n.stat().size() || r.mtime != n.stat().modifyTime())) {
      closeReader(id);  // the object changed since it was opened
      r = null;
    }
    if (r != null) return r;
    closeLeastRecentlyUsed();
    try {
      OpenFile opened = new OpenFile(files().open(zoneUrl + n.path(), "r"), user(), n.path(), id,
          n.stat().size(), n.stat().modifyTime());
      OpenFile raced = readers.putIfAbsent(key, opened);
      if (raced != null) {
        opened.file.close();
        return raced;
      }
      return opened;
    } catch (IOException e) {
      throw NfsException.of(e);
    }
  }

  /**
   * Each open file holds an iRODS login: past half of them, the reader idle longest is closed
   * (the next READ of it reopens it) so namespace calls always find a login.
   */
  private void closeLeastRecentlyUsed() throws NfsException {
    int max = Math.max(2, config.irodsConnections / 2);
    while (readers.size() + writers.size() >= max) {
      OpenFile oldest = oldest(readers);
      if (oldest != null) {
        closeReader(readerKey(oldest.user, oldest.id));
      } else if ((oldest = oldest(writers)) != null) {
        publish(oldest.id);  // as if it went idle
      } else {
        return;
      }
    }
  }

  private static OpenFile oldest(Map<?, OpenFile> open) {
    OpenFile oldest = null;
    for (OpenFile f : open.values()) {
      if (oldest == null || f.lastUseNanos < oldest.lastUseNanos) oldest = f;
    }
    return oldest;
  }

  /** Closes every user's reader of data object {@code id}. */
  private void closeReader(long id) {
    for (Map.Entry<String, OpenFile> e : readers.entrySet()) {
      if (e.getValue().id == id) closeReader(e.getKey());
    }
  }

  private void closeReader(String key) {
    OpenFile r = readers.remove(key);
    if (r == null) return;
    synchronized (r) {
      try {
        r.file.close();
      } catch (IOException e) {
        LOG.log(Level.FINE, "closing reader of " + r.path, e);
      }
    }
  }

  /** WRITE: into the object's writer; a stable WRITE is published before it answers. */
  WriteResult write(Handle h, long offset, ByteBuffer data, boolean stable) throws NfsException {
    Node n = resolve(h);
    if (h.collection()) throw new NfsException(NfsException.ISDIR, n.path() + " is a collection");
    if (offset < 0 || offset + data.remaining() < 0) throw new NfsException(NfsException.INVAL, "offset " + offset);
    int count = data.remaining();
    int at = data.position();
    OpenFile w;
    for (int attempt = 0;; attempt++) {
      w = writers.get(n.stat().id());
      if (w != null && !w.user.equals(user())) {
        publish(w.id);  // another user's writes go first; this one's start from them
        n = resolve(h);
        w = null;
      }
      if (w == null) w = openWriter(n, n.stat().size());
      try {
        synchronized (w) {
          w.lastUseNanos = System.nanoTime();
          w.file.position(offset);
          w.file.write(data);
        }
        break;
      } catch (java.nio.channels.ClosedChannelException e) {
        // Published by the idle reaper between the lookup and the write: a new writer
        // starts from the published bytes.
        if (attempt > 0) throw NfsException.of(e);
        data.position(at);
        n = resolve(h);
      } catch (IOException e) {
        throw NfsException.of(e);
      }
    }
    if (stable) publish(w.id);
    return new WriteResult(count, stable);
  }

  /**
   * The object's writer, opened if there is none, starting with the first {@code keep} bytes of
   * the object as it is (so the bytes a client does not rewrite stay).
   */
  private OpenFile openWriter(Node n, long keep) throws NfsException {
    long id = n.stat().id();
    synchronized (writers) {
      OpenFile w = writers.get(id);
      if (w != null) return w;
      closeReader(id);
      closeLeastRecentlyUsed();
      FerryFile f = null;
      try {
        f = files().open(zoneUrl + n.path(), "w");
        if (keep > 0) {
          try (FerryFile old = files().open(zoneUrl + n.path(), "r")) {
            ByteBuffer buf = ByteBuffer.allocateDirect((int) Math.min(COPY_CHUNK, keep));
            long left = keep;
            while (left > 0) {
              buf.clear().limit((int) Math.min(buf.capacity(), left));
              int got = old.read(buf);
              if (got < 0) break;
              buf.flip();
              f.write(buf);
              left -= got;
            }
          }
        }
        w = new OpenFile(f, user(), n.path(), id, -1, -1);
        writers.put(id, w);
        return w;
      } catch (IOException e) {
        if (f != null) discard(f);
        throw NfsException.of(e);
      }
    }
  }

  /** COMMIT: publishes the object's writer, if any. */
  void commit(Handle h) throws NfsException {
    Node n = resolve(h);
    publish(n.stat().id());
  }

  /**
   * Publishes the writer of data object {@code id} (ferry renames its temporary into place: a
   * new object with a new id, recorded as the old id's alias) and drops every user's cached
   * state for it.
   */
  private void publish(long id) throws NfsException {
    OpenFile w;
    synchronized (writers) {
      w = writers.remove(id);
    }
    if (w == null) return;
    try {
      synchronized (w) {
        w.file.close();
      }
    } catch (IOException e) {
      throw NfsException.of(e);
    } finally {
      caches.changed(w.path);
      closeReader(id);
    }
    // Its entry in listings has a new id and size: the same names, so the same verifier.
    IrodsStat parent = statOrNull(parentPath(w.path));
    if (parent != null) dropSnapshots(parent.id());
    IrodsStat st = statOrNull(w.path);
    if (st != null && st.id() != id) {
      aliases.put(id, st.id());
      remember(new Handle(false, st.id()), w.path);
    }
  }

  private static void discard(FerryFile f) {
    // FerryFile publishes on close; a writer that failed to start is dropped unpublished by its
    // Cleaner. Nothing to do but let it go.
  }

  // ---- namespace ----

  /** CREATE: an empty data object, published at once so that other clients see it. */
  Handle create(Handle parent, String name, boolean exclusive, boolean truncate) throws NfsException {
    Node dir = directory(parent);
    checkName(name);
    String path = child(dir.path(), name);
    IrodsStat st = statOrNull(path);
    if (st != null) {
      if (exclusive) throw new NfsException(NfsException.EXIST, path + " exists");
      if (st.type() == IrodsObjectType.COLLECTION) throw new NfsException(NfsException.ISDIR, path + " is a collection");
      Handle h = new Handle(false, st.id());
      remember(h, path);
      if (truncate) setSize(h, 0);
      return h;
    }
    try {
      files().open(zoneUrl + path, "w").close();
    } catch (IOException e) {
      throw NfsException.of(e);
    }
    changed(dir, path);
    return lookup(parent, name);
  }

  Handle mkdir(Handle parent, String name) throws NfsException {
    Node dir = directory(parent);
    checkName(name);
    String path = child(dir.path(), name);
    if (statOrNull(path) != null) throw new NfsException(NfsException.EXIST, path + " exists");
    try {
      files().mkdir(zoneUrl + path, false);
    } catch (IOException e) {
      throw NfsException.of(e);
    } finally {
      changed(dir, path);
    }
    return lookup(parent, name);
  }

  /** REMOVE ({@code directory} false) or RMDIR. */
  void remove(Handle parent, String name, boolean directory) throws NfsException {
    Node dir = directory(parent);
    checkName(name);
    String path = child(dir.path(), name);
    IrodsStat st = statOrNull(path);
    if (st == null) throw new NfsException(NfsException.NOENT, path + ": no such object");
    boolean isCollection = st.type() == IrodsObjectType.COLLECTION;
    if (directory && !isCollection) throw new NfsException(NfsException.NOTDIR, path + " is a data object");
    if (!directory && isCollection) throw new NfsException(NfsException.ISDIR, path + " is a collection");
    try {
      if (isCollection) {
        files().rmdir(zoneUrl + path);
      } else {
        publish(st.id());  // so no writer publishes it again after the remove
        files().remove(zoneUrl + path);
        closeReader(st.id());
      }
    } catch (IOException e) {
      throw NfsException.of(e);
    } finally {
      changed(dir, path);
    }
  }

  /** RENAME; over an existing target only with allow_overwrite_of_existing_files. */
  void rename(Handle fromDir, String fromName, Handle toDir, String toName) throws NfsException {
    Node from = directory(fromDir);
    Node to = directory(toDir);
    checkName(fromName);
    checkName(toName);
    String src = child(from.path(), fromName);
    String dst = child(to.path(), toName);
    IrodsStat s = statOrNull(src);
    if (s == null) throw new NfsException(NfsException.NOENT, src + ": no such object");
    boolean srcColl = s.type() == IrodsObjectType.COLLECTION;
    if (srcColl && (dst + "/").startsWith(src + "/")) {
      throw new NfsException(NfsException.INVAL, "cannot move " + src + " into itself");
    }
    IrodsStat d = statOrNull(dst);
    try {
      if (d != null) {
        if (d.id() == s.id()) return;
        if (!config.allowOverwrite) {
          throw new NfsException(NfsException.EXIST,
              dst + " exists (allow_overwrite_of_existing_files is false)");
        }
        boolean dstColl = d.type() == IrodsObjectType.COLLECTION;
        if (srcColl && !dstColl) throw new NfsException(NfsException.NOTDIR, dst + " is a data object");
        if (!srcColl && dstColl) throw new NfsException(NfsException.ISDIR, dst + " is a collection");
        if (dstColl) {
          files().rmdir(zoneUrl + dst);  // NOTEMPTY unless empty, as rename(2) says
        } else {
          publish(d.id());
          files().remove(zoneUrl + dst);
          closeReader(d.id());
        }
        caches.changed(dst);
      }
      if (!srcColl) publish(s.id());
      files().rename(zoneUrl + src, zoneUrl + dst);
    } catch (IOException e) {
      throw NfsException.of(e);
    } finally {
      caches.renamed(src, dst);
      changed(from, src);
      changed(to, dst);
    }
    remember(new Handle(srcColl, s.id()), dst);
  }

  /** After a change of {@code path} in {@code dir}: every user's caches, and the dir's snapshots. */
  private void changed(Node dir, String path) {
    caches.changed(path);
    caches.changed(dir.path());
    dropSnapshots(dir.stat().id());
  }

  /**
   * After a change through this server: a new listing of the collection starts from a new
   * snapshot. Listings already under way go on from theirs (a consistent view as of their
   * start: no entry twice, none skipped) while it is younger than the listing refresh time.
   */
  private void dropSnapshots(long dirId) {
    synchronized (snapshots) {
      newest.remove(dirId);
    }
  }

  // ---- listings ----

  /** READDIR / READDIRPLUS: the entries after {@code cookie} of the snapshot {@code verifier} names. */
  Listing list(Handle h, byte[] verifier, long cookie) throws NfsException {
    Node dir = directory(h);
    long dirId = dir.stat().id();
    boolean fresh = cookie == 0 || Arrays.equals(verifier, new byte[8]);
    long maxAge = TimeUnit.MILLISECONDS.toNanos(config.listRefreshMillis);
    Snapshot snap = null;
    synchronized (snapshots) {
      if (fresh) {
        // A new listing starts from the newest snapshot while it is younger than the listing
        // refresh time (the listing cache would answer the same): no copy of the entries.
        snap = newest.get(dirId);
        if (snap != null && snapshots.get(key(dirId, snap.verifier())) != snap) snap = null;
      } else {
        snap = snapshots.get(key(dirId, verifier));
      }
    }
    if (snap != null && System.nanoTime() - snap.madeNanos() > maxAge) snap = null;
    if (snap == null) {
      snap = snapshot(dir);
      if (!fresh && !Arrays.equals(snap.verifier(), verifier)) {
        throw new NfsException(NfsException.BAD_COOKIE,
            dir.path() + " changed since the listing began (verifier " + HexFormat.of().formatHex(verifier) + ")");
      }
    }
    List<DirEntry> all = snap.entries();
    if (cookie != 0 && (cookie < 3 || cookie - 2 > all.size())) {
      throw new NfsException(NfsException.BAD_COOKIE, "cookie " + cookie + " of " + all.size() + " entries");
    }
    int from = cookie == 0 ? 0 : (int) (cookie - 2);
    return new Listing(snap.verifier(), all.subList(from, all.size()));
  }

  private Snapshot snapshot(Node dir) throws NfsException {
    List<IrodsEntry> listed;
    try {
      listed = caches.list(config.proxyUser, dir.path());
    } catch (IOException | RuntimeException e) {
      throw NfsException.of(e);
    }
    MessageDigest digest;
    try {
      digest = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    List<DirEntry> entries = new ArrayList<>(listed.size());
    for (IrodsEntry e : listed) {
      if (FERRY_TEMPORARY.matcher(e.name()).matches()) continue;
      boolean coll = e.type() == IrodsObjectType.COLLECTION;
      Handle eh = new Handle(coll, e.id());
      long size = e.size();
      OpenFile w = coll ? null : writers.get(e.id());
      if (w != null) {
        try {
          size = w.file.size();
        } catch (IOException ignored) {
          // the listed size, then
        }
      }
      entries.add(new DirEntry(e.name(), eh, new Attr(coll, size, e.id(), e.modifyTime()),
          entries.size() + 3));
      digest.update(e.name().getBytes(StandardCharsets.UTF_8));
      digest.update(coll ? (byte) 1 : (byte) 2);
    }
    byte[] verifier = Arrays.copyOf(digest.digest(), 8);
    if (Arrays.equals(verifier, new byte[8])) verifier[7] = 1;  // zero means "no verifier"
    Snapshot s = new Snapshot(dir.stat().id(), verifier, List.copyOf(entries), System.nanoTime());
    synchronized (snapshots) {
      snapshots.put(key(s.dirId(), verifier), s);
      newest.put(s.dirId(), s);
    }
    synchronized (paths) {
      for (DirEntry e : entries) paths.put(e.handle(), child(dir.path(), e.name()));
    }
    return s;
  }

  private static String key(long dirId, byte[] verifier) {
    return dirId + ":" + HexFormat.of().formatHex(verifier);
  }

  // ---- idle files ----

  private void closeIdle() {
    long now = System.nanoTime();
    long readIdle = TimeUnit.MILLISECONDS.toNanos(config.readIdleMillis);
    long writeIdle = TimeUnit.MILLISECONDS.toNanos(config.writeIdleMillis);
    for (Map.Entry<String, OpenFile> e : readers.entrySet()) {
      if (now - e.getValue().lastUseNanos > readIdle) closeReader(e.getKey());
    }
    for (OpenFile w : writers.values()) {
      if (now - w.lastUseNanos > writeIdle) {
        try {
          publish(w.id);
        } catch (NfsException e) {
          LOG.log(Level.WARNING, "publishing " + w.path + " after it went idle failed: " + e.getMessage());
        }
      }
    }
  }

  int openReaders() {
    return readers.size();
  }

  int openWriters() {
    return writers.size();
  }

  /** Publishes every writer and closes every reader. */
  @Override
  public void close() {
    reaper.shutdownNow();
    for (Long id : List.copyOf(writers.keySet())) {
      try {
        publish(id);
      } catch (NfsException e) {
        LOG.log(Level.WARNING, "publishing at shutdown failed: " + e.getMessage());
      }
    }
    for (String key : List.copyOf(readers.keySet())) closeReader(key);
    synchronized (userFiles) {
      for (FileSystems f : userFiles.values()) f.close();
      userFiles.clear();
    }
  }
}
