package io.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.FileNotFoundException;
import java.io.InterruptedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** FileSystems.copy with a ProgressListener, on ferry's iRODS test peer and local files. */
class ProgressTest extends IrodsTestBase {
  private Path bigFile(int size) throws Exception {
    byte[] data = new byte[size];
    new Random(5).nextBytes(data);
    return Files.write(tmp.resolve("big.bin"), data);
  }

  private static final class Boom extends RuntimeException {
    Boom() {
      super("stop it");
    }
  }

  @Test
  void aListenerSeesMonotonicBytesEndingAtTheTotal() throws Exception {
    int size = 48 << 20;
    Path src = bigFile(size);
    List<long[]> reports = new ArrayList<>();
    String remote = irods.url("rods", unique("/java-"));
    TransferStats stats =
        fs.copy(src.toString(), remote, false, (done, total) -> reports.add(new long[] {done, total}));
    assertEquals(size, stats.bytes());
    assertFalse(reports.isEmpty());
    long last = -1;
    for (long[] r : reports) {
      assertTrue(r[0] >= last, "bytes went back: " + r[0] + " after " + last);
      assertTrue(r[1] == size || r[1] == -1, "total " + r[1]);
      last = r[0];
    }
    assertEquals(size, reports.get(reports.size() - 1)[0]);
    assertEquals(size, reports.get(reports.size() - 1)[1]);
  }

  @Test
  void aListenerThatThrowsFailsTheCopyWithThatException() throws Exception {
    Path src = bigFile(4 << 20);
    Path dst = tmp.resolve("never.bin");
    Boom boom = new Boom();
    Boom thrown = assertThrows(Boom.class,
        () -> fs.copy(src.toString(), dst.toString(), false, (done, total) -> { throw boom; }));
    assertSame(boom, thrown);
    assertFalse(Files.exists(dst), "a stopped copy publishes nothing");
  }

  @Test
  void aListenerThatThrowsStopsATreeCopy() throws Exception {
    Files.createDirectories(tmp.resolve("tree/sub"));
    Files.writeString(tmp.resolve("tree/a"), "a");
    Files.writeString(tmp.resolve("tree/sub/b"), "b");
    Boom boom = new Boom();
    assertSame(boom, assertThrows(Boom.class, () -> fs.copy(tmp.resolve("tree").toString(),
        tmp.resolve("out").toString(), true, (done, total) -> { throw boom; })));
  }

  @Test
  void aCopyWithoutAListenerStillMapsErrors() {
    assertThrows(FileNotFoundException.class, () -> fs.copy(tmp.resolve("nope").toString(),
        tmp.resolve("x").toString(), false, null));
  }

  @Test
  void aCopyOnAnInterruptedThreadThrowsInterruptedIOExceptionAndPublishesNothing() throws Exception {
    Path src = bigFile(4 << 20);
    String remote = irods.url("rods", unique("/java-int-"));
    Thread.currentThread().interrupt();
    try {
      assertThrows(InterruptedIOException.class, () -> fs.copy(src.toString(), remote, false));
      assertTrue(Thread.currentThread().isInterrupted(), "the interrupt flag stays set");
    } finally {
      Thread.interrupted();
    }
    assertThrows(FileNotFoundException.class, () -> fs.stat(remote));
  }

  // `blocks` blocks of the same 4 MiB of random bytes (a file larger than
  // the heap would hold as one array).
  private Path bigFileOfBlocks(int blocks) throws Exception {
    byte[] block = new byte[4 << 20];
    new Random(5).nextBytes(block);
    Path p = tmp.resolve("blocks.bin");
    try (var out = Files.newOutputStream(p)) {
      for (int i = 0; i < blocks; i++) out.write(block);
    }
    return p;
  }

  @Test
  void threadInterruptStopsACopyInFlightWithoutAListener() throws Exception {
    // 1 GiB: a copy to the test peer outlasts the first progress report
    // (where the interrupt is read) by several times; 256 MiB came to
    // finish before a 300 ms sleep had ended.
    Path src = bigFileOfBlocks(256);
    String dir = irods.url("rods", unique("/java-intdir-"));
    fs.mkdir(dir, true);
    String remote = dir + "/big.bin";
    AtomicReference<Throwable> failure = new AtomicReference<>();
    CountDownLatch started = new CountDownLatch(1);
    Thread copier = new Thread(() -> {
      try {
        started.countDown();
        fs.copy(src.toString(), remote, false);
      } catch (Throwable t) {
        failure.set(t);
      }
    });
    copier.start();
    assertTrue(started.await(30, TimeUnit.SECONDS));
    Thread.sleep(20);  // inside the copy
    // A machine that copied 1 GiB in 20 ms could not show the property.
    assumeTrue(copier.isAlive(), "the copy had already ended");
    long interruptedAt = System.nanoTime();
    copier.interrupt();
    copier.join(60_000);
    assertFalse(copier.isAlive(), "the copy ended");
    double took = (System.nanoTime() - interruptedAt) / 1e9;
    System.out.printf("copy stopped %.3f s after Thread.interrupt()%n", took);
    assertTrue(failure.get() instanceof InterruptedIOException, "threw " + failure.get());
    assertThrows(FileNotFoundException.class, () -> fs.stat(remote));
    try (Stream<Entry> left = fs.walk(dir)) {
      assertEquals(0, left.count(), "no temporary left in " + dir);
    }
  }
}
