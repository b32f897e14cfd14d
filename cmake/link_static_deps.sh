#!/usr/bin/env bash
# RULE_LAUNCH_LINK of the tools in Release (examples/CMakeLists.txt): runs
# the link command it is given with abseil's and protobuf's shared
# libraries swapped for Debian's static archives of them (libabsl-dev and
# libprotobuf-dev ship both), so a tool does not load ~30 abseil .so files
# and resolve their symbols at every start (#33). (libcrypto is no longer
# linked at all: ferry::Crypto loads it on the first hash; a libcrypto.so
# on a link line would still be swapped for its archive.)
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
