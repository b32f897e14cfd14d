package io.ferry;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NonReadableChannelException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** io.ferry.FerryFile (FileSystems.open) on local files, ferry's iRODS test peer and versitygw. */
class FerryFileTest extends IrodsTestBase {
  static S3Peer s3;

  @BeforeAll
  static void startS3() throws Exception {
    s3 = closeAfterAll(new S3Peer());
  }

  private static byte[] random(int size, long seed) {
    byte[] data = new byte[size];
    new Random(seed).nextBytes(data);
    return data;
  }

  /** Writes `data` through a channel in uneven pieces, heap and direct. */
  private static void writeThroughChannel(String url, byte[] data) throws Exception {
    try (FerryFile f = fs.open(url, "w")) {
      int half = data.length / 2;
      assertEquals(half, f.write(ByteBuffer.wrap(data, 0, half)));
      ByteBuffer direct = ByteBuffer.allocateDirect(data.length - half);
      direct.put(data, half, data.length - half).flip();
      assertEquals(data.length - half, f.write(direct));
      assertEquals(data.length, f.size());
    }
  }

  private static byte[] readAll(FerryFile f) throws Exception {
    ByteBuffer buf = ByteBuffer.allocate((int) f.size());
    while (buf.hasRemaining() && f.read(buf) > 0) {}
    return buf.array();
  }

  @Test
  void mkdirOfABucketUrlCreatesTheBucketWithS3MakeBucket() throws Exception {
    String bucket = unique("made-");
    try (FileSystems maker = new FileSystems(runtime, new FileSystems.Options().s3MakeBucket(true))) {
      maker.mkdir("s3://" + bucket + "/", false);
      try (OutputStream out = maker.newOutputStream("s3://" + bucket + "/k")) {
        out.write(new byte[] {1, 2, 3});
      }
      assertEquals(3, maker.stat("s3://" + bucket + "/k").size());
    }
  }

  @Test
  void readsALocalFileByteExactWithSeekAndSize() throws Exception {
    byte[] data = random(3 << 20, 1);
    Path p = tmp.resolve("f.bin");
    Files.write(p, data);
    try (FerryFile f = fs.open(p.toString(), "r")) {
      assertEquals(data.length, f.size());
      ByteBuffer direct = ByteBuffer.allocateDirect(1000);
      assertEquals(1000, f.position(12345).read(direct));
      assertEquals(13345, f.position());
      assertArrayEquals(Arrays.copyOfRange(data, 12345, 13345), bytes(direct.flip()));
      ByteBuffer heap = ByteBuffer.allocate(10);
      assertEquals(7, f.position(data.length - 7).read(heap));  // short at the end
      assertArrayEquals(Arrays.copyOfRange(data, data.length - 7, data.length),
          Arrays.copyOf(heap.array(), 7));
      assertEquals(-1, f.read(heap.clear()));
      assertEquals(-1, f.position(data.length + 10).read(heap.clear()));  // past the end
      assertArrayEquals(data, readAll(f.position(0)));
    }
  }

  private static byte[] bytes(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.get(out);
    return out;
  }

  @Test
  void writesThenReadsBackOverIrods() throws Exception {
    byte[] data = random(5 << 20, 2);
    String url = irods.url("rods", "/" + unique("java-") + ".bin");
    writeThroughChannel(url, data);
    assertEquals(data.length, fs.stat(url).size());
    try (FerryFile f = fs.open(url, "r")) {
      assertArrayEquals(data, readAll(f));
    }
  }

  @Test
  void writesThenReadsBackOverS3() throws Exception {
    byte[] data = random(11 << 20, 3);  // more than one 8 MiB part
    String url = s3.url(unique("java-") + "/obj.bin");
    writeThroughChannel(url, data);
    try (FerryFile f = fs.open(url, "r")) {
      assertArrayEquals(data, readAll(f));
      ByteBuffer tail = ByteBuffer.allocateDirect(100);
      f.position(data.length - 100).read(tail);
      assertArrayEquals(Arrays.copyOfRange(data, data.length - 100, data.length), bytes(tail.flip()));
    }
  }

  @Test
  void streamsCopyBytesThroughS3() throws Exception {
    byte[] data = random(100_000, 4);
    String url = s3.url(unique("java-") + ".bin");
    try (OutputStream out = fs.newOutputStream(url)) {
      out.write(data, 0, 1);
      out.write(data, 1, data.length - 1);
    }
    try (InputStream in = fs.newInputStream(url)) {
      assertArrayEquals(data, in.readAllBytes());
    }
  }

  @Test
  void aWrittenFileAppearsOnlyWhenClosed() throws Exception {
    Path p = tmp.resolve("late.txt");
    FerryFile f = fs.open(p.toString(), "w");
    f.write(ByteBuffer.wrap("hello".getBytes()));
    assertFalse(Files.exists(p));
    f.close();
    assertEquals("hello", Files.readString(p));
  }

