package io.ferry;

/** An iRODS ObjStat: type, size, object id, modify time (epoch seconds), mode, owner, checksum. */
public record IrodsStat(
    IrodsObjectType type, long size, long id, long modifyTime, int mode, String owner, String checksum) {
  static IrodsStat of(int type, long size, long id, long modifyTime, int mode, String owner, String checksum) {
    return new IrodsStat(IrodsObjectType.of(type), size, id, modifyTime, mode, owner, checksum);
  }
}
