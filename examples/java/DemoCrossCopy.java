// scripts/demo's Java part (examples/demo-irods.sh runs it with only the
// shaded jar on the class path): the cross-protocol tree copy NFS -> S3 ->
// iRODS -> local through FileSystems, an iRODS listing uncached then from
// IrodsCaches, and iRODS metadata set and read back.
//   java -cp ferry.jar DemoCrossCopy.java NFS_TREE S3_TREE IRODS_TREE LOCAL_DIR
// (URLs ending in '/'; IRODS_TREE as irods://user@host:port/zone/path/).

import io.ferry.*;

public class DemoCrossCopy {
  public static void main(String[] a) throws Exception {
    try (FerryRuntime rt = new FerryRuntime(); FileSystems fs = new FileSystems(rt)) {
      // The copy: three hops, any two schemes, one call each.
      for (int i = 0; i + 1 < a.length; i++) {
        TransferStats s = fs.copy(a[i], a[i + 1], true);
        System.out.printf("java: %s -> %s: %d files, %d bytes%n", a[i], a[i + 1], s.files(), s.bytes());
      }
      // The iRODS listing, uncached (a GenQuery each time) then cached.
      String irods = a[2];
      int zoneAt = irods.indexOf('/', "irods://".length());
      String server = irods.substring(0, zoneAt);
      String collection = irods.substring(zoneAt).replaceAll("/$", "");
      String zone = collection.split("/")[1];
      String user = server.substring("irods://".length(), server.indexOf('@'));
      try (IrodsCaches caches = IrodsCaches.connect(server + "/" + zone, null)) {
        for (String how : new String[] {"first (GenQuery)", "second (cached)"}) {
          long t0 = System.nanoTime();
          int n = caches.list(user, collection).size();
          System.out.printf("java: list %s %s: %d entries in %.3f ms%n", collection, how, n,
              (System.nanoTime() - t0) / 1e6);
        }
        System.out.println("java: list cache " + caches.listStats());
      }
      // Metadata (AVUs) on the copied collection.
      fs.addIrodsMetadata(irods, "copied-by", "ferry-demo", "java");
      System.out.println("java: metadata of " + collection + ": " + fs.irodsMetadata(irods));
    }
  }
}
