package io.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileNotFoundException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** FileSystems.walk: a Stream<Entry> fed by records.proto batches, on local files and S3. */
class WalkTest extends FerryTestBase {
  static S3Peer s3;
  @TempDir static Path tree;
  static Set<String> expected = new HashSet<>();  // every path below `tree`, relative

  @BeforeAll
  static void start() throws Exception {
    s3 = closeAfterAll(new S3Peer());
    // 10 directories x 99 files, plus the directories: 1,000 entries.
    for (int d = 0; d < 10; d++) {
      Path dir = Files.createDirectory(tree.resolve("d" + d));
      expected.add("d" + d);
      for (int f = 0; f < 99; f++) {
        Files.writeString(dir.resolve("f" + f), "x".repeat(f));
        expected.add("d" + d + "/f" + f);
      }
    }
  }

  @Test
  void walkingAThousandEntryTreeYieldsEveryEntryOnce() throws Exception {
    List<Entry> entries;
    try (Stream<Entry> s = fs.walk(tree.toString(), WalkOptions.DEFAULTS.withBatchEntries(64))) {
      entries = s.collect(Collectors.toList());
    }
    assertEquals(1000, entries.size());
    assertEquals(expected, entries.stream().map(Entry::path).collect(Collectors.toSet()));
    Entry f = entries.stream().filter(e -> e.path().equals("d3/f42")).findFirst().orElseThrow();
    assertTrue(f.isFile());
    assertEquals(42, f.size());
    assertTrue(f.mtimeNanos() > 0);
    assertTrue(f.id() != 0);
    assertTrue(entries.stream().filter(Entry::isDirectory).count() == 10);
  }

  @Test
  void walkingAnS3PrefixYieldsEveryKeyAndItsPrefixes() throws Exception {
    String root = s3.url(unique("walk-"));
    fs.copy(tree.resolve("d1").toString(), root + "/d1", true);
    fs.copy(tree.resolve("d2").toString(), root + "/d2", true);
    Set<String> paths;
    try (Stream<Entry> s = fs.walk(root)) {
      paths = s.map(Entry::path).collect(Collectors.toSet());
    }
    Set<String> want = expected.stream().filter(p -> p.startsWith("d1") || p.startsWith("d2"))
        .collect(Collectors.toSet());
    assertEquals(want, paths);
  }

  @Test
  void closingAWalkEarlyStopsTheNativeWalk() {
    assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
      for (int round = 0; round < 20; round++) {  // a hang or a leaked walk shows by repetition
        List<Entry> first = new ArrayList<>();
        try (Stream<Entry> s = fs.walk(tree.toString(),
            WalkOptions.DEFAULTS.withBatchEntries(8).withMaxInFlight(1))) {
          Iterator<Entry> it = s.iterator();
          while (first.size() < 5 && it.hasNext()) first.add(it.next());
        }
        assertEquals(5, first.size());
      }
    });
  }

  @Test
  void aMissingRootThrowsFileNotFoundFromWalkItself() {
    FileNotFoundException e = assertThrows(FileNotFoundException.class,
        () -> fs.walk(tree.resolve("nope").toString()));
    assertTrue(e.getMessage().contains("nope"), e.getMessage());
  }

  @Test
  void aReadableTreeReportsNoWalkErrors() throws Exception {
    List<WalkError> errors = new ArrayList<>();
    try (Stream<Entry> s = fs.walk(tree.toString(), WalkOptions.DEFAULTS.withOnError(errors::add))) {
      assertEquals(1000, s.count());
    }
    assertTrue(errors.isEmpty(), errors.toString());
  }

  @Test
  void aStreamCanBeDroppedAfterItsEnd() throws Exception {
    // Reaching the end frees the native walk at once; close after it does nothing.
    Stream<Entry> s = fs.walk(tree.resolve("d0").toString());
    assertEquals(99, s.count());
    s.close();
    s.close();
    assertFalse(expected.isEmpty());
  }

  @Test
  void badWalkOptionsAreIllegalArgument() {
    assertThrows(IllegalArgumentException.class, () -> WalkOptions.DEFAULTS.withBatchEntries(0));
  }
}
