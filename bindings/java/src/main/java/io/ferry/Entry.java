package io.ferry;

/**
 * What a path is: a protocol-neutral entry (ferry::fs::Entry). {@code kind} is one of
 * "file", "directory", "symlink", "other", "unknown"; {@code mtimeNanos} is -1 when the
 * protocol gives none; {@code id} is the object's stable id (NFS fileid, iRODS object id), 0
 * where there is none (S3); {@code mode} the permission bits and {@code uid}/{@code gid} the
 * numeric owner where the protocol has them, else 0.
 *
 * <p>From {@link FileSystems#stat}, {@code path} is the path asked for; from
 * {@link FileSystems#walk}, it is relative to the walk's root.
 */
public record Entry(String path, String kind, long size, long mtimeNanos, long id, int mode,
    int uid, int gid) {
  public boolean isFile() {
    return kind.equals("file");
  }

  public boolean isDirectory() {
    return kind.equals("directory");
  }
}
