package io.ferry;

/**
 * ferry's threads: I/O threads and a blocking pool for the copy engine's workers. Everything
 * else holds a reference to the runtime it was made on, so closing a FerryRuntime while a
 * {@link FileSystems} still uses it is safe: the threads stop when the last user closes.
 * Thread-safe; AutoCloseable (a Cleaner frees it if a user forgets).
 */
public final class FerryRuntime extends NativeObject {
  /** A runtime with ferry's default thread counts. */
  public FerryRuntime() {
    this(0);
  }

  /** A runtime with {@code blockingThreads} engine workers (0: ferry's default). */
  public FerryRuntime(int blockingThreads) {
    super(open(blockingThreads));
  }

  private static NativeHandle open(int blockingThreads) {
    if (blockingThreads < 0) throw new IllegalArgumentException("blockingThreads must be >= 0");
    NativeLibrary.load();
    return new NativeHandle("FerryRuntime", newRuntime(blockingThreads), FerryRuntime::disposeRuntime);
  }

  long handle() {
    return handle.get();
  }

  /** The native handle, kept open until {@link #releaseHandle()} (for objects made on it). */
  long acquireHandle() {
    return handle.acquire();
  }

  void releaseHandle() {
    handle.release();
  }

  private static native long newRuntime(int blockingThreads);

  private static native void disposeRuntime(long handle);
}
