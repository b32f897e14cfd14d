package io.ferry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileNotFoundException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** io.ferry.IrodsCaches (NFSRODS's cache set) against ferry's iRODS test peer. */
class IrodsCachesTest extends IrodsTestBase {
  /** A fresh collection holding {@code files} small files; its logical path. */
  private String collectionWith(int files) throws Exception {
    String name = unique("/jc-");
    Path dir = Files.createDirectories(tmp.resolve(name.substring(1)));
    for (int i = 0; i < files; i++) Files.writeString(dir.resolve("f" + i), "x");
    Files.writeString(tmp.resolve("one.txt"), "x");
    fs.copy(dir.toString(), irods.url("rods", name), true);
    return "/tempZone/home/rods" + name;
  }

  private IrodsCaches connect(String json) throws Exception {
    return IrodsCaches.connect("irods://rods@127.0.0.1:" + irods.port + "/tempZone", json);
  }

  @Test
  void aSecondListingOfACollectionComesFromTheCache() throws Exception {
    String coll = collectionWith(3);
    try (IrodsCaches c = connect(null)) {
      assertEquals(3, c.list("rods", coll).size());
      List<IrodsEntry> again = c.list("rods", coll);
      assertEquals(3, again.size());
      assertEquals(IrodsObjectType.DATA_OBJECT, again.get(0).type());
      assertEquals(1, c.listStats().loads());
      assertEquals(1, c.listStats().hits());
    }
  }

  @Test
  void aChangeDropsTheListingOfItsCollection() throws Exception {
    String coll = collectionWith(2);
    try (IrodsCaches c = connect(null)) {
      assertEquals(2, c.list("rods", coll).size());
      fs.copy(tmp.resolve("one.txt").toString(), irods.url("rods", coll.substring(19) + "/new"), false);
      assertEquals(2, c.list("rods", coll).size());  // cached for 30 s
      c.changed(coll + "/new");
      assertEquals(3, c.list("rods", coll).size());
    }
  }

  @Test
  void statAndObjectTypeDescribeADataObject() throws Exception {
    String coll = collectionWith(1);
    try (IrodsCaches c = connect(null)) {
      IrodsStat st = c.stat("rods", coll + "/f0");
      assertEquals(IrodsObjectType.DATA_OBJECT, st.type());
      assertEquals(1, st.size());
      assertEquals(IrodsObjectType.COLLECTION, c.objectType(coll));
    }
  }

  @Test
  void aMissingPathIsFileNotFoundException() throws Exception {
    try (IrodsCaches c = connect(null)) {
      FileNotFoundException e =
          assertThrows(FileNotFoundException.class, () -> c.stat("rods", "/tempZone/home/rods/none"));
      assertTrue(e.getMessage().contains("/tempZone/home/rods/none"), e.getMessage());
    }
  }

  @Test
  void userTypeAndPermissionsComeFromTheServer() throws Exception {
    String coll = collectionWith(1);
    try (IrodsCaches c = connect(null)) {
      assertEquals("rodsadmin", c.userType("rods"));
      assertEquals("rodsuser", c.userType("alice"));
      assertTrue(c.permissions(coll + "/f0", false).contains(new IrodsAccess("rods", "own")),
          c.permissions(coll + "/f0", false).toString());
    }
  }

  @Test
  void nfsrodsJsonSetsTheRefreshTimes() throws Exception {
    String coll = collectionWith(1);
    String json = "{\"irods_client\": {\"list_operation_query_results_refresh_time_in_milliseconds\": 0}}";
    try (IrodsCaches c = connect(json)) {
      c.list("rods", coll);
      c.list("rods", coll);
      assertEquals(2, c.listStats().loads());  // 0 ms: never kept
    }
  }

  @Test
  void jsonThatDoesNotParseIsIllegalArgumentException() {
    assertThrows(IllegalArgumentException.class, () -> connect("{not json"));
  }

  @Test
  void aWrongPasswordIsAnAuthenticationIOException() {
    // IRODS_PASSWORD is rods's; alice's is apass.
    assertThrows(FerryAuthenticationException.class,
        () -> IrodsCaches.connect("irods://alice@127.0.0.1:" + irods.port + "/tempZone", null));
  }

  @Test
  void aClosedCacheSetThrowsIllegalStateExceptionAndClosesTwice() throws Exception {
    IrodsCaches c = connect(null);
    c.close();
    c.close();
    assertThrows(IllegalStateException.class, () -> c.userType("rods"));
  }
}
