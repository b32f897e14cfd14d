package io.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every kind of io.ferry object, closed twice and then used: the second close does nothing and a
 * use is a clear exception (IllegalStateException; ClosedChannelException for a file, as
 * channels do), never a crash.
 */
class LifecycleTest {
  static IrodsPeer peer;
  @TempDir Path tmp;

  @BeforeAll
  static void start() throws Exception {
    peer = new IrodsPeer();
  }

  @AfterAll
  static void stop() throws Exception {
    peer.close();
  }

  @Test
  void everyObjectClosesTwiceAndRefusesUseAfterwards() throws Exception {
    Files.writeString(tmp.resolve("f"), "ferry");
    Files.createDirectories(tmp.resolve("d/e"));
    FerryRuntime rt = new FerryRuntime();
    FileSystems fs = new FileSystems(rt);
    FerryFile file = fs.open(tmp.resolve("f").toString(), "r");
    Stream<Entry> walk = fs.walk(tmp.toString());
    Iterator<Entry> entries = walk.iterator();
    TtlCache<String> cache = TtlCache.<String>builder().runtime(rt).loader(k -> k).build();
    IrodsCaches caches = IrodsCaches.connect("irods://rods@127.0.0.1:" + peer.port + "/tempZone", null);

    // In the worst order: the FerryRuntime first, while everything made on it is open.
    for (int round = 0; round < 2; round++) {
      rt.close();
      fs.close();
      file.close();
      walk.close();
      cache.close();
      caches.close();
    }

    assertTrue(rt.isClosed() && fs.isClosed() && !file.isOpen() && cache.isClosed()
        && caches.isClosed());
    assertThrows(IllegalStateException.class, () -> new FileSystems(rt));
    assertThrows(IllegalStateException.class, () -> fs.stat(tmp.toString()));
    assertThrows(IllegalStateException.class, () -> fs.walk(tmp.toString()));
    assertThrows(ClosedChannelException.class, () -> file.read(ByteBuffer.allocate(8)));
    assertThrows(ClosedChannelException.class, file::position);
    assertEquals(false, entries.hasNext());  // a closed walk ends; it does not throw
    assertThrows(IllegalStateException.class, () -> cache.get("/a"));
    assertThrows(IllegalStateException.class, () -> caches.userType("rods"));
    assertThrows(IllegalStateException.class, () -> TtlCache.<String>builder().runtime(rt).build());
  }
}
