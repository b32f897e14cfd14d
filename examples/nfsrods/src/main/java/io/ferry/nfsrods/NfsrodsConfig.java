package io.ferry.nfsrods;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * NFSRODS's {@code server.json} (its keys and defaults), plus ferry's few additions in an
 * optional {@code "ferry"} object. The cache refresh times are read by {@link
 * io.ferry.IrodsCaches} from the same text; only the listing one is needed here too.
 *
 * <pre>{@code
 * { "nfs_server": { "port": 2049, "irods_mount_point": "/tempZone/home",
 *                   "list_operation_query_results_refresh_time_in_milliseconds": 30000,
 *                   "allow_overwrite_of_existing_files": true, ... },
 *   "irods_client": { "host": "127.0.0.1", "port": 1247, "zone": "tempZone",
 *                     "proxy_admin_account": { "username": "rods", "password": "rods" } },
 *   "ferry": { "bind_address": "127.0.0.1", "state_dir": "/var/lib/ferry-nfsrods",
 *              "read_idle_ms": 10000, "write_idle_ms": 10000, "workers": 16,
 *              "irods_connections": 64, "users": { "1001": "alice" } } }
 * }</pre>
 *
 * Immutable.
 */
final class NfsrodsConfig {
  final String json;
  final String bindAddress;
  final int port;
  final String mountPoint;
  final boolean allowOverwrite;
  final long listRefreshMillis;
  final String irodsHost;
  final int irodsPort;
  final String zone;
  final String proxyUser;
  final String proxyPassword;  // may be null: IRODS_PASSWORD then
  final Path stateDir;  // may be null: aliases in memory only
  final long readIdleMillis;
  final long writeIdleMillis;
  final int workers;
  final int irodsConnections;
  /** Unix uid -> the iRODS user its calls act for; null: every caller acts as the proxy admin. */
  final java.util.Map<Integer, String> users;

  private NfsrodsConfig(String json) throws IOException {
    this.json = json;
    JsonNode root = new ObjectMapper().readTree(json);
    if (root == null || !root.isObject()) throw new IllegalArgumentException("server.json: not a JSON object");
    JsonNode nfs = root.path("nfs_server");
    JsonNode irods = root.path("irods_client");
    JsonNode ferry = root.path("ferry");
    port = intIn(nfs, "port", 2049, 0, 65535);
    zone = text(irods, "zone", "tempZone");
    mountPoint = normalize(text(nfs, "irods_mount_point", "/" + zone + "/home"));
    allowOverwrite = nfs.path("allow_overwrite_of_existing_files").asBoolean(true);
    listRefreshMillis = longIn(nfs, "list_operation_query_results_refresh_time_in_milliseconds", 30000);
    irodsHost = text(irods, "host", "127.0.0.1");
    irodsPort = intIn(irods, "port", 1247, 1, 65535);
    proxyUser = text(irods.path("proxy_admin_account"), "username", "rods");
    JsonNode pw = irods.path("proxy_admin_account").path("password");
    proxyPassword = pw.isTextual() ? pw.asText() : null;
    bindAddress = text(ferry, "bind_address", "127.0.0.1");
    String state = text(ferry, "state_dir", "");
    stateDir = state.isEmpty() ? null : Path.of(state);
    readIdleMillis = longIn(ferry, "read_idle_ms", 10000);
    writeIdleMillis = longIn(ferry, "write_idle_ms", 10000);
    workers = intIn(ferry, "workers", 16, 1, 1024);
    irodsConnections = intIn(ferry, "irods_connections", 64, 4, 4096);
    JsonNode u = ferry.path("users");
    if (u.isMissingNode() || u.isNull()) {
      users = null;
    } else {
      if (!u.isObject()) throw new IllegalArgumentException("server.json: ferry.users must map uids to iRODS users");
      java.util.Map<Integer, String> m = new java.util.HashMap<>();
      for (var e : u.properties()) {
        int uid;
        try {
          uid = Integer.parseInt(e.getKey());
        } catch (NumberFormatException x) {
          throw new IllegalArgumentException("server.json: ferry.users: \"" + e.getKey() + "\" is not a uid");
        }
        if (!e.getValue().isTextual() || e.getValue().asText().isEmpty()) {
          throw new IllegalArgumentException("server.json: ferry.users: uid " + uid + " must map to a user name");
        }
        m.put(uid, e.getValue().asText());
      }
      users = java.util.Map.copyOf(m);
    }
    if (!mountPoint.startsWith("/" + zone)) {
      throw new IllegalArgumentException(
          "server.json: irods_mount_point " + mountPoint + " is not in zone " + zone);
    }
  }

  static NfsrodsConfig parse(String json) throws IOException {
    return new NfsrodsConfig(json);
  }

  static NfsrodsConfig read(Path file) throws IOException {
    if (!Files.isRegularFile(file) || Files.size(file) > (1 << 20)) {
      throw new IllegalArgumentException(file + ": not a regular file of at most 1 MiB");
    }
    return parse(Files.readString(file));
  }

  private static String normalize(String p) {
    if (!p.startsWith("/")) throw new IllegalArgumentException("irods_mount_point " + p + " is not absolute");
    while (p.length() > 1 && p.endsWith("/")) p = p.substring(0, p.length() - 1);
    return p;
  }

  private static String text(JsonNode n, String key, String dflt) {
    JsonNode v = n.path(key);
    if (v.isMissingNode() || v.isNull()) return dflt;
    if (!v.isTextual()) throw new IllegalArgumentException("server.json: " + key + " must be a string");
    return v.asText();
  }

  private static long longIn(JsonNode n, String key, long dflt) {
    JsonNode v = n.path(key);
    if (v.isMissingNode()) return dflt;
    if (!v.canConvertToLong() || v.asLong() < 0) {
      throw new IllegalArgumentException("server.json: " + key + " must be a number >= 0");
    }
    return v.asLong();
  }

  private static int intIn(JsonNode n, String key, int dflt, int lo, int hi) {
    long v = longIn(n, key, dflt);
    if (v < lo || v > hi) {
      throw new IllegalArgumentException("server.json: " + key + " must be in " + lo + ".." + hi);
    }
    return (int) v;
  }
}
