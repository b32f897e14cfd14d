#!/usr/bin/env bash
# RULE_LAUNCH_LINK of the tools in Release (examples/CMakeLists.txt): runs
# the link command it is given with abseil's, protobuf's and libcrypto's
# shared libraries swapped for Debian's static archives of them
# (libabsl-dev, libprotobuf-dev and libssl-dev ship both), so a tool does
# not load ~30 abseil .so files and a 4.6 MB libcrypto and resolve their
# symbols at every start (#33; libcrypto alone is ~1.4 ms of CPU per start
# here). A libcurl loaded later for S3 brings its own shared libcrypto:
# the two copies share no objects (ferry only hashes with its own).
# CMake's imported targets name the .so files by full path, which no
# -Bstatic reaches, hence this rewrite. The archives go last, in a group
# (they refer to each other), with the libraries they need themselves
# (zlib: protobuf's gzip streams; libdl: libcrypto's providers). A .so
# without an archive beside it is kept as it was.
set -euo pipefail
args=() archives=()
for a in "$@"; do
  case "$a" in
    */libabsl_*.so* | */libprotobuf.so* | */libcrypto.so*)
      static="${a%%.so*}.a"
      if [ -f "$static" ]; then
        archives+=("$static")
        continue
      fi
      ;;
  esac
  args+=("$a")
done
if ((${#archives[@]})); then
  args+=(-Wl,--start-group "${archives[@]}" -Wl,--end-group -lz -ldl -lpthread)
fi
exec "${args[@]}"
