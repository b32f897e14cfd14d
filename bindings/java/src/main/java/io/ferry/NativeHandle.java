package io.ferry;

import java.lang.ref.Cleaner;
import java.util.function.LongConsumer;

/**
 * A native object's handle: closed once (explicitly, or by the Cleaner when a user forgot),
 * and an {@link IllegalStateException} for any use after close. Thread-safe.
 */
final class NativeHandle implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();

  private static final class State implements Runnable {
    private final LongConsumer dispose;
    private long handle;

    State(long handle, LongConsumer dispose) {
      this.handle = handle;
      this.dispose = dispose;
    }

    @Override
    public synchronized void run() {
      if (handle != 0) {
        dispose.accept(handle);
        handle = 0;
      }
    }
  }

  private final String what;
  private final State state;
  private final Cleaner.Cleanable cleanable;

  NativeHandle(String what, long handle, LongConsumer dispose) {
    this.what = what;
    this.state = new State(handle, dispose);
    this.cleanable = CLEANER.register(this, state);
  }

  /** The live handle; IllegalStateException once closed. */
  long get() {
    synchronized (state) {
      if (state.handle == 0) throw new IllegalStateException(what + " is closed");
      return state.handle;
    }
  }

  boolean isClosed() {
    synchronized (state) {
      return state.handle == 0;
    }
  }

  /**
   * Takes the handle out (0 if already closed) for the caller to free its own way (a file's
   * close publishes it, where the Cleaner's dispose discards it); the Cleaner then does nothing.
   */
  long take() {
    long h;
    synchronized (state) {
      h = state.handle;
      state.handle = 0;
    }
    cleanable.clean();  // unregisters: State.run sees 0
    return h;
  }

  @Override
  public void close() {
    cleanable.clean();  // idempotent
  }
}
