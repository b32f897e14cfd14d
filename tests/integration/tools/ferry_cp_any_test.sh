#!/usr/bin/env bash
# ferry-cp between any two of local, nfs:// (the peer_ganesha fixture's
# export) and s3:// (the peer_versitygw fixture), files and -r trees, in
# every direction, remote to remote straight through; byte for byte.
#   ferry_cp_any_test.sh PATH/TO/ferry-cp PATH/TO/ferry-walk EXPORT_DIR
set -uo pipefail
CP=${1:?usage: ferry_cp_any_test.sh FERRY_CP FERRY_WALK EXPORT_DIR}
WALK=${2:?}
EXPORT=${3:?}
source "$(dirname "$0")/lib.sh" ferry-cp-any
trap 'rm -rf "$WORK" "$EXPORT/$RUN"' EXIT
mkdir -p "$EXPORT/$RUN"
NFS="nfs://127.0.0.1/export/$RUN"
Q="?nfsport=2049&mountport=20048"
S3=s3://ferry-cp-any-$$

# A source tree: odd sizes across chunk boundaries, an empty file, depth 3.
mkdir -p "$WORK/src/d/e"
head -c $((3 << 20 | 4321)) /dev/urandom >"$WORK/src/a.bin"
head -c 70001 /dev/urandom >"$WORK/src/d/b.bin"
: >"$WORK/src/d/e/empty"
"$CP" --quiet --make-bucket "$WORK/src/a.bin" "$S3/seed" >/dev/null 2>&1 ||
  fail MakeBucket "could not create $S3"

# Single files around the triangle local -> nfs -> s3 -> local.
if "$CP" --quiet "$WORK/src/a.bin" "$NFS/a.bin$Q" &&
   "$CP" --quiet "$NFS/a.bin$Q" "$S3/one/a.bin" &&
   "$CP" --quiet "$S3/one/a.bin" "$WORK/a.back" && cmp -s "$WORK/src/a.bin" "$WORK/a.back" &&
   cmp -s "$WORK/src/a.bin" "$EXPORT/$RUN/a.bin"; then
  pass FileGoesLocalToNfsToS3ToLocalUnchanged
else fail FileGoesLocalToNfsToS3ToLocalUnchanged "bytes differ or a copy failed"; fi

# And the other way round: local -> s3 -> nfs -> local.
if "$CP" --quiet "$WORK/src/d/b.bin" "$S3/two/b.bin" &&
   "$CP" --quiet "$S3/two/b.bin" "$NFS/b.bin$Q" &&
   "$CP" --quiet "$NFS/b.bin$Q" "$WORK/b.back" && cmp -s "$WORK/src/d/b.bin" "$WORK/b.back"; then
  pass FileGoesLocalToS3ToNfsToLocalUnchanged
else fail FileGoesLocalToS3ToNfsToLocalUnchanged "bytes differ or a copy failed"; fi

# Trees: local -> nfs -> s3 -> local, and s3 -> nfs.
if "$CP" --quiet -r "$WORK/src" "$NFS/tree$Q" &&
   "$CP" --quiet -r --jobs=3 "$NFS/tree$Q" "$S3/tree/" &&
   "$CP" --quiet -r "$S3/tree/" "$WORK/tree.back" && diff -r "$WORK/src" "$WORK/tree.back" >/dev/null &&
   "$CP" --quiet -r "$S3/tree/" "$NFS/tree2$Q" && diff -r "$WORK/src" "$EXPORT/$RUN/tree2" >/dev/null; then
  pass TreesRoundTripThroughEveryProtocol
else fail TreesRoundTripThroughEveryProtocol "trees differ or a copy failed"; fi

# Within one S3 endpoint the copy is server-side, and still exact.
if "$CP" --quiet "$S3/one/a.bin" "$S3/three/a.bin" && "$CP" --quiet "$S3/three/a.bin" "$WORK/c.back" &&
   cmp -s "$WORK/src/a.bin" "$WORK/c.back"; then
  pass CopyWithinS3IsExact
else fail CopyWithinS3IsExact "bytes differ"; fi

# ferry-walk walks every scheme the same way.
n_local=$("$WALK" "$WORK/src" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["entries"])')
n_nfs=$("$WALK" "$NFS/tree$Q" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["entries"])')
n_s3=$("$WALK" "$S3/tree/" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["entries"])')
if [ "$n_local" = 5 ] && [ "$n_nfs" = 5 ] && [ "$n_s3" -ge 3 ]; then
  pass WalkCountsTheSameTreeEverywhere
else fail WalkCountsTheSameTreeEverywhere "local=$n_local nfs=$n_nfs s3=$n_s3"; fi

# A missing NFS source: exit 1, a message naming it, nothing created.
expect_missing_source MissingNfsSourceFailsWithoutCreatingAFile "$NFS/nope.bin$Q" "$WORK/nope"

# An unknown scheme is a usage error naming the known ones.
err=$("$CP" --quiet "ftp://h/x" "$WORK/x" 2>&1); rc=$?
if [ $rc -eq 2 ] && [[ $err == *s3://* ]]; then pass UnknownSchemeIsAUsageError
else fail UnknownSchemeIsAUsageError "rc=$rc err=$err"; fi

finish
