package io.ferry;

import java.io.IOException;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * NFSRODS 2.0's five query caches (ferry's C++ {@code IrodsCacheSet}) over one iRODS login,
 * configured from NFSRODS's own {@code server.json}: the stat, object-type, permissions,
 * user-type and listing caches, each with its refresh time, and the invalidation NFSRODS lacks
 * (a change drops every user's entries for the path, its listing and what is below it).
 *
 * <pre>{@code
 * String json = Files.readString(Path.of("/etc/nfsrods/server.json"));
 * try (IrodsCaches caches = IrodsCaches.connect("irods://rods@irods.example.org:1247/tempZone", json)) {
 *   List<IrodsEntry> entries = caches.list("alice", "/tempZone/home/alice");   // 0.0001 ms when cached
 *   IrodsStat st = caches.stat("alice", "/tempZone/home/alice/data.bin");
 *   caches.changed("/tempZone/home/alice/data.bin");                         // after a write
 * }
 * }</pre>
 *
 * <p>JSON keys (at any depth; absent keys keep NFSRODS's defaults):
 * {@code file_information_refresh_time_in_milliseconds} (stat, 1 s),
 * {@code object_type_refresh_time_in_milliseconds} (300 s),
 * {@code user_permissions_refresh_time_in_milliseconds} (300 s),
 * {@code user_type_refresh_time_in_milliseconds} (300 s),
 * {@code list_operation_query_results_refresh_time_in_milliseconds} (30 s).
 *
 * <p>Paths are iRODS logical paths ({@code /zone/home/user/...}); {@code user} keys the per-user
 * caches (the login acts for one account; a front end serving many users passes the one it acts
 * for). The credentials come as for every {@code irods://} URL (irods_environment.json, {@code
 * IRODS_PASSWORD}). Errors: {@link java.io.FileNotFoundException} for a missing path (cached
 * for the stat refresh time), {@link FerryAuthenticationException} for a refused login, {@link
 * IOException} for a server that cannot be reached.
 *
 * <p>Thread-safe. AutoCloseable: close waits for calls in progress, then logs out.
 */
public final class IrodsCaches extends NativeObject {
  private IrodsCaches(long h) {
    super(new NativeHandle("IrodsCaches", h, IrodsCaches::dispose));
  }

  /** Logs in to the server {@code url} names, with NFSRODS's JSON (null: its defaults). */
  public static IrodsCaches connect(String url, String nfsrodsJson) throws IOException {
    return connect(url, nfsrodsJson, 0);
  }

  /** As {@link #connect(String, String)}, with at most {@code connections} logins (0: 8). */
  public static IrodsCaches connect(String url, String nfsrodsJson, int connections)
      throws IOException {
    Objects.requireNonNull(url, "url");
    if (connections < 0) throw new IllegalArgumentException("connections must be >= 0");
    NativeLibrary.load();
    return new IrodsCaches(connect0(url, nfsrodsJson, connections));
  }

  public IrodsStat stat(String user, String path) throws IOException {
    return handle.call(h -> stat(h, user, path));
  }

  public IrodsObjectType objectType(String path) throws IOException {
    return handle.call(h -> IrodsObjectType.of(objectType(h, path)));
  }

  /** The collection's entries as {@code user} sees them (shared, unmodifiable). */
  public List<IrodsEntry> list(String user, String collection) throws IOException {
    return handle.call(h -> Collections.unmodifiableList(Arrays.asList(list(h, user, collection))));
  }

  public List<IrodsAccess> permissions(String path, boolean isCollection) throws IOException {
    return handle.call(h -> List.of(permissions(h, path, isCollection)));
  }

  /** "rodsadmin", "rodsuser", "groupadmin" or "rodsgroup". */
  public String userType(String user) throws IOException {
    return handle.call(h -> userType(h, user));
  }

  /** After a write, create or remove of {@code path} (by anyone). */
  public void changed(String path) {
    handle.run(h -> changed(h, path));
  }

  public void renamed(String from, String to) {
    handle.run(h -> renamed(h, from, to));
  }

  public void aclChanged(String path, boolean recursive) {
    handle.run(h -> aclChanged(h, path, recursive));
  }

  /** The listing cache's counters. */
  public TtlCacheStats listStats() {
    return handle.call(h -> TtlCacheStats.fromRecord(listStats(h)));
  }

  private static native long connect0(String url, String nfsrodsJson, int connections)
      throws IOException;

  private static native void dispose(long handle);

  private static native IrodsStat stat(long handle, String user, String path) throws IOException;

  private static native int objectType(long handle, String path) throws IOException;

  private static native IrodsEntry[] list(long handle, String user, String collection)
      throws IOException;

  private static native IrodsAccess[] permissions(long handle, String path, boolean isCollection)
      throws IOException;

  private static native String userType(long handle, String user) throws IOException;

  private static native void changed(long handle, String path);

  private static native void renamed(long handle, String from, String to);

  private static native void aclChanged(long handle, String path, boolean recursive);

  private static native byte[] listStats(long handle);
}
