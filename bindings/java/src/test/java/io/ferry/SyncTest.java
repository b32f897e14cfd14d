package io.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import org.junit.jupiter.api.Test;

/** io.ferry.FileSystems.sync: a local tree kept in sync with ferry's iRODS test peer. */
class SyncTest extends IrodsTestBase {
  private Path tree() throws IOException {
    Path src = tmp.resolve("src");
    Files.createDirectories(src.resolve("d"));
    Files.writeString(src.resolve("a.txt"), "alpha");
    Files.writeString(src.resolve("d/b.txt"), "beta");
    Files.writeString(src.resolve("d/c.tmp"), "scratch");
    for (String f : List.of("a.txt", "d/b.txt", "d/c.tmp")) {
      Files.setLastModifiedTime(src.resolve(f), FileTime.fromMillis(1_700_000_000_000L));
    }
    return src;
  }

  @Test
  void aSecondSyncCopiesNothing() throws Exception {
    Path src = tree();
    String remote = irods.url("rods", unique("/java-sync-"));
    try (FileSystems fs = new FileSystems(runtime)) {
      SyncResult first = fs.sync(src.toString(), remote, new SyncOptions());
      SyncResult again = fs.sync(src.toString(), remote, new SyncOptions());
      assertEquals(3, first.copied());
      assertEquals(0, again.copied());
      assertEquals(3, again.skipped());
    }
  }

  @Test
  void aSyncCopiesWhatChangedAndDeletesWhatTheSourceLacks() throws Exception {
    Path src = tree();
    String remote = irods.url("rods", unique("/java-sync-"));
    try (FileSystems fs = new FileSystems(runtime)) {
      fs.sync(src.toString(), remote, new SyncOptions());
      Files.writeString(src.resolve("a.txt"), "ALPHA!");
      Files.delete(src.resolve("d/b.txt"));
      SyncResult r = fs.sync(src.toString(), remote, new SyncOptions());
      assertEquals(List.of("a.txt"), r.copiedFiles());
      assertEquals(List.of("d/b.txt"), r.deletedFiles());
    }
  }

  @Test
  void aDryRunWithAFilterReportsAndWritesNothing() throws Exception {
    Path src = tree();
    String remote = irods.url("rods", unique("/java-sync-"));
    try (FileSystems fs = new FileSystems(runtime)) {
      SyncResult r =
          fs.sync(src.toString(), remote, new SyncOptions().exclude("*.tmp").dryRun(true));
      assertTrue(r.dryRun());
      assertEquals(2, r.copied());
      assertEquals(1, r.excluded());
      assertEquals(2, fs.sync(src.toString(), remote, new SyncOptions().exclude("*.tmp")).copied());
    }
  }

  @Test
  void aMalformedPatternIsAnIllegalArgument() throws Exception {
    try (FileSystems fs = new FileSystems(runtime)) {
      assertThrows(IllegalArgumentException.class,
          () -> fs.sync(tmp.toString(), tmp.resolve("x").toString(),
              new SyncOptions().exclude("a[b")));
    }
  }
}
