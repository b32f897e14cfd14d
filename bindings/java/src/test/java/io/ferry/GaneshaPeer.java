package io.ferry;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * nfs-ganesha (tests/peers/ganesha) exporting a temporary folder as nfs://127.0.0.1/export, for
 * one test class. Its ports are fixed (2049, 20048, 111): scripts/test runs the Java suite when
 * no other ganesha runs.
 */
final class GaneshaPeer implements AutoCloseable {
  final Path export;
  private final Path script;
  private final Path state;

  GaneshaPeer() throws IOException, InterruptedException {
    Path root = Path.of(System.getProperty("ferry.root", "../.."));
    script = root.resolve("tests/peers/ganesha").toAbsolutePath();
    Path base = Files.createTempDirectory("ferry-java-nfs");
    export = Files.createDirectories(base.resolve("export"));
    state = base.resolve("state");
    ProcessBuilder pb =
        new ProcessBuilder(script.toString(), "start", export.toString(), state.toString()).inheritIO();
    if (pb.start().waitFor() != 0) throw new IOException("nfs-ganesha did not start (see above)");
  }

  /** nfs://127.0.0.1/export/{@code sub} with the fixed ports. */
  String url(String sub) {
    return "nfs://127.0.0.1/export/" + sub + "?nfsport=2049&mountport=20048";
  }

  @Override
  public void close() throws IOException, InterruptedException {
    new ProcessBuilder(script.toString(), "stop", export.toString(), state.toString())
        .inheritIO().start().waitFor();
  }
}
