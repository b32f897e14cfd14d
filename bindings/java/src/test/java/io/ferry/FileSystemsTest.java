package io.ferry;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileNotFoundException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * io.ferry.FileSystems against ferry's iRODS test peer (IRODS_PASSWORD=rods comes from the
 * surefire environment) and local files.
 */
class FileSystemsTest extends IrodsTestBase {
  @Test
  void copiesALocalFileToIrodsAndBackByteForByte() throws Exception {
    byte[] data = new byte[20 << 20];  // several chunks: parallel joined streams
    new Random(7).nextBytes(data);
    Path src = tmp.resolve("src.bin");
    Files.write(src, data);
    String remote = irods.url("rods", unique("/java-") + ".bin");
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
    String remote = irods.url("rods", unique("/java-"));
    try (FileSystems fs = new FileSystems(runtime)) {
      TransferStats up = fs.copy(tmp.resolve("tree").toString(), remote, true);
      assertEquals(2, up.files());
      assertTrue(fs.stat(remote + "/sub").isDirectory());
      fs.copy(remote, tmp.resolve("back").toString(), true);
    }
    assertEquals("bb", Files.readString(tmp.resolve("back/sub/b")));
  }

  /** Asserts that stat(url) throws {@code type} with {@code code} in its message. */
  private static void assertStatThrows(Class<? extends Exception> type, String url, String code) {
    Exception e = assertThrows(type, () -> fs.stat(url));
    assertTrue(e.getMessage().contains(code), e.getMessage());
  }

  @Test
  void aMissingPathIsFileNotFoundWithTheIrodsCode() {
    assertStatThrows(FileNotFoundException.class, irods.url("rods", "/nope"), "USER_FILE_DOES_NOT_EXIST");
  }

  @Test
  void aWrongPasswordIsAnAuthenticationIOException() {
    // alice's password is not rods (the environment's).
    assertStatThrows(FerryAuthenticationException.class, irods.url("alice", ""), "CAT_INVALID_AUTHENTICATION");
  }

  @Test
  void aBadUrlIsIllegalArgument() {
    assertStatThrows(IllegalArgumentException.class, "nosuchscheme://x/y", "");
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
    FerryRuntime own = new FerryRuntime(2);
    FileSystems fs = new FileSystems(own);
    own.close();  // the threads stay until the FileSystems closes too
    Files.writeString(tmp.resolve("x"), "x");
    assertEquals(1, fs.stat(tmp.resolve("x").toString()).size());
    fs.close();
    assertThrows(IllegalStateException.class, () -> new FileSystems(own));
  }

  @Test
  void mkdirRenameRemoveAndRmdirWorkByUrlOnIrods() throws Exception {
    String d = unique("/java-");
    try (FileSystems fs = new FileSystems(runtime)) {
      fs.mkdir(irods.url("rods", d + "/a/b"), true);
      fs.mkdir(irods.url("rods", d + "/a/b"), true);  // exists: not an error with parents
      assertTrue(fs.stat(irods.url("rods", d + "/a/b")).isDirectory());
      try (OutputStream out = fs.newOutputStream(irods.url("rods", d + "/a/b/f"))) {
        out.write('x');
      }
      fs.rename(irods.url("rods", d + "/a/b/f"), irods.url("rods", d + "/a/g"));
      assertEquals(1, fs.stat(irods.url("rods", d + "/a/g")).size());
      assertThrows(FileNotFoundException.class, () -> fs.stat(irods.url("rods", d + "/a/b/f")));
      fs.remove(irods.url("rods", d + "/a/g"));
      fs.rmdir(irods.url("rods", d + "/a/b"));
      fs.rmdir(irods.url("rods", d + "/a"));
      assertThrows(FileNotFoundException.class, () -> fs.stat(irods.url("rods", d + "/a")));
    }
  }

  @Test
  void aFileSystemsActingForAUserIsDeniedWhatThatUserMayNotRead() throws Exception {
    String d = unique("/java-");
    try (FileSystems rods = new FileSystems(runtime)) {
      try (OutputStream out = rods.newOutputStream(irods.url("rods", d))) {
        out.write('x');  // rods's own: alice has no access
      }
    }
    try (FileSystems asAlice = new FileSystems(runtime, 0, 0, "alice")) {
      assertThrows(java.nio.file.AccessDeniedException.class, () -> asAlice.open(irods.url("rods", d), "r"));
    }
  }

