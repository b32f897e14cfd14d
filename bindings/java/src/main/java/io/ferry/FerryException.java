package io.ferry;

import java.io.IOException;

/** A ferry error with no more specific Java class (the message is ferry's, unchanged). */
public class FerryException extends IOException {
  public FerryException(String message) {
    super(message);
  }

  public FerryException(String message, Throwable cause) {
    super(message, cause);
  }
}
