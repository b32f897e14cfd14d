package io.ferry.nfsrods;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Old data_id -> new data_id, for the objects this server republished (ferry publishes a written
 * file as a new object). Kept in memory (the newest {@code capacity}) and appended to a file in
 * the state directory, so a client's handle of a file written before a restart still resolves
 * after it. Without a file (null path) it lives only in memory.
 *
 * <p>Thread-safe.
 */
final class IdAliases implements AutoCloseable {
  private static final int MAX_CHAIN = 64;
  private final Map<Long, Long> next;
  private final BufferedWriter log;

  IdAliases(Path file, int capacity) throws IOException {
    next = new LinkedHashMap<>(1024, 0.75f, false) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<Long, Long> e) {
        return size() > capacity;
      }
    };
    if (file == null) {
      log = null;
      return;
    }
    if (Files.exists(file)) {
      List<String> lines = Files.readAllLines(file, StandardCharsets.US_ASCII);
      for (String line : lines) {
        String[] f = line.trim().split(" ");
        if (f.length != 2) continue;  // a line cut short by a crash
        try {
          next.put(Long.parseLong(f[0]), Long.parseLong(f[1]));
        } catch (NumberFormatException ignored) {
          // the same
        }
      }
    }
    log = Files.newBufferedWriter(file, StandardCharsets.US_ASCII, StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }

  /** {@code id}'s newest alias (itself if it has none). */
  synchronized long current(long id) {
    for (int i = 0; i < MAX_CHAIN; i++) {
      Long n = next.get(id);
      if (n == null) return id;
      id = n;
    }
    return id;
  }

  synchronized void put(long oldId, long newId) {
    next.put(oldId, newId);
    if (log != null) {
      try {
        log.write(oldId + " " + newId + "\n");
        log.flush();
      } catch (IOException e) {
        // The alias still holds until a restart.
      }
    }
  }

  @Override
  public synchronized void close() throws IOException {
    if (log != null) log.close();
  }
}