  @Test
  void aFileSystemsActingForAUserWritesAsThatUser() throws Exception {
    String path = "irods://rods@127.0.0.1:" + irods.port + "/tempZone/home/alice" + unique("/java-");
    try (FileSystems asAlice = new FileSystems(runtime, 0, 0, "alice")) {
      try (OutputStream out = asAlice.newOutputStream(path)) {
        out.write('a');
      }
      assertEquals(1, asAlice.stat(path).size());
    }
    try (FileSystems rods = new FileSystems(runtime)) {
      List<IrodsAccess> acl = rods.irodsAccess(path);
      assertTrue(acl.stream().anyMatch(a -> a.user().equals("alice") && a.access().equals("own")), acl.toString());
    }
  }

  @Test
  void irodsPathOfIdNamesTheObjectAndTheCollectionWhoseIdsStatReports() throws Exception {
    String d = unique("/java-");
    try (FileSystems fs = new FileSystems(runtime)) {
      fs.mkdir(irods.url("rods", d), true);
      try (OutputStream out = fs.newOutputStream(irods.url("rods", d + "/a b é"))) {
        out.write('x');
      }
      long file = fs.stat(irods.url("rods", d + "/a b é")).id();
      long dir = fs.stat(irods.url("rods", d)).id();
      assertEquals("/tempZone/home/rods" + d + "/a b é",
          fs.irodsPathOfId(irods.url("rods", ""), file, false));
      assertEquals("/tempZone/home/rods" + d, fs.irodsPathOfId(irods.url("rods", ""), dir, true));
    }
  }

  @Test
  void irodsPathOfIdOfARemovedObjectIsFileNotFound() throws Exception {
    String d = unique("/java-");
    try (FileSystems fs = new FileSystems(runtime)) {
      try (OutputStream out = fs.newOutputStream(irods.url("rods", d))) {
        out.write('x');
      }
      long id = fs.stat(irods.url("rods", d)).id();
      fs.remove(irods.url("rods", d));
      assertThrows(FileNotFoundException.class, () -> fs.irodsPathOfId(irods.url("rods", ""), id, false));
    }
  }

  @Test
  void renameAcrossFilesystemsIsAnIllegalArgument() throws Exception {
    Files.writeString(tmp.resolve("x"), "x");
    try (FileSystems fs = new FileSystems(runtime)) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> fs.rename(tmp.resolve("x").toString(), irods.url("rods", "/x")));
      assertTrue(e.getMessage().contains("not on one filesystem"), e.getMessage());
    }
  }

  @Test
  void irodsMetadataIsAddedListedAndRemovedOnObjectsAndCollections() throws Exception {
    String coll = irods.url("rods", unique("/java-"));
    try (FileSystems fs = new FileSystems(runtime)) {
      fs.mkdir(coll, true);
      try (OutputStream out = fs.newOutputStream(coll + "/obj")) {
        out.write('x');
      }
      for (String url : List.of(coll + "/obj", coll)) {
        fs.addIrodsMetadata(url, "experiment", "42", "run");
        assertEquals(List.of(new IrodsAvu("experiment", "42", "run")), fs.irodsMetadata(url));
        fs.removeIrodsMetadata(url, "experiment", "42", "run");
        assertEquals(List.of(), fs.irodsMetadata(url));
      }
    }
  }

  @Test
  void irodsMetadataOfAMissingPathIsFileNotFound() {
    assertThrows(FileNotFoundException.class, () -> fs.irodsMetadata(irods.url("rods", "/nope")));
  }

  @Test
  void setIrodsAccessGrantsAndNullRevokesAnotherUsersRead() throws Exception {
    String obj = irods.url("rods", unique("/java-") + ".bin");
    try (FileSystems fs = new FileSystems(runtime)) {
      try (OutputStream out = fs.newOutputStream(obj)) {
        out.write('x');
      }
      fs.setIrodsAccess(obj, "bob", "read", false);
      assertTrue(fs.irodsAccess(obj).contains(new IrodsAccess("bob", "read_object")),
          fs.irodsAccess(obj).toString());
      fs.setIrodsAccess(obj, "bob", "null", false);
      assertTrue(fs.irodsAccess(obj).stream().noneMatch(a -> a.user().equals("bob")),
          fs.irodsAccess(obj).toString());
    }
  }

  @Test
  void irodsCallsRefuseAUrlThatIsNotIrods() throws Exception {
    Files.writeString(tmp.resolve("x"), "x");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> fs.irodsMetadata(tmp.resolve("x").toString()));
    assertTrue(e.getMessage().contains("not an irods:// URL"), e.getMessage());
  }
}
