// io.ferry.Runtime. The native object is a shared_ptr, so FileSystems made on
// it keep its threads alive after Runtime.close().
#include <memory>

#include "ferry/runtime/runtime.h"
#include "portal.h"

namespace ferry::java {

extern "C" {

JNIEXPORT jlong JNICALL Java_io_ferry_FerryRuntime_newRuntime(JNIEnv*, jclass, jint blocking_threads) {
  ferry::RuntimeOptions options;
  if (blocking_threads > 0) options.blocking_threads = blocking_threads;
  return ToHandle(new std::shared_ptr<ferry::Runtime>(std::make_shared<ferry::Runtime>(options)));
}

JNIEXPORT void JNICALL Java_io_ferry_FerryRuntime_disposeRuntime(JNIEnv*, jclass, jlong handle) {
  delete FromHandle<std::shared_ptr<ferry::Runtime>>(handle);
}

}  // extern "C"

}  // namespace ferry::java
