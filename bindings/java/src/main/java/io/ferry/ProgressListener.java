package io.ferry;

/**
 * How far a copy has got: {@code bytesDone} written to the destination of {@code bytesTotal}
 * (-1 while unknown: a tree is copied while it is listed, and its total is known when the
 * listing ends). Called on the thread that called {@link FileSystems#copy}, at most every
 * 100 ms and once at the end with every byte done. A listener that throws stops the copy
 * (files in flight are discarded, never published), and the copy throws that same exception.
 */
@FunctionalInterface
public interface ProgressListener {
  void onProgress(long bytesDone, long bytesTotal);
}
