package io.ferry;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Loads ferry's JNI library once: from the system property {@code ferry.native.path} when set
 * (tests, a build tree), else from the jar ({@code /native/linux-x86_64/libferry_jni.so},
 * extracted to a temporary file), so a user adds one dependency and nothing else.
 */
final class NativeLibrary {
  private static final String RESOURCE = "/native/linux-x86_64/libferry_jni.so";
  private static boolean loaded;

  private NativeLibrary() {}

  static synchronized void load() {
    if (loaded) return;
    String path = System.getProperty("ferry.native.path");
    if (path != null && !path.isEmpty()) {
      System.load(Path.of(path).toAbsolutePath().toString());
    } else {
      try (InputStream in = NativeLibrary.class.getResourceAsStream(RESOURCE)) {
        if (in == null) {
          throw new UnsatisfiedLinkError("ferry: " + RESOURCE + " is not in the jar (linux-x86_64 only)");
        }
        Path tmp = Files.createTempFile("ferry_jni", ".so");
        tmp.toFile().deleteOnExit();
        Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
        System.load(tmp.toString());
      } catch (IOException e) {
        throw new UnsatisfiedLinkError("ferry: cannot extract " + RESOURCE + ": " + e.getMessage());
      }
    }
    loaded = true;
  }
}
