package io.ferry;

/**
 * What every ferry object over a native one shares: its {@link NativeHandle}, closed once
 * (explicitly, or by a Cleaner when a user forgot), and an {@link IllegalStateException} for
 * any use after close. Thread-safe.
 */
public abstract class NativeObject implements AutoCloseable {
  final NativeHandle handle;

  NativeObject(NativeHandle handle) {
    this.handle = handle;
  }

  public boolean isClosed() {
    return handle.isClosed();
  }

  /** Waits for calls in progress, then frees the native object. Idempotent. */
  @Override
  public void close() {
    handle.close();
  }
}
