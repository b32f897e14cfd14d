package io.ferry.nfsrods;

import io.ferry.nfsrods.IrodsVfs.Attr;
import io.ferry.nfsrods.IrodsVfs.DirEntry;
import io.ferry.nfsrods.IrodsVfs.Handle;
import io.ferry.nfsrods.IrodsVfs.Listing;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * NFSv3 (RFC 1813, program 100003) and MOUNT3 (program 100005) over {@link IrodsVfs}: decoding
 * arguments, encoding results, nothing else (what a call does is the file system's). Calls that
 * iRODS has nothing for (READLINK, SYMLINK, MKNOD, LINK) answer NFS3ERR_NOTSUPP.
 *
 * <p>Thread-safe (stateless but for the write verifier and call counters).
 */
final class Nfs3Programs {
  private static final Logger LOG = Logger.getLogger(Nfs3Programs.class.getName());
  static final int NFS = 100003, MOUNT = 100005;
  static final int MAX_IO = 1 << 20;  // rtmax / wtmax
  private static final int NF3REG = 1, NF3DIR = 2;
  static final String[] PROC_NAMES = {"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK",
      "READ", "WRITE", "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK",
      "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT"};

  private final IrodsVfs vfs;
  private final String exportPath;
  private final java.util.Map<Integer, String> users;  // null: every caller is the proxy admin
  // Changes when the server restarts: a client resends the unstable WRITEs a restart lost.
  private final byte[] writeVerifier = ByteBuffer.allocate(8).putLong(System.nanoTime() ^ System.currentTimeMillis()).array();
  final AtomicLongArray calls = new AtomicLongArray(PROC_NAMES.length);

  Nfs3Programs(IrodsVfs vfs, String exportPath, java.util.Map<Integer, String> users) {
    this.vfs = vfs;
    this.exportPath = exportPath;
    this.users = users;
  }

  RpcServer.Program nfs() {
    return new RpcServer.Program() {
      @Override
      public int low() {
        return 3;
      }

      @Override
      public int high() {
        return 3;
      }

      @Override
      public boolean call(RpcServer.Call call, Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage {
        return nfsCall(call, in, out);
      }
    };
  }

  RpcServer.Program mount() {
    return new RpcServer.Program() {
      @Override
      public int low() {
        return 1;
      }

      @Override
      public int high() {
        return 3;
      }

      @Override
      public boolean call(RpcServer.Call call, Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage {
        return mountCall(call.vers(), call.proc(), in, out);
      }
    };
  }

  // ---- MOUNT3 ----

  private boolean mountCall(int vers, int proc, Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage {
    switch (proc) {
      case 0:  // NULL
        return true;
      case 1: {  // MNT: the export, or a collection below it
        String dir = in.string(1024);
        try {
          Handle h = mountHandle(dir);
          out.int32(0).opaque(h.bytes());
          if (vers == 3) out.int32(1).int32(1);  // auth flavours: AUTH_UNIX
        } catch (NfsException e) {
          // mountstat3 shares nfsstat3's small numbers (NOENT, ACCES, NOTDIR...).
          out.int32(e.status < 100 ? e.status : 10006);
        }
        return true;
      }
      case 2:  // DUMP: no mount list is kept
        out.bool(false);
        return true;
      case 3:  // UMNT
        in.string(1024);
        return true;
      case 4:  // UMNTALL
        return true;
      case 5:  // EXPORT
        out.bool(true).string(exportPath).bool(false).bool(false);
        return true;
      default:
        return false;
    }
  }

  private Handle mountHandle(String dir) throws NfsException {
    while (dir.length() > 1 && dir.endsWith("/")) dir = dir.substring(0, dir.length() - 1);
    if (dir.equals("/") || dir.equals(exportPath)) return vfs.root();
    if (!dir.startsWith(exportPath + "/")) {
      throw new NfsException(NfsException.NOENT, dir + " is not below the export " + exportPath);
    }
    Handle h = vfs.root();
    for (String name : dir.substring(exportPath.length() + 1).split("/")) {
      if (name.isEmpty()) continue;
      h = vfs.lookup(h, name);
    }
    if (!h.collection()) throw new NfsException(NfsException.NOTDIR, dir + " is not a collection");
    return h;
  }

  // ---- NFSv3 ----

  private boolean nfsCall(RpcServer.Call call, Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage {
    int proc = call.proc();
    if (proc < 0 || proc >= PROC_NAMES.length) return false;
    calls.incrementAndGet(proc);
    if (proc == 0) return true;
    int statusAt = out.size();
    try {
      // The caller's uid picks the iRODS user the call acts for, as NFSRODS maps them.
      String user = null;
      if (users != null) {
        user = users.get(call.uid());
        if (user == null) throw new NfsException(NfsException.ACCES, "uid " + call.uid() + " maps to no iRODS user");
      }
      vfs.actAs(user);
      switch (proc) {
        case 1 -> getattr(in, out);
        case 2 -> setattr(in, out);
        case 3 -> lookup(in, out);
        case 4 -> access(in, out);
        case 6 -> read(in, out);
        case 7 -> write(in, out);
        case 8 -> create(in, out);
        case 9 -> mkdir(in, out);
        case 12, 13 -> remove(in, out, proc == 13);
        case 14 -> rename(in, out);
        case 16 -> readdir(in, out, false);
        case 17 -> readdir(in, out, true);
        case 18 -> fsstat(in, out);
        case 19 -> fsinfo(in, out);
        case 20 -> pathconf(in, out);
        case 21 -> commit(in, out);
        default -> throw new NfsException(NfsException.NOTSUPP, PROC_NAMES[proc] + " is not supported on iRODS");
      }
    } catch (NfsException e) {
      if (e.status == NfsException.SERVERFAULT || e.status == NfsException.IO) {
        LOG.log(Level.WARNING, PROC_NAMES[proc] + ": " + e.getMessage(), e.getCause());
      } else {
        LOG.fine(PROC_NAMES[proc] + ": " + e.status + " " + e.getMessage());
      }
      out.truncate(statusAt);
      out.int32(e.status);
      failTail(proc, out);
    } catch (RuntimeException e) {
      LOG.log(Level.SEVERE, PROC_NAMES[proc] + " failed", e);
      out.truncate(statusAt);
      out.int32(NfsException.SERVERFAULT);
      failTail(proc, out);
    }
    return true;
  }

  /** The "resfail" part every failed result carries (attributes or wcc data, none here). */
  private static void failTail(int proc, Xdr.Writer out) {
    switch (proc) {
      case 1:  // GETATTR: nothing
        break;
      case 2, 7, 8, 9, 12, 13, 21:  // wcc_data
        out.bool(false).bool(false);
        break;
      case 14:  // two wcc_data
        out.bool(false).bool(false).bool(false).bool(false);
        break;
      default:  // post_op_attr
        out.bool(false);
    }
  }

  private static Handle fh(Xdr.Reader in) throws Xdr.Garbage, NfsException {
    return Handle.parse(in.opaque(64));
  }

  private static void fattr(Xdr.Writer out, Attr a) {
    out.int32(a.directory() ? NF3DIR : NF3REG)
        .int32(a.directory() ? 0755 : 0644)
        .int32(a.directory() ? 2 : 1)
        .int32(0).int32(0)  // uid, gid: the proxy's (per-user mapping is not done)
        .hyper(a.size()).hyper(a.size())
        .int32(0).int32(0)  // rdev
        .hyper(0x1f0d5)     // fsid
        .hyper(a.fileid());
    for (int i = 0; i < 3; i++) out.int32((int) a.mtimeSeconds()).int32(0);  // atime mtime ctime
  }

  private static void postOp(Xdr.Writer out, Attr a) {
    if (a == null) {
      out.bool(false);
    } else {
      fattr(out.bool(true), a);
    }
  }

  private Attr attrOrNull(Handle h) {
    try {
      return vfs.getattr(h);
    } catch (NfsException e) {
      return null;
    }
  }

  /** wcc_data with no pre-op attributes and the post-op ones. */
  private void wcc(Xdr.Writer out, Handle h) {
    out.bool(false);
    postOp(out, attrOrNull(h));
  }

  private static void sattrSkip(Xdr.Reader in, long[] size) throws Xdr.Garbage {
    if (in.bool()) in.int32();  // mode
    if (in.bool()) in.int32();  // uid
    if (in.bool()) in.int32();  // gid
    size[0] = in.bool() ? in.hyper() : -1;
    for (int t = 0; t < 2; t++) {  // atime, mtime: iRODS keeps its own
      if (in.int32() == 2) {
        in.int32();
        in.int32();
      }
    }
  }

  private void getattr(Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage, NfsException {
    Attr a = vfs.getattr(fh(in));
    fattr(out.int32(0), a);
  }

  private void setattr(Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage, NfsException {
    Handle h = fh(in);
    long[] size = new long[1];
    sattrSkip(in, size);
    if (in.bool()) {  // guard: ctime must match
      int sec = in.int32();
      in.int32();
      if (vfs.getattr(h).mtimeSeconds() != (sec & 0xffffffffL)) {
        throw new NfsException(10002, "SETATTR guard: ctime differs");  // NOT_SYNC
      }
    }
    if (size[0] >= 0) vfs.setSize(h, size[0]);
    else vfs.getattr(h);  // STALE for a stale handle; times, mode and owner are iRODS's own
    out.int32(0);
    wcc(out, h);
  }

  private void lookup(Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage, NfsException {
    Handle dir = fh(in);
    String name = in.string(4096);
    Handle h = vfs.lookup(dir, name);
    out.int32(0).opaque(h.bytes());
    postOp(out, attrOrNull(h));
    postOp(out, attrOrNull(dir));
  }

  private void access(Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage, NfsException {
    Handle h = fh(in);
    int mask = in.int32();
    int granted = vfs.access(h, mask);
    out.int32(0);
    postOp(out, attrOrNull(h));
    out.int32(granted);
  }

  private void read(Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage, NfsException {
    Handle h = fh(in);
    long offset = in.hyper();
    long count = in.uint32();
    if (offset < 0) throw new NfsException(NfsException.INVAL, "offset " + offset);
    int n = (int) Math.min(count, MAX_IO);
    byte[] buf = new byte[n];
    boolean[] eof = new boolean[1];
    int got = vfs.read(h, offset, buf, n, eof);
    out.int32(0);
    postOp(out, attrOrNull(h));
    out.int32(got).bool(eof[0]).opaque(buf, 0, got);
  }

  private void write(Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage, NfsException {
    Handle h = fh(in);
    long offset = in.hyper();
    long count = in.uint32();
    int stable = in.int32();
    ByteBuffer data = in.opaqueSlice(MAX_IO);
    if (count > data.remaining()) throw new NfsException(NfsException.INVAL, "count " + count + " > data");
    data.limit((int) count);
    IrodsVfs.WriteResult r = vfs.write(h, offset, data, stable != 0);
    out.int32(0);
    wcc(out, h);
    out.int32(r.count()).int32(r.stable() ? 2 : 0).fixed(writeVerifier);
  }

  private void create(Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage, NfsException {
    Handle dir = fh(in);
    String name = in.string(4096);
    int how = in.int32();
    long[] size = {-1};
    if (how == 0 || how == 1) {
      sattrSkip(in, size);
    } else if (how == 2) {
      in.fixed(8);  // EXCLUSIVE's verifier: treated as GUARDED
    } else {
      throw new Xdr.Garbage("createhow " + how);
    }
    Handle h = vfs.create(dir, name, how != 0, size[0] == 0);
    out.int32(0).bool(true).opaque(h.bytes());
    postOp(out, attrOrNull(h));
    wcc(out, dir);
  }

  private void mkdir(Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage, NfsException {
    Handle dir = fh(in);
    String name = in.string(4096);
    sattrSkip(in, new long[1]);
    Handle h = vfs.mkdir(dir, name);
    out.int32(0).bool(true).opaque(h.bytes());
    postOp(out, attrOrNull(h));
    wcc(out, dir);
  }

  private void remove(Xdr.Reader in, Xdr.Writer out, boolean directory) throws Xdr.Garbage, NfsException {
    Handle dir = fh(in);
    String name = in.string(4096);
    vfs.remove(dir, name, directory);
    out.int32(0);
    wcc(out, dir);
  }

  private void rename(Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage, NfsException {
    Handle from = fh(in);
    String fromName = in.string(4096);
    Handle to = fh(in);
    String toName = in.string(4096);
    vfs.rename(from, fromName, to, toName);
    out.int32(0);
    wcc(out, from);
    wcc(out, to);
  }

  private void readdir(Xdr.Reader in, Xdr.Writer out, boolean plus) throws Xdr.Garbage, NfsException {
    Handle dir = fh(in);
    long cookie = in.hyper();
    byte[] verifier = in.fixed(8);
    long dircount = in.uint32();
    long maxcount = plus ? in.uint32() : dircount;
    Listing l = vfs.list(dir, verifier, cookie);
    out.int32(0);
    postOp(out, attrOrNull(dir));
    out.fixed(l.verifier());
    // Sizes as the client counts them: maxcount the whole reply, dircount (PLUS) the
    // fileid + name + cookie part. Names are counted in bytes, not characters.
    int used = out.size() + 8;  // + the list end and eof
    long dirUsed = 0;
    int sent = 0;
    for (DirEntry e : l.entries()) {
      byte[] enc = e.encoded;
      if (enc == null) e.encoded = enc = encodePlus(e);  // READDIR sends a prefix of it
      int nameXdr = ((enc[12] & 0xff) << 24 | (enc[13] & 0xff) << 16 | (enc[14] & 0xff) << 8 | (enc[15] & 0xff));
      nameXdr = 4 + ((nameXdr + 3) & ~3);
      int entrySize = plus ? enc.length : 4 + 8 + nameXdr + 8;
      int dirSize = 8 + nameXdr + 8;
      if (used + entrySize > maxcount || (plus && dirUsed + dirSize > dircount)) {
        if (sent == 0) throw new NfsException(NfsException.TOOSMALL, "count " + maxcount + " holds no entry");
        out.bool(false).bool(false);  // no more entries here; not at the end
        return;
      }
      out.fixed(enc, 0, entrySize);  // entry sizes are multiples of 4: no padding added
      used += entrySize;
      dirUsed += dirSize;
      sent++;
    }
    out.bool(false).bool(true);  // eof
  }

  /** An entryplus3 (value_follows, fileid, name, cookie, attributes, handle); entry3 is its prefix. */
  private static byte[] encodePlus(DirEntry e) {
    Xdr.Writer w = new Xdr.Writer(160);
    w.bool(true).hyper(e.attr().fileid()).opaque(e.name().getBytes(StandardCharsets.UTF_8)).hyper(e.cookie());
    postOp(w, e.attr());
    w.bool(true).opaque(e.handle().bytes());
    return java.util.Arrays.copyOf(w.array(), w.size());
  }

  private void fsstat(Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage, NfsException {
    Handle h = fh(in);
    Attr a = vfs.getattr(h);
    out.int32(0);
    postOp(out, a);
    long big = 1L << 50;  // iRODS reports no capacity: a large, constant one
    out.hyper(big).hyper(big).hyper(big).hyper(1L << 32).hyper(1L << 32).hyper(1L << 32).int32(0);
  }

  private void fsinfo(Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage, NfsException {
    Handle h = fh(in);
    Attr a = vfs.getattr(h);
    out.int32(0);
    postOp(out, a);
    out.int32(MAX_IO).int32(MAX_IO).int32(4096)   // rtmax rtpref rtmult
        .int32(MAX_IO).int32(MAX_IO).int32(4096)  // wtmax wtpref wtmult
        .int32(64 << 10)                          // dtpref
        .hyper(Long.MAX_VALUE)                    // maxfilesize
        .int32(1).int32(0)                        // time_delta: iRODS keeps seconds
        .int32(0x0008 | 0x0010);                  // FSF3_HOMOGENEOUS | FSF3_CANSETTIME
  }

  private void pathconf(Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage, NfsException {
    Handle h = fh(in);
    Attr a = vfs.getattr(h);
    out.int32(0);
    postOp(out, a);
    out.int32(1).int32(1024).bool(true).bool(true).bool(false).bool(true);
  }

  private void commit(Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage, NfsException {
    Handle h = fh(in);
    in.hyper();
    in.uint32();
    vfs.commit(h);
    out.int32(0);
    wcc(out, h);
    out.fixed(writeVerifier);
  }
}
