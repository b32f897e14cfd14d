package io.ferry.nfsrods;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * XDR (RFC 4506) reading and writing, only what NFSv3 and MOUNT3 need. A {@link Reader} checks
 * every length against what is left before allocating, so a malformed call is a {@link
 * Garbage} (GARBAGE_ARGS), never a large allocation or a hang. Not thread-safe (one per call).
 */
final class Xdr {
  private Xdr() {}

  /** Arguments that do not decode. */
  static final class Garbage extends Exception {
    Garbage(String what) {
      super(what);
    }
  }

  static final class Reader {
    private final ByteBuffer b;

    Reader(byte[] data, int offset, int length) {
      b = ByteBuffer.wrap(data, offset, length);
    }

    int position() {
      return b.position();
    }

    int remaining() {
      return b.remaining();
    }

    int int32() throws Garbage {
      if (b.remaining() < 4) throw new Garbage("truncated at byte " + b.position());
      return b.getInt();
    }

    long uint32() throws Garbage {
      return int32() & 0xffffffffL;
    }

    long hyper() throws Garbage {
      if (b.remaining() < 8) throw new Garbage("truncated at byte " + b.position());
      return b.getLong();
    }

    boolean bool() throws Garbage {
      int v = int32();
      if (v != 0 && v != 1) throw new Garbage("bad bool " + v);
      return v == 1;
    }

    byte[] fixed(int n) throws Garbage {
      int padded = (n + 3) & ~3;
      if (b.remaining() < padded) throw new Garbage("truncated opaque of " + n);
      byte[] out = new byte[n];
      b.get(out);
      b.position(b.position() + padded - n);
      return out;
    }

    /** A variable-length opaque of at most {@code max} bytes. */
    byte[] opaque(int max) throws Garbage {
      long n = uint32();
      if (n > max) throw new Garbage("opaque of " + n + " bytes, at most " + max);
      return fixed((int) n);
    }

    /** The byte range of a variable-length opaque, left in place (WRITE's data). */
    ByteBuffer opaqueSlice(int max) throws Garbage {
      long n = uint32();
      if (n > max) throw new Garbage("opaque of " + n + " bytes, at most " + max);
      int padded = (int) ((n + 3) & ~3);
      if (b.remaining() < padded) throw new Garbage("truncated opaque of " + n);
      ByteBuffer slice = b.slice(b.position(), (int) n);
      b.position(b.position() + padded);
      return slice;
    }

    String string(int max) throws Garbage {
      return new String(opaque(max), StandardCharsets.UTF_8);
    }
  }

  static final class Writer {
    private byte[] buf;
    private int n;

    Writer(int capacity) {
      buf = new byte[Math.max(64, capacity)];
    }

    private void room(int more) {
      if (n + more > buf.length) buf = Arrays.copyOf(buf, Math.max(buf.length * 2, n + more));
    }

    int size() {
      return n;
    }

    byte[] array() {
      return buf;
    }

    /** Drops what was written after the first {@code size} bytes (a failed result's body). */
    Writer truncate(int size) {
      if (size < 0 || size > n) throw new IllegalArgumentException("truncate to " + size + " of " + n);
      n = size;
      return this;
    }

    Writer int32(int v) {
      room(4);
      buf[n++] = (byte) (v >>> 24);
      buf[n++] = (byte) (v >>> 16);
      buf[n++] = (byte) (v >>> 8);
      buf[n++] = (byte) v;
      return this;
    }

    Writer hyper(long v) {
      int32((int) (v >>> 32));
      return int32((int) v);
    }

    Writer bool(boolean v) {
      return int32(v ? 1 : 0);
    }

    Writer fixed(byte[] data) {
      return fixed(data, 0, data.length);
    }

    Writer fixed(byte[] data, int off, int len) {
      int padded = (len + 3) & ~3;
      room(padded);
      System.arraycopy(data, off, buf, n, len);
      Arrays.fill(buf, n + len, n + padded, (byte) 0);
      n += padded;
      return this;
    }

    Writer opaque(byte[] data) {
      int32(data.length);
      return fixed(data);
    }

    Writer opaque(byte[] data, int off, int len) {
      int32(len);
      return fixed(data, off, len);
    }

    Writer string(String s) {
      return opaque(s.getBytes(StandardCharsets.UTF_8));
    }
  }
}