  @Test
  void closingTwiceDoesNothing() throws Exception {
    Path p = tmp.resolve("twice.txt");
    FerryFile f = fs.open(p.toString(), "w");
    f.write(ByteBuffer.wrap("x".getBytes()));
    f.close();
    f.close();
    assertFalse(f.isOpen());
    assertEquals("x", Files.readString(p));
  }

  @Test
  void useAfterCloseIsClosedChannelException() throws Exception {
    Path p = tmp.resolve("r.txt");
    Files.writeString(p, "abc");
    FerryFile f = fs.open(p.toString(), "r");
    f.close();
    assertThrows(ClosedChannelException.class, () -> f.read(ByteBuffer.allocate(1)));
    assertThrows(ClosedChannelException.class, () -> f.position());
    assertThrows(ClosedChannelException.class, () -> f.position(1));
    assertThrows(ClosedChannelException.class, () -> f.size());
  }

  @Test
  void aMissingIrodsFileIsFileNotFoundWithFerrysMessage() {
    String url = irods.url("rods", "/nope-" + unique("java-"));
    FileNotFoundException e = assertThrows(FileNotFoundException.class, () -> fs.open(url, "r"));
    assertTrue(e.getMessage().contains("USER_FILE_DOES_NOT_EXIST"), e.getMessage());
  }

  @Test
  void aMissingS3ObjectIsFileNotFoundNamingIt() {
    String key = "nope-" + unique("java-");
    FileNotFoundException e =
        assertThrows(FileNotFoundException.class, () -> fs.open(s3.url(key), "r"));
    // The S3 adapter names bucket/key (not the s3:// URL) and the HTTP status.
    assertTrue(e.getMessage().contains(S3Peer.BUCKET + "/" + key), e.getMessage());
    assertTrue(e.getMessage().contains("404"), e.getMessage());
  }

  @Test
  void readingAWrittenFileIsNonReadableChannel() throws Exception {
    try (FerryFile f = fs.open(tmp.resolve("w").toString(), "w")) {
      assertThrows(NonReadableChannelException.class, () -> f.read(ByteBuffer.allocate(1)));
    }
  }

  @Test
  void truncatingCannotShrinkAFile() throws Exception {
    try (FerryFile f = fs.open(tmp.resolve("t").toString(), "w")) {
      f.write(ByteBuffer.wrap(new byte[10]));
      f.truncate(10);  // no change: allowed
      assertThrows(UnsupportedOperationException.class, () -> f.truncate(5));
    }
  }

  @Test
  void anUnknownModeIsIllegalArgument() {
    assertThrows(IllegalArgumentException.class, () -> fs.open(tmp.resolve("m").toString(), "rw"));
  }

  @Test
  void aFileOutlivesItsClosedFileSystems() throws Exception {
    Path p = tmp.resolve("outlive.txt");
    Files.writeString(p, "still here");
    FerryFile f;
    try (FileSystems own = new FileSystems(runtime)) {
      f = own.open(p.toString(), "r");
    }
    try (f) {
      assertArrayEquals("still here".getBytes(), readAll(f));
    }
  }

  @Test
  void aWrittenFileNobodyClosedIsDiscardedNotPublished() throws Exception {
    Path dir = Files.createDirectory(tmp.resolve("forgotten"));
    openAndForget(dir.resolve("never.txt").toString());
    assertEquals(1, temporariesIn(dir), "the writer's temporary, beside the target");
    // The Cleaner runs once the channel is unreachable: the temporary goes, nothing is published.
    for (int i = 0; i < 200 && temporariesIn(dir) > 0; i++) {
      System.gc();
      Thread.sleep(25);
    }
    assertEquals(0, temporariesIn(dir));
    try (var files = Files.list(dir)) {
      assertEquals(0, files.count());
    }
  }

  /**
   * Temporaries in {@code dir}: its hidden files, and the unnamed ones (O_TMPFILE, the default
   * where the filesystem has it) this process holds open, "#inode (deleted)" in /proc/self/fd.
   */
  private static long temporariesIn(Path dir) throws IOException {
    long n;
    try (var files = Files.list(dir)) {
      n = files.filter(p -> p.getFileName().toString().startsWith(".")).count();
    }
    try (var fds = Files.list(Path.of("/proc/self/fd"))) {
      n += fds.filter(fd -> {
        try {
          String target = Files.readSymbolicLink(fd).toString();
          return target.startsWith(dir + "/") && target.endsWith(" (deleted)");
        } catch (IOException e) {
          return false;  // closed between the listing and the look
        }
      }).count();
    }
    return n;
  }

  private static void openAndForget(String url) throws Exception {
    FerryFile f = fs.open(url, "w");
    f.write(ByteBuffer.wrap("lost".getBytes()));
  }
}
