package io.ferry;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileNotFoundException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** FileSystems over nfs:// against nfs-ganesha: walks, files, the namespace calls. */
class NfsTest extends FerryTestBase {
  static GaneshaPeer peer;

  @BeforeAll
  static void start() throws Exception {
    peer = closeAfterAll(new GaneshaPeer());
  }

  @Test
  void aWalkOfAnExportedTreeSeesEveryEntryOnce() throws Exception {
    String name = unique("j-");
    for (int d = 0; d < 10; d++) {
      Path dir = Files.createDirectories(peer.export.resolve(name).resolve("d" + d));
      for (int f = 0; f < 50; f++) Files.createFile(dir.resolve("f" + f));
    }
    try (Stream<Entry> entries = fs.walk(peer.url(name), WalkOptions.DEFAULTS.withBatchEntries(64))) {
      assertEquals(510, entries.map(Entry::path).distinct().count());
    }
  }

  @Test
  void aFileWrittenOverNfsReadsBackByteForByteFromAnyPosition() throws Exception {
    byte[] data = new byte[5 << 20];
    new Random(3).nextBytes(data);
    String name = unique("j-") + ".bin";
    String url = peer.url(name);
    try (FerryFile out = fs.open(url, "w")) {
      out.write(ByteBuffer.wrap(data));
    }
    assertArrayEquals(data, Files.readAllBytes(peer.export.resolve(name)));
    try (FerryFile in = fs.open(url, "r")) {
      assertEquals(data.length, in.size());
      ByteBuffer got = ByteBuffer.allocateDirect(1000);
      in.position(4_000_000);
      assertEquals(1000, in.read(got));
      byte[] bytes = new byte[1000];
      got.flip().get(bytes);
      assertArrayEquals(java.util.Arrays.copyOfRange(data, 4_000_000, 4_001_000), bytes);
    }
  }

  @Test
  void mkdirRenameAndRemoveChangeTheExport() throws Exception {
    String d = unique("j-");
    fs.mkdir(peer.url(d + "/a/b"), true);
    Files.writeString(peer.export.resolve(d + "/a/b/f"), "nfs");
    fs.rename(peer.url(d + "/a/b/f"), peer.url(d + "/a/g"));
    assertEquals("nfs", Files.readString(peer.export.resolve(d + "/a/g")));
    fs.remove(peer.url(d + "/a/g"));
    fs.rmdir(peer.url(d + "/a/b"));
    assertTrue(fs.stat(peer.url(d + "/a")).isDirectory());
    assertTrue(Files.notExists(peer.export.resolve(d + "/a/b")));
  }

  @Test
  void aMissingPathIsFileNotFoundExceptionNamingIt() {
    FileNotFoundException e =
        assertThrows(FileNotFoundException.class, () -> fs.stat(peer.url("no-such-thing")));
    assertTrue(e.getMessage().contains("no-such-thing"), e.getMessage());
  }
}
