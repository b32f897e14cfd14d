package io.ferry;

/** What an iRODS logical path names (ordinals are the C++ {@code IrodsObjectType}'s). */
public enum IrodsObjectType {
  NONE,
  DATA_OBJECT,
  COLLECTION;

  static IrodsObjectType of(int ordinal) {
    return values()[ordinal];
  }
}
