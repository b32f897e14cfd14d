package io.ferry.nfsrods;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class XdrTest {
  @Test
  void whatTheWriterWritesTheReaderReadsBack() throws Exception {
    Xdr.Writer w = new Xdr.Writer(8).int32(-7).hyper(1L << 40).bool(true).string("ünï 日本").opaque(new byte[] {1, 2, 3});
    Xdr.Reader r = new Xdr.Reader(w.array(), 0, w.size());
    assertEquals(-7, r.int32());
    assertEquals(1L << 40, r.hyper());
    assertEquals(true, r.bool());
    assertEquals("ünï 日本", r.string(100));
    assertArrayEquals(new byte[] {1, 2, 3}, r.opaque(100));
    assertEquals(0, r.remaining());
  }

  @Test
  void anOpaqueLongerThanItsBoundIsGarbageBeforeAnyAllocation() {
    Xdr.Writer w = new Xdr.Writer(8).int32(Integer.MAX_VALUE);
    Xdr.Reader r = new Xdr.Reader(w.array(), 0, w.size());
    assertThrows(Xdr.Garbage.class, () -> r.opaque(64));
  }

  @Test
  void anOpaqueLongerThanWhatIsLeftIsGarbage() {
    Xdr.Writer w = new Xdr.Writer(8).int32(40).int32(1);
    Xdr.Reader r = new Xdr.Reader(w.array(), 0, w.size());
    assertThrows(Xdr.Garbage.class, () -> r.opaque(64));
  }

  @Test
  void aTruncatedIntegerIsGarbage() {
    Xdr.Reader r = new Xdr.Reader(new byte[] {0, 0, 1}, 0, 3);
    assertThrows(Xdr.Garbage.class, r::int32);
  }

  @Test
  void aBoolOtherThanZeroOrOneIsGarbage() {
    Xdr.Writer w = new Xdr.Writer(4).int32(2);
    assertThrows(Xdr.Garbage.class, () -> new Xdr.Reader(w.array(), 0, w.size()).bool());
  }

  @Test
  void truncateDropsWhatWasWrittenAfterThePoint() throws Exception {
    Xdr.Writer w = new Xdr.Writer(4).int32(1).int32(2).truncate(4).int32(3);
    Xdr.Reader r = new Xdr.Reader(w.array(), 0, w.size());
    assertEquals(1, r.int32());
    assertEquals(3, r.int32());
  }
}
