// Deliberately empty: libferry_curl.so and libferry_crypto.so are only
// their DT_NEEDED entries, a packaged libcurl's and libcrypto's, which the
// core loads through them on first use (core_module.cmake says why).
