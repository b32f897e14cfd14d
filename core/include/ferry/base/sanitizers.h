// Which sanitizer the code is built with, for the few places that behave
// otherwise under one (GCC says so by __SANITIZE_*, clang by
// __has_feature).
//
//   if (ferry::kAddressSanitizer) { /* heap buffers, red zones around them */ }
//
// Thread-safety: constants.
#ifndef FERRY_BASE_SANITIZERS_H_
#define FERRY_BASE_SANITIZERS_H_

#if defined(__has_feature)
#define FERRY_HAS_FEATURE(x) __has_feature(x)
#else
#define FERRY_HAS_FEATURE(x) 0
#endif

namespace ferry {

#if defined(__SANITIZE_ADDRESS__) || FERRY_HAS_FEATURE(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

#if defined(__SANITIZE_THREAD__) || FERRY_HAS_FEATURE(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

}  // namespace ferry

#undef FERRY_HAS_FEATURE

#endif  // FERRY_BASE_SANITIZERS_H_
