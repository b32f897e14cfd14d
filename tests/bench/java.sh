#!/usr/bin/env bash
# scripts/bench java: ferry from Java against the C++ tools, on the same
# peers in the same run (tests/bench/JavaBench.java measures):
#   - TtlCache hits/s from one Java thread vs the C++ TtlCache
#     (ferry_cache_bench's short path keys, run just before);
#   - one 256 MiB S3 download: FileSystems.copy in one JVM vs `ferry-cp`,
#     against the same versitygw;
#   - a 100,000-file NFS walk (1,000 dirs x 100 files, as bench nfs-walk):
#     FileSystems.walk(...).count() vs `ferry-walk`, against the same ganesha.
# Medians of RUNS (5) runs (the walk 3 x RUNS), Java and C++ interleaved,
# after one untimed, checked warm-up of each. Packs the jar (mvn, tests
# skipped) from the Release build's JNI library. Starts its own versitygw
# (127.0.0.1:7070) and ganesha (2049/20048) and stops them on exit: beside a
# test run, run it in a network namespace (FERRY_PEERS_NETNS=1).
# Each timed run also takes the client's CPU (user+sys): the JVM's own
# around a call, the child's around a C++ process. About 2 minutes. Ends
# with one line `RESULT {json}` (tests/bench/JavaBench.java lists the keys):
# download_java_vs_cpp and walk_java_vs_cpp each gain the same key +
# _cpu_ratio (C++ CPU over Java CPU), and download_cpu_s / walk_cpu_s the
# medians beside download_s / walk_s.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CACHE_BENCH="$BUILD/tests/ferry_cache_bench"
RUNS=${RUNS:-5}
DOWNLOAD_MIB=${DOWNLOAD_MIB:-256}
require_built java.sh "$CP" "$WALK" "$CACHE_BENCH"
[ -f "$BUILD/bindings/java/libferry_jni.so" ] ||
  { echo "java.sh: $BUILD/bindings/java/libferry_jni.so is missing (scripts/build release)" >&2; exit 1; }

bench_work java
mkdir -p "$WORK/home"

echo "java.sh: packing the jar ..." >&2
mvn -q -B -f "$ROOT/bindings/java/pom.xml" -DskipTests -Dferry.native.dir="$BUILD/bindings/java" package >&2
# The shaded jar carries protobuf-java: nothing else on the class path.
CLASSPATH="$(ls "$ROOT"/bindings/java/target/ferry-*.jar | head -1)"

echo "java.sh: C++ cache figure (ferry_cache_bench) ..." >&2
cpp_hits=$("$CACHE_BENCH" | sed -n 's/^RESULT //p' | python3 -c 'import json,sys; print(json.load(sys.stdin)["string_hits_per_s_1t"])')

bench_make_tree t100k 1000 100000
bench_peer ganesha "$EXPORT" "$STATE/ganesha"
bench_peer versitygw "$STATE/versitygw"

export HOME="$WORK/home" AWS_ENDPOINT_URL="http://127.0.0.1:${VERSITYGW_PORT:-7070}"
export AWS_ACCESS_KEY_ID=AKIDLOCAL AWS_SECRET_ACCESS_KEY=SECRETLOCAL AWS_REGION=us-east-1
head -c $((DOWNLOAD_MIB << 20)) /dev/urandom >"$WORK/src.bin"
sha=$(sha256sum "$WORK/src.bin" | cut -d' ' -f1)
"$CP" --quiet --make-bucket "$WORK/src.bin" s3://bench-java/big.bin
rm "$WORK/src.bin"

java -cp "$CLASSPATH" "$ROOT/tests/bench/JavaBench.java" \
  --ferry-cp="$CP" --ferry-walk="$WALK" --work="$WORK" --runs="$RUNS" \
  --cpp-cache-hits="$cpp_hits" --download-mib="$DOWNLOAD_MIB" --sha256="$sha" \
  --s3-url=s3://bench-java/big.bin \
  --nfs-url="nfs://127.0.0.1/export/t100k?nfsport=2049&mountport=20048" --walk-entries=101000
