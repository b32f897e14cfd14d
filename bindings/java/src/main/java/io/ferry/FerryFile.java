package io.ferry;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NonReadableChannelException;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.SeekableByteChannel;

/**
 * A file on any place ferry reaches, opened by {@link FileSystems#open}: one descriptor of the
 * C++ {@code fs::FileTable} (POSIX semantics; the position lives in C++). Opened to read
 * ({@code "r"}) or to write ({@code "w"}), never both: most protocols cannot update a file in
 * place.
 *
 * <p>Reads move only the bytes asked for (ranged GETs, NFS READs); a direct {@link ByteBuffer}
 * is filled in place, a heap buffer through one native copy of at most 8 MiB per call. A
 * position past the end reads end-of-stream (-1).
 *
 * <p>A written file is published by {@link #close()}, atomically where the protocol allows it
 * (a temporary renamed over the target, an S3 multipart upload completed): until then readers
 * see the old file. If publishing fails, close throws and the target is as it was. A written file
 * that is never closed is discarded by a Cleaner, never published.
 *
 * <p>{@link #truncate} cannot shrink a file (no protocol offers it here). After {@link #close()},
 * every method but close and isOpen throws {@link ClosedChannelException}; closing twice does
 * nothing.
 *
 * <p>Thread-safe: calls are serialized on this object (each moves the one position), so a close
 * from another thread waits for a read or write in flight.
 */
public final class FerryFile implements SeekableByteChannel {
  private final NativeHandle handle;
  private final String url;
  private final boolean writable;

  FerryFile(long fileSystems, String url, boolean writable, long size) throws IOException {
    this.url = url;
    this.writable = writable;
    this.handle = new NativeHandle("FerryFile", open(fileSystems, url, writable, size),
        FerryFile::discard);
  }

  /** The URL this file was opened with. */
  public String url() {
    return url;
  }

  @Override
  public synchronized int read(ByteBuffer dst) throws IOException {
    long h = live();
    if (writable) throw new NonReadableChannelException();
    if (dst.isReadOnly()) throw new ReadOnlyBufferException();
    int want = dst.remaining();
    if (want == 0) return 0;
    int pos = dst.position();
    int n;
    if (dst.isDirect()) {
      n = readDirect(h, dst, pos, want);
    } else {
      n = readArray(h, dst.array(), dst.arrayOffset() + pos, want);
    }
    if (n == 0) return -1;  // a short read is the end, and nothing was left
    dst.position(pos + n);
    return n;
  }

  @Override
  public synchronized int write(ByteBuffer src) throws IOException {
    long h = live();
    if (!writable) throw new NonWritableChannelException();
    int total = 0;
    // The table may take fewer bytes than offered: the channel contract is all of them.
    while (src.hasRemaining()) {
      int pos = src.position();
      int n;
      if (src.isDirect()) {
        n = writeDirect(h, src, pos, src.remaining());
      } else if (src.hasArray()) {
        n = writeArray(h, src.array(), src.arrayOffset() + pos, src.remaining());
      } else {  // a read-only heap buffer hides its array
        byte[] copy = new byte[Math.min(src.remaining(), 8 << 20)];
        src.duplicate().get(copy);
        n = writeArray(h, copy, 0, copy.length);
      }
      src.position(pos + n);
      total += n;
    }
    return total;
  }

  @Override
  public synchronized long position() throws IOException {
    return seek(live(), 0, true);
  }

  @Override
  public synchronized FerryFile position(long newPosition) throws IOException {
    long h = live();
    if (newPosition < 0) throw new IllegalArgumentException("position " + newPosition + " < 0");
    seek(h, newPosition, false);
    return this;
  }

  /** The size: as opened for a read file; the bytes written so far for a written one. */
  @Override
  public synchronized long size() throws IOException {
    return size(live());
  }

  /**
   * As the contract says, a size at or past the current one changes nothing (the position moves
   * back to it if beyond); a smaller one throws {@link UnsupportedOperationException}: ferry's
   * files are written once, front to back, and no protocol here truncates in place.
   */
  @Override
  public synchronized FerryFile truncate(long size) throws IOException {
    long h = live();
    if (!writable) throw new NonWritableChannelException();
    if (size < 0) throw new IllegalArgumentException("size " + size + " < 0");
    if (size < size(h)) {
      throw new UnsupportedOperationException(
          "truncate " + url + ": ferry's files cannot shrink (write a new file instead)");
    }
    if (seek(h, 0, true) > size) seek(h, size, false);
    return this;
  }

  @Override
  public boolean isOpen() {
    return !handle.isClosed();
  }

  /**
   * Closes the file; for a written file, publishes it, and an {@link IOException} (mapped as
   * everywhere in ferry) means it was not published. Closing again does nothing.
   */
  @Override
  public synchronized void close() throws IOException {
    long h = handle.take();
    if (h != 0) close(h);
  }

  private long live() throws ClosedChannelException {
    if (handle.isClosed()) throw new ClosedChannelException();
    return handle.get();
  }

  private static native long open(long fileSystems, String url, boolean write, long size)
      throws IOException;

  private static native int readDirect(long h, ByteBuffer dst, int offset, int length)
      throws IOException;

  private static native int readArray(long h, byte[] dst, int offset, int length)
      throws IOException;

  private static native int writeDirect(long h, ByteBuffer src, int offset, int length)
      throws IOException;

  private static native int writeArray(long h, byte[] src, int offset, int length)
      throws IOException;

  private static native long seek(long h, long offset, boolean fromCurrent) throws IOException;

  private static native long size(long h) throws IOException;

  private static native void close(long h) throws IOException;

  private static native void discard(long h);
}
