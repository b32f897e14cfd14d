package io.ferry;

/** One ACL entry: a user (or group) and its access ("own", "modify_object", "read_object", ...). */
public record IrodsAccess(String user, String access) {
  static IrodsAccess of(String user, String access) {
    return new IrodsAccess(user, access);
  }
}
