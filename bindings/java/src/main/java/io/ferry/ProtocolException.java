package io.ferry;

/** A server sent malformed data (ferry's DataLoss). */
public class ProtocolException extends FerryException {
  public ProtocolException(String message) {
    super(message);
  }
}
