package io.ferry;

/**
 * What a path is: a protocol-neutral entry (ferry::fs::Entry). {@code kind} is one of
 * "file", "directory", "symlink", "other", "unknown"; {@code mtimeNanos} is -1 when the
 * protocol gives none; {@code id} is the object's stable id (NFS fileid, iRODS object id).
 */
public record Entry(String path, String kind, long size, long mtimeNanos, long id) {
  public boolean isFile() {
    return kind.equals("file");
  }

  public boolean isDirectory() {
    return kind.equals("directory");
  }
}
