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

  /** Frees the native object once the calls in progress have returned. Idempotent. */
  @Override
  public void close() {
    int before = users.getAndUpdate(n -> n | CLOSING);
    if (before < 0) return;  // closed already (or closing on another thread)
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
    cleanable.clean();
    if (interrupted) Thread.currentThread().interrupt();
  }

  private IllegalStateException closed() {
    return new IllegalStateException(what + " is closed");
  }
}
