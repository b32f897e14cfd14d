package io.ferry;

import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongConsumer;

/**
 * A native object's handle: closed once (explicitly, or by the Cleaner when a user forgot), and
 * an {@link IllegalStateException} for any use after close. Thread-safe.
 *
 * <p>Calls that may race a close bracket their native call with {@link #acquire()} and {@link
 * #release()}: close then waits for them, so a native object is never freed under a call in
 * progress. (A call must not close its own object from inside, e.g. from a loader.)
 */
final class NativeHandle implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();
  private static final int CLOSING = Integer.MIN_VALUE;  // the flag bit; the rest counts users

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
  private final long handle;  // valid while users can acquire it
  private final AtomicInteger users = new AtomicInteger();

  NativeHandle(String what, long handle, LongConsumer dispose) {
    this.what = what;
    this.handle = handle;
    this.state = new State(handle, dispose);
    this.cleanable = CLEANER.register(this, state);
  }

  /** The live handle; IllegalStateException once closed. */
  long get() {
    if (users.get() < 0) throw closed();
    return handle;
  }

  /** The live handle, held open until the matching {@link #release()}. */
  long acquire() {
    for (; ; ) {
      int n = users.get();
      if (n < 0) throw closed();
      if (users.compareAndSet(n, n + 1)) return handle;
    }
  }

  /** A native call on the live handle. */
  @FunctionalInterface
  interface Call<T, E extends Exception> {
    T on(long handle) throws E;
  }

  /** {@code call} on the live handle, held open (close waits) until it returns. */
  <T, E extends Exception> T call(Call<T, E> call) throws E {
    long h = acquire();
    try {
      return call.on(h);
    } finally {
      release();
    }
  }

  /** A native call that returns nothing. */
  @FunctionalInterface
  interface VoidCall<E extends Exception> {
    void on(long handle) throws E;
  }

  /** {@code call} on the live handle, held open (close waits) until it returns. */
  <E extends Exception> void run(VoidCall<E> call) throws E {
    long h = acquire();
    try {
      call.on(h);
    } finally {
      release();
    }
  }

  void release() {
    if (users.decrementAndGet() == CLOSING) {
      synchronized (this) {
        notifyAll();
      }
    }
  }

  boolean isClosed() {
    return users.get() < 0;
  }

  /**
   * Takes the handle out (0 if already closed) for the caller to free its own way (a file's
   * close publishes it, where the Cleaner's dispose discards it), once the calls in progress
   * have returned; the Cleaner then does nothing.
   */
  long take() {
    if (!drain()) return 0;
    long h;
    synchronized (state) {
      h = state.handle;
      state.handle = 0;
    }
    cleanable.clean();  // unregisters: State.run sees 0
    return h;
  }

  /** Frees the native object once the calls in progress have returned. Idempotent. */
  @Override
  public void close() {
    if (drain()) cleanable.clean();
  }

  /** Marks the handle closed and waits for its users; false if it was closed already. */
  private boolean drain() {
    int before = users.getAndUpdate(n -> n | CLOSING);
    if (before < 0) return false;  // closed already (or closing on another thread)
    boolean interrupted = false;
    synchronized (this) {
      while (users.get() != CLOSING) {
        try {
          wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    if (interrupted) Thread.currentThread().interrupt();
    return true;
  }

  private IllegalStateException closed() {
    return new IllegalStateException(what + " is closed");
  }
}
