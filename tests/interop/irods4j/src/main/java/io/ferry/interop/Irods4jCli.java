package io.ferry.interop;

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.irods.irods4j.authentication.NativeAuthPlugin;
import org.irods.irods4j.high_level.catalog.IRODSQuery;
import org.irods.irods4j.high_level.connection.IRODSConnection;
import org.irods.irods4j.high_level.connection.QualifiedUsername;
import org.irods.irods4j.high_level.io.IRODSDataObjectInputStream;
import org.irods.irods4j.high_level.io.IRODSDataObjectOutputStream;
import org.irods.irods4j.high_level.metadata.IRODSMetadata;
import org.irods.irods4j.high_level.vfs.CollectionEntry;
import org.irods.irods4j.high_level.vfs.IRODSCollectionIterator;
import org.irods.irods4j.high_level.vfs.IRODSFilesystem;
import org.irods.irods4j.high_level.vfs.LogicalPath;
import org.irods.irods4j.high_level.vfs.Permission;
import org.irods.irods4j.low_level.api.IRODSApi.RcComm;
import org.irods.irods4j.low_level.api.IRODSException;

/**
 * Drives irods4j from the command line, one session per run:
 *
 * <pre>
 * Irods4jCli HOST PORT USER PASSWORD ZONE COMMAND [ARGS] [-- COMMAND [ARGS]]...
 * </pre>
 *
 * Commands: login, mkdir P, ls P, count P, stat P, put LOCAL P, get P LOCAL,
 * rm P, rmdir P, meta-add P ATTR VALUE [UNITS], meta-ls P, chmod LEVEL USER P,
 * perms P, rename FROM TO, fill P N (N/2 empty data objects d00000.. and N/2
 * collections c00000..). Output is one line per result; an iRODS error prints
 * "ERROR code message" and exits 3.
 */
public final class Irods4jCli {
  public static void main(String[] args) throws Exception {
    if (args.length < 6) {
      System.err.println("usage: Irods4jCli HOST PORT USER PASSWORD ZONE COMMAND [ARGS] [-- COMMAND ...]");
      System.exit(2);
    }
    // irods4j logs through log4j-api alone; its simple logger (errors, to
    // stderr) keeps stdout for results.
    System.setProperty("log4j2.loggerContextFactory", "org.apache.logging.log4j.simple.SimpleLoggerContextFactory");
    System.setProperty("org.apache.logging.log4j.simplelog.StatusLogger.level", "OFF");
    String host = args[0];
    int port = Integer.parseInt(args[1]);
    try (IRODSConnection conn = new IRODSConnection()) {
      conn.connect(host, port, new QualifiedUsername(args[2], args[4]));
      conn.authenticate(new NativeAuthPlugin(), args[3]);
      RcComm comm = conn.getRcComm();
      List<String> cmd = new ArrayList<>();
      for (String a : Arrays.copyOfRange(args, 5, args.length)) {
        if (a.equals("--")) {
          run(comm, cmd);
          cmd.clear();
        } else {
          cmd.add(a);
        }
      }
      if (!cmd.isEmpty()) run(comm, cmd);
    } catch (IRODSException e) {
      System.out.println("ERROR " + e.getErrorCode() + " " + e.getMessage());
      System.out.flush();
      System.exit(3);
    }
  }

  private static void run(RcComm comm, List<String> c) throws Exception {
    String op = c.get(0);
    switch (op) {
      case "login":
        System.out.println("ok");
        break;
      case "mkdir":
        IRODSFilesystem.createCollection(comm, c.get(1));
        break;
      case "ls":
        for (CollectionEntry e : new IRODSCollectionIterator(comm, c.get(1))) {
          String name = LogicalPath.objectName(e.path());
          System.out.println(e.isCollection() ? name + "/" : name);
        }
        break;
      case "count": {
        long n = 0;
        for (CollectionEntry e : new IRODSCollectionIterator(comm, c.get(1))) n++;
        System.out.println(n);
        break;
      }
      case "stat": {
        var st = IRODSFilesystem.status(comm, c.get(1));
        String type = IRODSFilesystem.isDataObject(st) ? "data" : IRODSFilesystem.isCollection(st) ? "collection" : "none";
        long size = IRODSFilesystem.isDataObject(st) ? IRODSFilesystem.dataObjectSize(comm, c.get(1)) : 0;
        System.out.println(type + " " + size);
        break;
      }
      case "put":
        try (InputStream in = new FileInputStream(c.get(1));
             OutputStream out = new IRODSDataObjectOutputStream(comm, c.get(2), true, false)) {
          in.transferTo(out);
        }
        break;
      case "get":
        try (InputStream in = new IRODSDataObjectInputStream(comm, c.get(1));
             OutputStream out = new FileOutputStream(c.get(2))) {
          in.transferTo(out);
        }
        break;
      case "rm":
        IRODSFilesystem.remove(comm, c.get(1), IRODSFilesystem.RemoveOptions.NO_TRASH);
        break;
      case "rmdir":
        IRODSFilesystem.removeAll(comm, c.get(1), IRODSFilesystem.RemoveOptions.NO_TRASH);
        break;
      case "meta-add": {
        String units = c.size() > 4 ? c.get(4) : "";
        var st = IRODSFilesystem.status(comm, c.get(1));
        if (IRODSFilesystem.isCollection(st)) {
          IRODSMetadata.addMetadataToCollection(comm, c.get(1), c.get(2), c.get(3), java.util.Optional.of(units));
        } else {
          IRODSMetadata.addMetadataToDataObject(comm, c.get(1), c.get(2), c.get(3), java.util.Optional.of(units));
        }
        break;
      }
      case "meta-ls": {
        String p = c.get(1);
        var st = IRODSFilesystem.status(comm, p);
        String q = IRODSFilesystem.isCollection(st)
            ? String.format("select META_COLL_ATTR_NAME, META_COLL_ATTR_VALUE, META_COLL_ATTR_UNITS where COLL_NAME = '%s'", p)
            : String.format("select META_DATA_ATTR_NAME, META_DATA_ATTR_VALUE, META_DATA_ATTR_UNITS where COLL_NAME = '%s' and DATA_NAME = '%s'",
                LogicalPath.parentPath(p), LogicalPath.objectName(p));
        for (List<String> row : IRODSQuery.executeGenQuery2(comm, q)) System.out.println(String.join("=", row));
        break;
      }
      case "chmod":
        IRODSFilesystem.permissions(comm, c.get(3), c.get(2), Permission.valueOf(c.get(1).toUpperCase()));
        break;
      case "perms":
        for (var p : IRODSFilesystem.status(comm, c.get(1)).getPermissions()) {
          System.out.println(p.getName() + " " + p.getPermission());
        }
        break;
      case "fill": {
        int n = Integer.parseInt(c.get(2));
        for (int i = 0; i < n; i++) {
          String name = String.format("%s/%s%05d", c.get(1), i % 2 == 0 ? "d" : "c", i / 2);
          if (i % 2 == 0) {
            new IRODSDataObjectOutputStream(comm, name, true, false).close();
          } else {
            IRODSFilesystem.createCollection(comm, name);
          }
        }
        break;
      }
      case "rename":
        IRODSFilesystem.rename(comm, c.get(1), c.get(2));
        break;
      default:
        throw new IllegalArgumentException("unknown command " + op);
    }
    System.out.flush();
  }
}
