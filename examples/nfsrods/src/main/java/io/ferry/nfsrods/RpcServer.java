package io.ferry.nfsrods;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A small ONC RPC (RFC 5531) server over TCP with record marking: one reader thread per
 * connection, calls run on a shared worker pool (so a client's pipelined READs run in
 * parallel), replies written whole under the connection's lock. AUTH_UNIX credentials are read
 * for the handlers; other flavours are accepted as uid/gid -1 (the handlers decide).
 *
 * <p>Bounds, so bad input cannot exhaust the server: a record is at most {@link #MAX_RECORD}
 * bytes (larger closes the connection), at most {@link #MAX_IN_FLIGHT} calls of one connection
 * run at once (its reader waits), at most {@link #MAX_CONNECTIONS} connections.
 *
 * <p>Thread-safe; {@link #close()} stops accepting, closes every connection and returns.
 */
final class RpcServer implements AutoCloseable {
  static final int MAX_RECORD = 4 << 20;
  static final int MAX_IN_FLIGHT = 64;
  static final int MAX_CONNECTIONS = 512;

  private static final Logger LOG = Logger.getLogger(RpcServer.class.getName());

  /** One RPC program (all its versions from {@code low} to {@code high}). */
  interface Program {
    int low();

    int high();

    /**
     * Runs procedure {@code call.proc()}, its results into {@code out}; false: no such
     * procedure (PROC_UNAVAIL).
     */
    boolean call(Call call, Xdr.Reader args, Xdr.Writer out) throws Xdr.Garbage;
  }

  /** What a handler knows of the call: who (AUTH_UNIX uid/gid, -1 without) and where from. */
  record Call(int xid, int prog, int vers, int proc, int uid, int gid, InetAddress client) {}

  private final String name;
  private final ServerSocket listener;
  private final Map<Integer, Program> programs;
  private final ExecutorService workers;
  private final Set<Socket> connections = ConcurrentHashMap.newKeySet();
  private final Thread acceptor;
  private volatile boolean closed;

  RpcServer(String name, InetAddress address, int port, Map<Integer, Program> programs,
      ExecutorService workers) throws IOException {
    this.name = name;
    this.programs = Map.copyOf(programs);
    this.workers = workers;
    listener = new ServerSocket();
    listener.setReuseAddress(true);
    listener.bind(new InetSocketAddress(address, port), 128);
    acceptor = new Thread(this::acceptLoop, name + "-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  int port() {
    return listener.getLocalPort();
  }

  private void acceptLoop() {
    while (!closed) {
      Socket s;
      try {
        s = listener.accept();
      } catch (IOException e) {
        if (!closed) LOG.log(Level.WARNING, name + ": accept failed", e);
        continue;
      }
      if (connections.size() >= MAX_CONNECTIONS) {
        LOG.warning(name + ": " + MAX_CONNECTIONS + " connections open, refusing "
            + s.getRemoteSocketAddress());
        closeQuietly(s);
        continue;
      }
      connections.add(s);
      Thread t = new Thread(() -> serve(s), name + "-conn-" + s.getPort());
      t.setDaemon(true);
      t.start();
    }
  }

  private void serve(Socket s) {
    Semaphore inFlight = new Semaphore(MAX_IN_FLIGHT);
    try (s) {
      s.setTcpNoDelay(true);
      DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(s.getInputStream(), 1 << 16));
      OutputStream out = s.getOutputStream();
      for (;;) {
        byte[] record = readRecord(in);
        if (record == null) return;
        inFlight.acquireUninterruptibly();
        try {
          workers.execute(() -> {
            try {
              byte[] reply = handle(record, s.getInetAddress());
              if (reply != null) {
                synchronized (out) {
                  out.write(reply);
                  out.flush();
                }
              }
            } catch (IOException e) {
              closeQuietly(s);
            } catch (RuntimeException e) {
              LOG.log(Level.SEVERE, name + ": call failed", e);
            } finally {
              inFlight.release();
            }
          });
        } catch (RejectedExecutionException e) {
          inFlight.release();
          return;  // shutting down
        }
      }
    } catch (EOFException | SocketException e) {
      // the client went away
    } catch (IOException e) {
      LOG.info(name + ": closed the connection from " + s.getRemoteSocketAddress() + ": " + e.getMessage());
    } finally {
      connections.remove(s);
    }
  }

  /** One record (its fragments joined), or null at a clean end of stream. */
  private byte[] readRecord(DataInputStream in) throws IOException {
    byte[] record = new byte[0];
    for (;;) {
      int mark;
      try {
        mark = in.readInt();
      } catch (EOFException e) {
        if (record.length == 0) return null;
        throw e;
      }
      int len = mark & 0x7fffffff;
      if ((long) record.length + len > MAX_RECORD) {
        throw new IOException("record of more than " + MAX_RECORD + " bytes");
      }
      int at = record.length;
      record = java.util.Arrays.copyOf(record, at + len);
      in.readFully(record, at, len);
      if (mark < 0) return record;
    }
  }

  /** The reply record (with its mark) for one call record; null to send nothing. */
  private byte[] handle(byte[] record, InetAddress client) {
    Xdr.Reader r = new Xdr.Reader(record, 0, record.length);
    Xdr.Writer w = new Xdr.Writer(256);
    w.int32(0);  // record mark, set below
    int xid;
    try {
      xid = r.int32();
      if (r.int32() != 0) return null;  // not a CALL
    } catch (Xdr.Garbage g) {
      return null;
    }
    w.int32(xid).int32(1);  // REPLY
    try {
      int rpcvers = r.int32();
      if (rpcvers != 2) {
        w.int32(1).int32(0).int32(2).int32(2);  // MSG_DENIED, RPC_MISMATCH 2..2
        return finish(w);
      }
      int prog = r.int32();
      int vers = r.int32();
      int proc = r.int32();
      int flavor = r.int32();
      byte[] cred = r.opaque(400);
      r.int32();
      r.opaque(400);  // verifier
      int uid = -1;
      int gid = -1;
      if (flavor == 1) {  // AUTH_UNIX: stamp, machine name, uid, gid, gids
        Xdr.Reader c = new Xdr.Reader(cred, 0, cred.length);
        c.int32();
        c.opaque(255);
        uid = c.int32();
        gid = c.int32();
      }
      w.int32(0).int32(0).int32(0);  // MSG_ACCEPTED, verifier AUTH_NONE
      Program p = programs.get(prog);
      if (p == null) {
        w.int32(1);  // PROG_UNAVAIL
        return finish(w);
      }
      if (vers < p.low() || vers > p.high()) {
        w.int32(2).int32(p.low()).int32(p.high());  // PROG_MISMATCH
        return finish(w);
      }
      int statusAt = w.size();
      w.int32(0);  // SUCCESS
      try {
        if (!p.call(new Call(xid, prog, vers, proc, uid, gid, client), r, w)) {
          return finish(w.truncate(statusAt).int32(3));  // PROC_UNAVAIL
        }
      } catch (RuntimeException e) {
        // A bug must still answer: a client waiting for a reply that never comes hangs.
        LOG.log(Level.SEVERE, name + ": program " + prog + " procedure " + proc + " failed", e);
        return finish(w.truncate(statusAt).int32(5));  // SYSTEM_ERR
      }
      return finish(w);
    } catch (Xdr.Garbage g) {
      LOG.fine(name + ": garbage arguments: " + g.getMessage());
      Xdr.Writer e = new Xdr.Writer(32);
      e.int32(0).int32(xid).int32(1).int32(0).int32(0).int32(0).int32(4);  // GARBAGE_ARGS
      return finish(e);
    }
  }

  private static byte[] finish(Xdr.Writer w) {
    byte[] b = java.util.Arrays.copyOf(w.array(), w.size());
    int len = b.length - 4;
    b[0] = (byte) (0x80 | (len >>> 24));
    b[1] = (byte) (len >>> 16);
    b[2] = (byte) (len >>> 8);
    b[3] = (byte) len;
    return b;
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // closing anyway
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      listener.close();
    } catch (IOException ignored) {
      // closing anyway
    }
    for (Socket s : connections) closeQuietly(s);
  }
}
