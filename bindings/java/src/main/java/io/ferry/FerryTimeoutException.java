package io.ferry;

/** A call's deadline passed (ferry's DeadlineExceeded). */
public class FerryTimeoutException extends FerryException {
  public FerryTimeoutException(String message) {
    super(message);
  }
}
