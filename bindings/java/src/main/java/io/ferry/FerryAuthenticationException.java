package io.ferry;

/**
 * The server refused the login (ferry's Unauthenticated: a wrong iRODS password, a bad S3
 * signature). An IOException, as the rest of ferry's errors, so one {@code catch (IOException)}
 * covers a failed call whatever the cause.
 */
public class FerryAuthenticationException extends FerryException {
  public FerryAuthenticationException(String message) {
    super(message);
  }
}
