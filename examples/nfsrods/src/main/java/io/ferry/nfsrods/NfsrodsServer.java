package io.ferry.nfsrods;

import io.ferry.FileSystems;
import io.ferry.IrodsCaches;
import io.ferry.FerryRuntime;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * ferry-nfsrods: serves an iRODS zone's collection (NFSRODS's {@code irods_mount_point}) over
 * NFSv3 and MOUNT3 on one TCP port (as nfs4j serves both), every iRODS call made through
 * ferry's Java binding.
 *
 * <pre>
 *   IRODS_PASSWORD=... java -jar ferry-nfsrods.jar server.json
 * </pre>
 *
 * The proxy admin's password comes from server.json's {@code proxy_admin_account} or, without
 * it, from {@code IRODS_PASSWORD} (ferry's iRODS adapter reads the environment:
 * tests/peers/nfsrods passes it there). With {@code ferry.state_dir}, the port is written to
 * {@code STATE_DIR/port} once the server accepts calls, and the data_id aliases are kept there.
 * SIGTERM publishes open writers and stops.
 */
public final class NfsrodsServer implements AutoCloseable {
  private final FerryRuntime runtime;
  private final FileSystems files;
  private final IrodsCaches caches;
  private final IdAliases aliases;
  private final IrodsVfs vfs;
  private final ExecutorService workers;
  private final RpcServer rpc;
  final Nfs3Programs programs;

  NfsrodsServer(NfsrodsConfig config) throws IOException {
    runtime = new FerryRuntime();
    try {
      // One stream per open file (NFS READs of a file are served in order through it), and
      // logins enough for the open files (at most half of them) and the namespace calls.
      files = new FileSystems(runtime, config.irodsConnections, 1);
      String zoneUrl = "irods://" + config.proxyUser + "@" + config.irodsHost + ":" + config.irodsPort
          + "/" + config.zone;
      caches = IrodsCaches.connect(zoneUrl, config.json);
      if (config.stateDir != null) Files.createDirectories(config.stateDir);
      aliases = new IdAliases(config.stateDir == null ? null : config.stateDir.resolve("data-id-aliases"),
          1_000_000);
      vfs = new IrodsVfs(config, runtime, files, caches, aliases);
      AtomicInteger n = new AtomicInteger();
      workers = new ThreadPoolExecutor(config.workers, config.workers, 60, TimeUnit.SECONDS,
          new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "nfsrods-worker-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
          });
      programs = new Nfs3Programs(vfs, config.mountPoint, config.users);
      rpc = new RpcServer("nfsrods", InetAddress.getByName(config.bindAddress), config.port,
          Map.of(Nfs3Programs.NFS, programs.nfs(), Nfs3Programs.MOUNT, programs.mount()), workers);
    } catch (IOException | RuntimeException e) {
      runtime.close();
      throw e;
    }
  }

  int port() {
    return rpc.port();
  }

  @Override
  public void close() throws IOException {
    rpc.close();
    workers.shutdown();
    try {
      workers.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    vfs.close();
    aliases.close();
    caches.close();
    files.close();
    runtime.close();
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: ferry-nfsrods SERVER_JSON   (NFSRODS's server.json; see README.md)");
      System.exit(2);
    }
    NfsrodsConfig config;
    try {
      config = NfsrodsConfig.read(Path.of(args[0]));
    } catch (IOException | IllegalArgumentException e) {
      System.err.println("ferry-nfsrods: " + args[0] + ": " + e.getMessage());
      System.exit(2);
      return;
    }
    if (config.proxyPassword != null && System.getenv("IRODS_PASSWORD") == null) {
      System.err.println("ferry-nfsrods: set IRODS_PASSWORD to proxy_admin_account's password "
          + "(ferry's iRODS adapter reads it from the environment)");
      System.exit(2);
    }
    NfsrodsServer server;
    try {
      server = new NfsrodsServer(config);
    } catch (IOException | RuntimeException e) {
      System.err.println("ferry-nfsrods: cannot start: " + e);
      System.exit(1);
      return;
    }
    java.lang.Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        server.close();
        long cpu = ((com.sun.management.OperatingSystemMXBean)
            java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
        System.err.printf("ferry-nfsrods: stopped; server cpu %.3f s; NFS calls %s%n", cpu / 1e9,
            server.callCounts());
      } catch (IOException e) {
        System.err.println("ferry-nfsrods: stop: " + e.getMessage());
      }
    }));
    if (config.stateDir != null) {
      Path tmp = config.stateDir.resolve("port.tmp");
      Files.writeString(tmp, server.port() + "\n", StandardCharsets.US_ASCII);
      Files.move(tmp, config.stateDir.resolve("port"), StandardCopyOption.ATOMIC_MOVE,
          StandardCopyOption.REPLACE_EXISTING);
    }
    System.err.println("ferry-nfsrods: serving " + config.mountPoint + " of irods://"
        + config.irodsHost + ":" + config.irodsPort + " on " + config.bindAddress + ":" + server.port()
        + " (NFSv3 and MOUNT3)");
    Thread.currentThread().join();
  }

  /** NFS calls served so far, by procedure name (those called at least once). */
  String callCounts() {
    StringBuilder b = new StringBuilder("{");
    for (int i = 0; i < Nfs3Programs.PROC_NAMES.length; i++) {
      long c = programs.calls.get(i);
      if (c == 0) continue;
      if (b.length() > 1) b.append(", ");
      b.append('"').append(Nfs3Programs.PROC_NAMES[i]).append("\": ").append(c);
    }
    return b.append('}').toString();
  }
}
