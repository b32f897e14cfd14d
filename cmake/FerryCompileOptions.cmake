# Warnings and sanitizers for ferry's own targets (never for consumers).
add_library(ferry_compile_options INTERFACE)
target_compile_options(ferry_compile_options INTERFACE
  -Wall -Wextra -Wpedantic -Wnon-virtual-dtor -Wno-missing-field-initializers)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(ferry_compile_options INTERFACE -Wshadow=local)
elseif(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  # Checks the ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED annotations.
  target_compile_options(ferry_compile_options INTERFACE -Wthread-safety)
endif()
if(FERRY_WERROR)
  target_compile_options(ferry_compile_options INTERFACE -Werror)
endif()
if(FERRY_SANITIZE)
  # Applies to everything built in this tree, tests included.
  add_compile_options(-fsanitize=${FERRY_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${FERRY_SANITIZE})
endif()
