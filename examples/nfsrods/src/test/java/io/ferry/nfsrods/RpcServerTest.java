package io.ferry.nfsrods;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.net.InetAddress;
import java.net.Socket;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The RPC layer on 127.0.0.1 with a small program: how it answers what it cannot run. */
class RpcServerTest {
  private static final int PROG = 400_000;
  private ExecutorService workers;
  private RpcServer server;

  @BeforeEach
  void start() throws Exception {
    workers = Executors.newFixedThreadPool(2);
    RpcServer.Program echo = new RpcServer.Program() {
      @Override
      public int low() {
        return 1;
      }

      @Override
      public int high() {
        return 1;
      }

      @Override
      public boolean call(RpcServer.Call call, Xdr.Reader in, Xdr.Writer out) throws Xdr.Garbage {
        if (call.proc() == 1) {
          out.string(in.string(100) + " from uid " + call.uid());
          return true;
        }
        if (call.proc() == 2) throw new IllegalStateException("a bug");
        return false;
      }
    };
    server = new RpcServer("test", InetAddress.getLoopbackAddress(), 0, Map.of(PROG, echo), workers);
  }

  @AfterEach
  void stop() {
    server.close();
    workers.shutdownNow();
  }

  private static byte[] bytes(Xdr.Writer w) {
    return java.util.Arrays.copyOf(w.array(), w.size());
  }

  /** Sends one call (AUTH_UNIX uid 42) and answers the reply's accept_stat and body reader. */
  private Xdr.Reader call(Socket s, int prog, int vers, int proc, byte[] args) throws Exception {
    Xdr.Writer cred = new Xdr.Writer(64).int32(0).string("host").int32(42).int32(7).int32(0);
    Xdr.Writer w = new Xdr.Writer(128).int32(99).int32(0).int32(2).int32(prog).int32(vers).int32(proc)
        .int32(1).opaque(cred.array(), 0, cred.size()).int32(0).int32(0).fixed(args);
    DataOutputStream out = new DataOutputStream(s.getOutputStream());
    out.writeInt(0x80000000 | w.size());
    out.write(w.array(), 0, w.size());
    DataInputStream in = new DataInputStream(s.getInputStream());
    int len = in.readInt() & 0x7fffffff;
    byte[] reply = new byte[len];
    in.readFully(reply);
    Xdr.Reader r = new Xdr.Reader(reply, 0, len);
    assertEquals(99, r.int32());
    assertEquals(1, r.int32());  // REPLY
    assertEquals(0, r.int32());  // MSG_ACCEPTED
    r.int32();
    r.opaque(400);
    return r;
  }

  @Test
  void aCallRunsItsProcedureWithTheCallersUid() throws Exception {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
      Xdr.Reader r = call(s, PROG, 1, 1, bytes(new Xdr.Writer(16).string("hi")));
      assertEquals(0, r.int32());
      assertEquals("hi from uid 42", r.string(100));
    }
  }

  @Test
  void anUnknownProgramIsProgUnavail() throws Exception {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
      assertEquals(1, call(s, 123, 1, 1, new byte[0]).int32());
    }
  }

  @Test
  void aWrongVersionIsProgMismatchNamingTheRange() throws Exception {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
      Xdr.Reader r = call(s, PROG, 3, 1, new byte[0]);
      assertEquals(2, r.int32());
      assertEquals(1, r.int32());
      assertEquals(1, r.int32());
    }
  }

  @Test
  void anUnknownProcedureIsProcUnavail() throws Exception {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
      assertEquals(3, call(s, PROG, 1, 9, new byte[0]).int32());
    }
  }

  @Test
  void argumentsThatDoNotDecodeAreGarbageArgs() throws Exception {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
      assertEquals(4, call(s, PROG, 1, 1, bytes(new Xdr.Writer(4).int32(1_000_000))).int32());
    }
  }

  @Test
  void aProcedureThatThrowsStillAnswersSystemErr() throws Exception {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
      assertEquals(5, call(s, PROG, 1, 2, new byte[0]).int32());
    }
  }

  @Test
  void aRecordOverTheLimitClosesTheConnectionAndTheServerGoesOn() throws Exception {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      out.writeInt(0x80000000 | (RpcServer.MAX_RECORD + 1));
      out.flush();
      org.junit.jupiter.api.Assertions.assertThrows(EOFException.class,
          () -> new DataInputStream(s.getInputStream()).readInt());
    }
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
      assertEquals(0, call(s, PROG, 1, 1, bytes(new Xdr.Writer(16).string("again"))).int32());
    }
  }
}
