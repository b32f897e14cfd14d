// The translation unit that builds the tests' precompiled header
// (FERRY_PRECOMPILED_HEADERS in tests/CMakeLists.txt); it has no code.
