package io.ferry.nfsrods;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class NfsrodsConfigTest {
  @Test
  void anEmptyObjectGivesNfsrodsDefaults() throws Exception {
    NfsrodsConfig c = NfsrodsConfig.parse("{}");
    assertEquals(2049, c.port);
    assertEquals("/tempZone/home", c.mountPoint);
    assertEquals(30000, c.listRefreshMillis);
    assertTrue(c.allowOverwrite);
    assertEquals("rods", c.proxyUser);
  }

  @Test
  void nfsrodsKeysAreRead() throws Exception {
    NfsrodsConfig c = NfsrodsConfig.parse("""
        {"nfs_server": {"port": 0, "irods_mount_point": "/z/home/alice/",
                        "list_operation_query_results_refresh_time_in_milliseconds": 5,
                        "allow_overwrite_of_existing_files": false},
         "irods_client": {"host": "h", "port": 1248, "zone": "z",
                          "proxy_admin_account": {"username": "admin", "password": "p"}}}""");
    assertEquals(0, c.port);
    assertEquals("/z/home/alice", c.mountPoint);
    assertEquals(5, c.listRefreshMillis);
    assertFalse(c.allowOverwrite);
    assertEquals("h", c.irodsHost);
    assertEquals(1248, c.irodsPort);
    assertEquals("admin", c.proxyUser);
    assertEquals("p", c.proxyPassword);
  }

  @Test
  void usersMapUidsToIrodsUsersAndTheirAbsenceMeansTheProxyForAll() throws Exception {
    assertEquals(null, NfsrodsConfig.parse("{}").users);
    NfsrodsConfig c = NfsrodsConfig.parse("{\"ferry\": {\"users\": {\"0\": \"rods\", \"1001\": \"alice\"}}}");
    assertEquals("alice", c.users.get(1001));
    assertEquals("rods", c.users.get(0));
  }

  @Test
  void aUserMapKeyThatIsNotAUidIsAClearError() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> NfsrodsConfig.parse("{\"ferry\": {\"users\": {\"alice\": \"alice\"}}}"));
    assertTrue(e.getMessage().contains("not a uid"), e.getMessage());
  }

  @Test
  void aPortOutOfRangeIsAClearError() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> NfsrodsConfig.parse("{\"nfs_server\": {\"port\": 70000}}"));
    assertTrue(e.getMessage().contains("port"), e.getMessage());
  }

  @Test
  void aMountPointOutsideTheZoneIsAClearError() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> NfsrodsConfig.parse("{\"nfs_server\": {\"irods_mount_point\": \"/otherZone/home\"}}"));
    assertTrue(e.getMessage().contains("not in zone"), e.getMessage());
  }

  @Test
  void textThatIsNotAJsonObjectIsRefused() {
    assertThrows(Exception.class, () -> NfsrodsConfig.parse("[1, 2]"));
    assertThrows(Exception.class, () -> NfsrodsConfig.parse("{\"nfs_server\": "));
  }
}
