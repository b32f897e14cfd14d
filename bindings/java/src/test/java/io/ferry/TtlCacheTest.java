package io.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileNotFoundException;
import java.nio.file.AccessDeniedException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** io.ferry.TtlCache: Java values and loaders over ferry's C++ TtlCache. */
class TtlCacheTest {
  private static final class Boom extends RuntimeException {
    Boom(String m) {
      super(m);
    }
  }

  private static <V> TtlCache<V> cache(CacheLoader<V> loader) {
    return TtlCache.<V>builder().loader(loader).build();
  }

  @Test
  void aHitReturnsTheLoadedObjectWithoutLoadingAgain() throws Exception {
    AtomicInteger loads = new AtomicInteger();
    try (TtlCache<Object> c = cache(k -> {
      loads.incrementAndGet();
      return new Object();
    })) {
      Object first = c.get("/zone/a");
      assertSame(first, c.get("/zone/a"));
      assertEquals(1, loads.get());
      assertEquals(1, c.stats().hits());
      assertEquals(1, c.stats().loads());
    }
  }

  @Test
  void sixteenThreadsMissingOneKeyRunOneLoad() throws Exception {
    AtomicInteger loads = new AtomicInteger();
    CountDownLatch allWaiting = new CountDownLatch(1);
    try (TtlCache<Object> c = cache(k -> {
      loads.incrementAndGet();
      allWaiting.await(10, TimeUnit.SECONDS);
      return new Object();
    })) {
      ExecutorService pool = Executors.newFixedThreadPool(16);
      List<Future<Object>> got = new ArrayList<>();
      for (int i = 0; i < 16; i++) got.add(pool.submit(() -> c.get("/zone/hot")));
      while (c.stats().misses() < 16) Thread.sleep(1);  // all 16 joined the one load
      allWaiting.countDown();
      Object value = got.get(0).get();
      for (Future<Object> f : got) assertSame(value, f.get());
      pool.shutdown();
      assertEquals(1, loads.get());
    }
  }

  @Test
  void theLoadingThreadGetsItsLoadersExceptionUnchanged() {
    Boom boom = new Boom("server said no");
    try (TtlCache<String> c = cache(k -> {
      throw boom;
    })) {
      assertSame(boom, assertThrows(Boom.class, () -> c.get("/zone/x")));
    }
  }

