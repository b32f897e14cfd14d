package io.ferry;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * versitygw (tests/peers/versitygw) for one test class, on the port the pom reserved
 * ({@code ferry.s3.port}; surefire points the AWS environment the S3 adapter reads at it), with
 * bucket {@link #BUCKET} made.
 */
final class S3Peer implements AutoCloseable {
  static final String BUCKET = "ferry-java";
  private final Path script;
  private final Path state;

  S3Peer() throws IOException, InterruptedException {
    String port = System.getProperty("ferry.s3.port");
    if (port == null || port.isEmpty()) {
      throw new IllegalStateException("ferry.s3.port is not set (run the tests through Maven)");
    }
    Path root = Path.of(System.getProperty("ferry.root", "../.."));
    script = root.resolve("tests/peers/versitygw").toAbsolutePath();
    state = Files.createTempDirectory("ferry-java-s3");
    ProcessBuilder pb = new ProcessBuilder(script.toString(), "start", state.toString()).inheritIO();
    pb.environment().put("VERSITYGW_PORT", port);
    if (pb.start().waitFor() != 0) throw new IOException("versitygw did not start");
    // The posix backend serves each folder of data/ as a bucket.
    Files.createDirectories(state.resolve("data").resolve(BUCKET));
  }

  /** s3://BUCKET/key. */
  String url(String key) {
    return "s3://" + BUCKET + "/" + key;
  }

  @Override
  public void close() throws IOException, InterruptedException {
    new ProcessBuilder(script.toString(), "stop", state.toString()).inheritIO().start().waitFor();
  }
}
