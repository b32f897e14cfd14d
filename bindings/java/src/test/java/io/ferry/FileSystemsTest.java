package io.ferry;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileNotFoundException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * io.ferry.FileSystems against ferry's iRODS test peer (IRODS_PASSWORD=rods comes from the
 * surefire environment) and local files.
 */
class FileSystemsTest {
  static IrodsPeer peer;
  static Runtime runtime;
  @TempDir Path tmp;

  @BeforeAll
  static void start() throws Exception {
    peer = new IrodsPeer();
    runtime = new Runtime();
  }

  @AfterAll
  static void stop() throws Exception {
    runtime.close();
    peer.close();
  }

  private static String unique() {
    return "/java-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Test
  void copiesALocalFileToIrodsAndBackByteForByte() throws Exception {
    byte[] data = new byte[20 << 20];  // several chunks: parallel joined streams
    new Random(7).nextBytes(data);
    Path src = tmp.resolve("src.bin");
    Files.write(src, data);
    String remote = peer.url("rods", unique() + ".bin");
    try (FileSystems fs = new FileSystems(runtime)) {
      TransferStats up = fs.copy(src.toString(), remote, false);
      assertEquals(data.length, up.bytes());
      assertEquals("upload", up.operation());
      assertEquals(1, up.files());
      assertEquals(remote, up.destination());
      assertEquals(data.length, fs.stat(remote).size());
      assertTrue(fs.stat(remote).isFile());
      fs.copy(remote, tmp.resolve("back.bin").toString(), false);
    }
    assertArrayEquals(data, Files.readAllBytes(tmp.resolve("back.bin")));
  }

  @Test
  void copiesATreeRecursively() throws Exception {
    Files.createDirectories(tmp.resolve("tree/sub"));
    Files.writeString(tmp.resolve("tree/a"), "a");
    Files.writeString(tmp.resolve("tree/sub/b"), "bb");
    String remote = peer.url("rods", unique());
    try (FileSystems fs = new FileSystems(runtime)) {
      TransferStats up = fs.copy(tmp.resolve("tree").toString(), remote, true);
      assertEquals(2, up.files());
      assertTrue(fs.stat(remote + "/sub").isDirectory());
      fs.copy(remote, tmp.resolve("back").toString(), true);
    }
    assertEquals("bb", Files.readString(tmp.resolve("back/sub/b")));
  }

  @Test
  void aMissingPathIsFileNotFoundWithTheIrodsCode() {
    try (FileSystems fs = new FileSystems(runtime)) {
      FileNotFoundException e =
          assertThrows(FileNotFoundException.class, () -> fs.stat(peer.url("rods", "/nope")));
      assertTrue(e.getMessage().contains("USER_FILE_DOES_NOT_EXIST"), e.getMessage());
    }
  }

  @Test
  void aWrongPasswordIsASecurityException() {
    // alice's password is not rods (the environment's).
    try (FileSystems fs = new FileSystems(runtime)) {
      SecurityException e =
          assertThrows(SecurityException.class, () -> fs.stat(peer.url("alice", "")));
      assertTrue(e.getMessage().contains("CAT_INVALID_AUTHENTICATION"), e.getMessage());
    }
  }

  @Test
  void aBadUrlIsIllegalArgument() {
    try (FileSystems fs = new FileSystems(runtime)) {
      assertThrows(IllegalArgumentException.class, () -> fs.stat("nosuchscheme://x/y"));
    }
  }

  @Test
  void closingTwiceIsHarmless() {
    FileSystems fs = new FileSystems(runtime);
    fs.close();
    fs.close();
    assertTrue(fs.isClosed());
  }

  @Test
  void usingAClosedFileSystemsIsIllegalState() {
    FileSystems fs = new FileSystems(runtime);
    fs.close();
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> fs.stat("/tmp"));
    assertTrue(e.getMessage().contains("FileSystems is closed"));
  }

  @Test
  void aFileSystemsOutlivesItsClosedRuntime() throws Exception {
    Runtime own = new Runtime(2);
    FileSystems fs = new FileSystems(own);
    own.close();  // the threads stay until the FileSystems closes too
    Files.writeString(tmp.resolve("x"), "x");
    assertEquals(1, fs.stat(tmp.resolve("x").toString()).size());
    fs.close();
    assertThrows(IllegalStateException.class, () -> new FileSystems(own));
  }

  @Test
  void mkdirRenameRemoveAndRmdirWorkByUrlOnIrods() throws Exception {
    String d = unique();
    try (FileSystems fs = new FileSystems(runtime)) {
      fs.mkdir(peer.url("rods", d + "/a/b"), true);
      fs.mkdir(peer.url("rods", d + "/a/b"), true);  // exists: not an error with parents
      assertTrue(fs.stat(peer.url("rods", d + "/a/b")).isDirectory());
      try (OutputStream out = fs.newOutputStream(peer.url("rods", d + "/a/b/f"))) {
        out.write('x');
      }
      fs.rename(peer.url("rods", d + "/a/b/f"), peer.url("rods", d + "/a/g"));
      assertEquals(1, fs.stat(peer.url("rods", d + "/a/g")).size());
      assertThrows(FileNotFoundException.class, () -> fs.stat(peer.url("rods", d + "/a/b/f")));
      fs.remove(peer.url("rods", d + "/a/g"));
      fs.rmdir(peer.url("rods", d + "/a/b"));
      fs.rmdir(peer.url("rods", d + "/a"));
      assertThrows(FileNotFoundException.class, () -> fs.stat(peer.url("rods", d + "/a")));
    }
  }

  @Test
  void renameAcrossFilesystemsIsAnIllegalArgument() throws Exception {
    Files.writeString(tmp.resolve("x"), "x");
    try (FileSystems fs = new FileSystems(runtime)) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> fs.rename(tmp.resolve("x").toString(), peer.url("rods", "/x")));
      assertTrue(e.getMessage().contains("not on one filesystem"), e.getMessage());
    }
  }
}
