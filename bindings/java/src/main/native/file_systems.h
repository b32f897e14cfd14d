// The native object behind io.ferry.FileSystems, shared by the JNI sources
// of what a FileSystems makes (FerryFile, the walk). Its Java handle is a
// heap std::shared_ptr<NativeFileSystems>; an open file or a walk holds a
// copy, so it stays usable after FileSystems.close() (as in Python).
//
// Thread-safety: thread-safe (the registry and the FileTable are).
#ifndef FERRY_JAVA_FILE_SYSTEMS_H_
#define FERRY_JAVA_FILE_SYSTEMS_H_

#include <memory>

#include "ferry/fs/file_table.h"
#include "ferry/fs/registry.h"
#include "ferry/runtime/runtime.h"

namespace ferry::java {

struct NativeFileSystems {
  // Members are destroyed bottom-up: open files, then the filesystems they
  // are on, then the Runtime those run on.
  std::shared_ptr<Runtime> runtime;
  std::unique_ptr<fs::FileSystemRegistry> registry;
  fs::FileTable files;
};

using FileSystemsHandle = std::shared_ptr<NativeFileSystems>;

}  // namespace ferry::java

#endif  // FERRY_JAVA_FILE_SYSTEMS_H_
