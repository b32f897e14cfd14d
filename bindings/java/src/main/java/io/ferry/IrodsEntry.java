package io.ferry;

/** One entry of a collection listing: its last path component and what it is. */
public record IrodsEntry(String name, IrodsObjectType type, long size, long id, long modifyTime) {
  static IrodsEntry of(String name, int type, long size, long id, long modifyTime) {
    return new IrodsEntry(name, IrodsObjectType.of(type), size, id, modifyTime);
  }
}
