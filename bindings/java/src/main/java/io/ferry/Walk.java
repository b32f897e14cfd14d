package io.ferry;

import com.google.protobuf.InvalidProtocolBufferException;
import io.ferry.records.WalkBatch;
import io.ferry.records.WalkEntry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayDeque;
import java.util.Spliterator;
import java.util.function.Consumer;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * A walk as the Spliterator behind {@link FileSystems#walk}: it pulls one records.proto
 * WalkBatch (serialized, one byte[] per JNI call) from the C++ bindings::WalkStream whenever its
 * entries run out, decodes it with the generated io.ferry.records classes, and hands the entries
 * on one by one. The walk runs ahead on a FerryRuntime thread by at most two batches, then waits for
 * the consumer. Closing it (the stream's close, or the end of the walk) stops the native walk
 * and waits for it; a Cleaner does the same for a stream nobody closed.
 *
 * <p>Thread-compatible, like a Stream: one consumer thread; close on that thread too.
 */
final class Walk implements Spliterator<Entry> {
  private final NativeHandle handle;
  private final Consumer<WalkError> onError;
  private final ArrayDeque<Entry> entries = new ArrayDeque<>();
  private boolean stopped;  // the user closed the stream: entries already received are dropped

  private Walk(long handle, Consumer<WalkError> onError) {
    this.handle = new NativeHandle("walk", handle, Walk::dispose);
    this.onError = onError;
  }

  /**
   * Starts walking {@code url} and waits for the first batch, so a root that cannot be walked
   * (missing, not a directory, unreachable) throws here, checked, as Files.walk does.
   */
  static Stream<Entry> stream(long fileSystems, String url, WalkOptions options)
      throws IOException {
    Walk walk = new Walk(start(fileSystems, url, options.batchEntries(), options.maxInFlight()),
        options.onError());
    try {
      walk.fill();
    } catch (IOException | RuntimeException | Error e) {
      walk.close();
      throw e;
    }
    return StreamSupport.stream(walk, false).onClose(walk::stop);
  }

  @Override
  public boolean tryAdvance(Consumer<? super Entry> action) {
    if (stopped) return false;
    while (entries.isEmpty()) {
      if (handle.isClosed()) return false;
      try {
        fill();
      } catch (IOException e) {
        close();
        throw new UncheckedIOException(e);
      } catch (RuntimeException | Error e) {
        close();
        throw e;
      }
    }
    action.accept(entries.poll());
    return true;
  }

  /** Takes the next batch in (or closes at the end). */
  private void fill() throws IOException {
    byte[] bytes = handle.call(Walk::next);
    if (bytes == null) {
      close();  // frees the walk's thread now, not at the stream's close
      return;
    }
    WalkBatch batch;
    try {
      batch = WalkBatch.parseFrom(bytes);
    } catch (InvalidProtocolBufferException e) {
      throw new ProtocolException("walk: a batch does not decode: " + e.getMessage());
    }
    for (WalkEntry e : batch.getEntriesList()) entries.add(toEntry(e));
    if (onError != null) {
      for (io.ferry.records.WalkError e : batch.getErrorsList()) {
        onError.accept(new WalkError(e.getPath().toStringUtf8(), e.getCode(), e.getMessage(),
            e.getRefused(), e.getName().toStringUtf8()));
      }
    }
  }

  // Paths are bytes on the wire (NFS names need not be UTF-8): decoded as UTF-8, a malformed
  // byte becomes U+FFFD. records.proto says 0 for an unknown mtime: Entry says -1.
  private static Entry toEntry(WalkEntry e) {
    String kind = switch (e.getType()) {
      case FILE_TYPE_REGULAR -> "file";
      case FILE_TYPE_DIRECTORY -> "directory";
      case FILE_TYPE_SYMLINK -> "symlink";
      case FILE_TYPE_BLOCK_DEVICE, FILE_TYPE_CHAR_DEVICE, FILE_TYPE_SOCKET, FILE_TYPE_FIFO ->
          "other";
      default -> "unknown";
    };
    return new Entry(e.getPath().toStringUtf8(), kind, e.getSize(),
        e.getMtimeNs() == 0 ? -1 : e.getMtimeNs(), e.getFileid(), e.getMode(), e.getUid(),
        e.getGid());
  }

  void close() {
    handle.close();
  }

  /** The stream's close: the walk ends here, buffered entries included. */
  void stop() {
    stopped = true;
    entries.clear();
    close();
  }

  @Override
  public Spliterator<Entry> trySplit() {
    return null;  // one native stream, one consumer
  }

  @Override
  public long estimateSize() {
    return Long.MAX_VALUE;
  }

  @Override
  public int characteristics() {
    return NONNULL | DISTINCT;
  }

  private static native long start(long fileSystems, String url, int batchEntries,
      int maxInFlight) throws IOException;

  private static native byte[] next(long handle) throws IOException;

  private static native void dispose(long handle);
}
