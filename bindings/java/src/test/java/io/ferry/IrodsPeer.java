package io.ferry;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** ferry's iRODS test peer on a free port (tests/peers/irods), for one test class. */
final class IrodsPeer implements AutoCloseable {
  private final Path script;
  private final Path state;
  final int port;

  IrodsPeer() throws IOException, InterruptedException {
    Path root = Path.of(System.getProperty("ferry.root", "../.."));
    script = root.resolve("tests/peers/irods").toAbsolutePath();
    state = Files.createTempDirectory("ferry-java-irods");
    ProcessBuilder pb = new ProcessBuilder(script.toString(), "start", state.toString()).inheritIO();
    pb.environment().put("IRODS_PEER_PORT", "0");
    if (pb.start().waitFor() != 0) throw new IOException("the iRODS peer did not start");
    port = Integer.parseInt(Files.readString(state.resolve("port")).trim());
  }

  /** irods://USER@127.0.0.1:PORT/tempZone/home/rods + path. */
  String url(String user, String path) {
    return "irods://" + user + "@127.0.0.1:" + port + "/tempZone/home/rods" + path;
  }

  @Override
  public void close() throws IOException, InterruptedException {
    new ProcessBuilder(script.toString(), "stop", state.toString()).inheritIO().start().waitFor();
  }
}
