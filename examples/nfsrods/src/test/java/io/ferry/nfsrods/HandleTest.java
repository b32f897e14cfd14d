package io.ferry.nfsrods;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ferry.nfsrods.IrodsVfs.Handle;
import org.junit.jupiter.api.Test;

class HandleTest {
  @Test
  void aHandleCarriesTheCatalogIdAndKindAndNothingElse() throws Exception {
    Handle h = new Handle(true, 10_042L);
    assertEquals(11, h.bytes().length);
    assertEquals(h, Handle.parse(h.bytes()));
    assertEquals(new Handle(false, Long.MAX_VALUE), Handle.parse(new Handle(false, Long.MAX_VALUE).bytes()));
  }

  @Test
  void bytesThatAreNotOurHandleAreBadHandle() {
    byte[] b = new Handle(false, 5).bytes();
    b[2] = 'X';
    NfsException e = assertThrows(NfsException.class, () -> Handle.parse(b));
    assertEquals(NfsException.BADHANDLE, e.status);
    assertEquals(NfsException.BADHANDLE,
        assertThrows(NfsException.class, () -> Handle.parse(new byte[64])).status);
  }

  @Test
  void namesWithASlashOrNulAreInvalid() {
    assertEquals(NfsException.INVAL, assertThrows(NfsException.class, () -> IrodsVfs.checkName("a/b")).status);
    assertEquals(NfsException.INVAL, assertThrows(NfsException.class, () -> IrodsVfs.checkName("a\0b")).status);
    assertEquals(NfsException.NAMETOOLONG,
        assertThrows(NfsException.class, () -> IrodsVfs.checkName("x".repeat(2000))).status);
  }
}
