package io.ferry;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * What the test classes that talk to peers share: one FerryRuntime and one FileSystems for the
 * class, and the peers a class starts ({@link #closeAfterAll}), closed after the FileSystems and
 * the FerryRuntime, last started first. JUnit runs this class's {@code @BeforeAll} before a
 * subclass's and its {@code @AfterAll} after a subclass's.
 */
abstract class FerryTestBase {
  static FerryRuntime runtime;
  static FileSystems fs;
  private static final Deque<AutoCloseable> peers = new ArrayDeque<>();

  @BeforeAll
  static void openRuntime() throws Exception {
    runtime = new FerryRuntime();
    fs = new FileSystems(runtime);
  }

  @AfterAll
  static void closeRuntimeThenPeers() throws Exception {
    fs.close();
    runtime.close();
    while (!peers.isEmpty()) peers.pop().close();
  }

  /** Closes {@code peer} after the class's tests, after the FileSystems and the FerryRuntime. */
  static <T extends AutoCloseable> T closeAfterAll(T peer) {
    peers.push(peer);
    return peer;
  }

  /** {@code prefix} and 8 random hex digits: a name no other test run uses. */
  static String unique(String prefix) {
    return prefix + UUID.randomUUID().toString().substring(0, 8);
  }
}
