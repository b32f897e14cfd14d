package io.ferry;

import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/** A test class against ferry's iRODS test peer (one for the class) and local files in {@link #tmp}. */
abstract class IrodsTestBase extends FerryTestBase {
  static IrodsPeer irods;
  @TempDir Path tmp;

  @BeforeAll
  static void startIrods() throws Exception {
    irods = closeAfterAll(new IrodsPeer());
  }
}
