package io.ferry.nfsrods;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IdAliasesTest {
  @TempDir Path dir;

  @Test
  void anIdWithoutAliasIsItself() throws Exception {
    try (IdAliases a = new IdAliases(null, 10)) {
      assertEquals(7, a.current(7));
    }
  }

  @Test
  void aliasesChainToTheNewestId() throws Exception {
    try (IdAliases a = new IdAliases(null, 10)) {
      a.put(1, 2);
      a.put(2, 3);
      assertEquals(3, a.current(1));
    }
  }

  @Test
  void aliasesSurviveAReopenOfTheirFile() throws Exception {
    Path f = dir.resolve("aliases");
    try (IdAliases a = new IdAliases(f, 10)) {
      a.put(10, 20);
    }
    Files.writeString(f, "30", java.nio.file.StandardOpenOption.APPEND);  // a line cut short by a crash
    try (IdAliases a = new IdAliases(f, 10)) {
      assertEquals(20, a.current(10));
      assertEquals(30, a.current(30));
    }
  }

  @Test
  void aCycleEndsInsteadOfLoopingForever() throws Exception {
    try (IdAliases a = new IdAliases(null, 10)) {
      a.put(1, 2);
      a.put(2, 1);
      a.current(1);  // returns: the chain is bounded
    }
  }
}
