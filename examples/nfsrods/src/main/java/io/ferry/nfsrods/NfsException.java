package io.ferry.nfsrods;

import io.ferry.FerryAuthenticationException;
import io.ferry.FerryTimeoutException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;

/** An NFSv3 status (RFC 1813 nfsstat3) with the message that caused it. */
final class NfsException extends Exception {
  static final int PERM = 1, NOENT = 2, IO = 5, ACCES = 13, EXIST = 17, NOTDIR = 20, ISDIR = 21,
      INVAL = 22, NAMETOOLONG = 63, NOTEMPTY = 66, STALE = 70, BADHANDLE = 10001,
      BAD_COOKIE = 10003, NOTSUPP = 10004, TOOSMALL = 10005, SERVERFAULT = 10006,
      JUKEBOX = 10008;

  final int status;

  NfsException(int status, String message) {
    super(message);
    this.status = status;
  }

  /**
   * The status for an exception of ferry's Java binding (its error table, bindings/java/README.md),
   * keeping its message.
   */
  static NfsException of(Exception e) {
    String m = String.valueOf(e.getMessage());
    int status;
    if (e instanceof FileNotFoundException || e instanceof NoSuchFileException) {
      status = NOENT;
    } else if (e instanceof AccessDeniedException || e instanceof FerryAuthenticationException) {
      status = ACCES;
    } else if (e instanceof FileAlreadyExistsException) {
      status = EXIST;
    } else if (e instanceof FerryTimeoutException) {
      status = JUKEBOX;  // the client retries later
    } else if (m.contains("CAT_COLLECTION_NOT_EMPTY")) {
      status = NOTEMPTY;
    } else if (e instanceof IllegalArgumentException) {
      status = INVAL;
    } else if (e instanceof IOException) {
      status = IO;
    } else {
      status = SERVERFAULT;
    }
    NfsException n = new NfsException(status, m);
    n.initCause(e);
    return n;
  }
}