  @Test
  void threadsThatWaitedOnAFailedLoadGetFerrysExceptionNamingKeyAndCause() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AccessDeniedException original = new AccessDeniedException("/zone/secret");
    try (TtlCache<String> c = cache(k -> {
      release.await(10, TimeUnit.SECONDS);
      throw original;
    })) {
      ExecutorService pool = Executors.newFixedThreadPool(4);
      List<Future<Throwable>> got = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        got.add(pool.submit(() -> assertThrows(AccessDeniedException.class, () -> c.get("/zone/secret"))));
      }
      while (c.stats().misses() < 4) Thread.sleep(1);
      release.countDown();
      int originals = 0;
      for (Future<Throwable> f : got) {
        Throwable t = f.get();
        if (t == original) {
          originals++;
        } else {
          assertTrue(t.getMessage().contains("TtlCache loader for \"/zone/secret\""), t.getMessage());
          assertTrue(t.getMessage().contains("java.nio.file.AccessDeniedException"), t.getMessage());
        }
      }
      pool.shutdown();
      assertEquals(1, originals);
    }
  }

  @Test
  void notFoundIsRememberedWithoutLoadingAgain() throws Exception {
    AtomicInteger loads = new AtomicInteger();
    try (TtlCache<String> c = TtlCache.<String>builder()
        .negativeRefreshTime(Duration.ofHours(1))
        .loader(k -> {
          loads.incrementAndGet();
          throw new FileNotFoundException(k);
        })
        .build()) {
      assertThrows(FileNotFoundException.class, () -> c.get("/zone/none"));
      FileNotFoundException again = assertThrows(FileNotFoundException.class, () -> c.get("/zone/none"));
      assertTrue(again.getMessage().contains("/zone/none"), again.getMessage());
      assertEquals(1, loads.get());
      assertEquals(1, c.stats().negativeHits());
    }
  }

  @Test
  void aLoaderReturningNullMeansNotFound() {
    try (TtlCache<String> c = cache(k -> null)) {
      FileNotFoundException e = assertThrows(FileNotFoundException.class, () -> c.get("/zone/n"));
      assertTrue(e.getMessage().contains("returned null"), e.getMessage());
    }
  }

  @Test
  void otherErrorsAreNotCached() throws Exception {
    AtomicInteger loads = new AtomicInteger();
    try (TtlCache<String> c = cache(k -> {
      if (loads.incrementAndGet() == 1) throw new Boom("flaky");
      return "ok";
    })) {
      assertThrows(Boom.class, () -> c.get("/zone/f"));
      assertEquals("ok", c.get("/zone/f"));
      assertEquals(1, c.stats().loadFailures());
    }
  }

  @Test
  void aCheckedExceptionThatIsNotAnIoExceptionArrivesWrapped() {
    Exception checked = new Exception("jargon said no");
    try (TtlCache<String> c = cache(k -> {
      throw checked;
    })) {
      FerryException e = assertThrows(FerryException.class, () -> c.get("/zone/j"));
      assertSame(checked, e.getCause());
    }
  }

  @Test
  void getWithoutAnyLoaderIsAnIllegalState() {
    try (TtlCache<String> c = TtlCache.<String>builder().build()) {
      assertThrows(IllegalStateException.class, () -> c.get("/zone/a"));
    }
  }

  @Test
  void aPerCallLoaderIsUsedInsteadOfTheCachesOwn() throws Exception {
    try (TtlCache<String> c = cache(k -> "default")) {
      assertEquals("mine", c.get("/zone/a", k -> "mine"));
      assertEquals("mine", c.get("/zone/a"));
    }
  }

  @Test
  void anExpiredEntryIsLoadedAgain() throws Exception {
    AtomicInteger loads = new AtomicInteger();
    try (TtlCache<Integer> c = TtlCache.<Integer>builder()
        .refreshTime(Duration.ofMillis(20))
        .loader(k -> loads.incrementAndGet())
        .build()) {
      assertEquals(1, c.get("/zone/a"));
      Thread.sleep(100);
      assertEquals(2, c.get("/zone/a"));
    }
  }

  @Test
  void refreshAheadReloadsOnADaemonRuntimeThreadWhileReadersGetTheOldValue() throws Exception {
    AtomicInteger loads = new AtomicInteger();
    AtomicReference<Thread> reloader = new AtomicReference<>();
    try (FerryRuntime rt = new FerryRuntime();
        TtlCache<Integer> c = TtlCache.<Integer>builder()
            .refreshTime(Duration.ofHours(1))
            .refreshAfter(Duration.ofMillis(10))
            .runtime(rt)
            .loader(k -> {
              if (loads.get() > 0) reloader.set(Thread.currentThread());
              return loads.incrementAndGet();
            })
            .build()) {
      assertEquals(1, c.get("/zone/a"));
      Thread.sleep(50);
      assertEquals(1, c.get("/zone/a"));  // served at once; a reload starts behind it
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (c.getIfPresent("/zone/a") != 2 && System.nanoTime() < deadline) Thread.sleep(1);
      assertEquals(2, c.getIfPresent("/zone/a"));
      assertTrue(reloader.get().isDaemon());
      assertEquals(1, c.stats().refreshes());
    }
  }

  @Test
  void invalidatePrefixDropsThePathAndWhatIsBelowItOnly() {
    try (TtlCache<String> c = TtlCache.<String>builder().build()) {
      for (String k : List.of("/a/b", "/a/b/c", "/a/b/c/d", "/a/bc", "/a")) c.put(k, k);
      assertEquals(3, c.invalidatePrefix("/a/b"));
      assertNull(c.getIfPresent("/a/b/c"));
      assertEquals("/a/bc", c.getIfPresent("/a/bc"));
      assertEquals("/a", c.getIfPresent("/a"));
    }
  }

  @Test
  void invalidateIfAsksAJavaPredicateWithTheKeysAsWritten() {
    String user = "alice#/zone/d\u00e9j\u00e0/\uD83D\uDE00";  // accents and a surrogate pair
    try (TtlCache<String> c = TtlCache.<String>builder().build()) {
      c.put(user, "v");
      c.put("bob#/zone/x", "v");
      List<String> seen = new ArrayList<>();
      assertEquals(1, c.invalidateIf(k -> {
        seen.add(k);
        return k.startsWith("alice#");
      }));
      assertTrue(seen.contains(user), seen.toString());
      assertEquals("v", c.getIfPresent("bob#/zone/x"));
    }
  }

  @Test
  void anExceptionFromTheInvalidatePredicateIsRethrown() {
    try (TtlCache<String> c = TtlCache.<String>builder().build()) {
      c.put("/a", "v");
      assertThrows(Boom.class, () -> c.invalidateIf(k -> {
        throw new Boom("predicate");
      }));
    }
  }

  @Test
  void putReplacesTheEntryAndGetIfPresentNeverLoads() {
    try (TtlCache<String> c = cache(k -> "loaded")) {
      assertNull(c.getIfPresent("/a"));
      c.put("/a", "one");
      c.put("/a", "two");
      assertEquals("two", c.getIfPresent("/a"));
      assertEquals(0, c.stats().loads());
    }
  }

  @Test
  void maxWeightBoundsTheSumOfTheWeigher() {
    try (TtlCache<String> c = TtlCache.<String>builder()
        .maxWeight(10)
        .weigher((k, v) -> v.length())
        .build()) {
      c.put("/a", "aaaa");
      c.put("/b", "bbbb");
      c.put("/c", "cccc");  // 12 > 10: the least recently used goes
      assertEquals(2, c.size());
      assertEquals(8, c.weight());
      assertNull(c.getIfPresent("/a"));
      assertEquals(2, c.stats().entries());  // stats cross as records.proto CacheStats
      assertEquals(8, c.stats().weight());
      assertEquals(1, c.stats().evictions());
    }
  }

  @Test
  void aLoaderMayUseTheCacheForOtherKeys() throws Exception {
    try (TtlCache<String> c = TtlCache.<String>builder().build()) {
      CacheLoader<String> child = k -> "child of " + k;
      String v = c.get("/parent/with/a/long/key/beyond/sso", k -> c.get("/parent/with/a/long/key/beyond/sso/child", child) + "!");
      assertEquals("child of /parent/with/a/long/key/beyond/sso/child!", v);
      assertEquals(2, c.size());
    }
  }

  @Test
  void closingTwiceIsHarmless() {
    TtlCache<String> c = TtlCache.<String>builder().build();
    c.close();
    c.close();
    assertTrue(c.isClosed());
  }

  @Test
  void aClosedCacheThrowsIllegalStateException() {
    TtlCache<String> c = TtlCache.<String>builder().build();
    c.close();
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> c.get("/a", k -> "v"));
    assertEquals("TtlCache is closed", e.getMessage());
    assertThrows(IllegalStateException.class, () -> c.put("/a", "v"));
    assertThrows(IllegalStateException.class, c::stats);
  }

  @Test
  void closeWaitsForALoadInProgress() throws Exception {
    CountDownLatch loading = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    TtlCache<String> c = cache(k -> {
      loading.countDown();
      finish.await(10, TimeUnit.SECONDS);
      return "done";
    });
    ExecutorService pool = Executors.newFixedThreadPool(2);
    Future<String> get = pool.submit(() -> c.get("/slow"));
    loading.await();
    Future<?> close = pool.submit(c::close);
    Thread.sleep(50);
    assertFalse(close.isDone());
    finish.countDown();
    assertEquals("done", get.get());
    close.get(10, TimeUnit.SECONDS);
    assertTrue(c.isClosed());
    pool.shutdown();
  }

  @Test
  void aNegativeDurationIsRefused() {
    assertInstanceOf(IllegalArgumentException.class,
        assertThrows(IllegalArgumentException.class,
            () -> TtlCache.builder().refreshTime(Duration.ofSeconds(-1))));
  }
}
