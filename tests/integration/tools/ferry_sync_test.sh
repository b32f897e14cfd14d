#!/usr/bin/env bash
# ferry-sync and ferry-cp's sync flags against real peers: a local tree
# synced to NFS (peer_ganesha), S3 (peer_versitygw), iRODS (peer_irods)
# and a local directory, then back from S3 and NFS. Each destination keeps
# the source's modification times (read back by tools ferry did not write:
# stat on the export, the AWS CLI's head-object, python-irodsclient), a
# rerun copies nothing, a change copies only what changed, --delete
# removes what the source lacks (never after a failure, never more than
# --max-delete), --dry-run changes nothing, filters follow rclone's globs.
#   ferry_sync_test.sh FERRY_CP FERRY_SYNC EXPORT_DIR PYTHON_WITH_PRC
set -uo pipefail
CP=${1:?usage: ferry_sync_test.sh FERRY_CP FERRY_SYNC EXPORT_DIR PYTHON}
SYNC=${2:?}
EXPORT=${3:?}
PY=${4:?}
source "$(dirname "$0")/lib.sh" ferry-sync
trap 'rm -rf "$WORK" "$EXPORT/$RUN"' EXIT
export IRODS_PASSWORD=rods
IRODS_PORT=${IRODS_PEER_PORT:-1247}
IR_COLL=/tempZone/home/rods/$RUN
BUCKET=ferry-sync-$$
mkdir -p "$EXPORT/$RUN"
"$CP" --quiet --make-bucket "$0" "s3://$BUCKET/seed" >/dev/null || fail Setup "no bucket"

declare -A DEST=(
  [local]="$WORK/copy"
  [nfs]="nfs://127.0.0.1/export/$RUN/copy?nfsport=2049&mountport=20048"
  [s3]="s3://$BUCKET/copy"
  [irods]="irods://rods@127.0.0.1:$IRODS_PORT$IR_COLL/copy"
)

# A tree of 12 files with known times (whole seconds: iRODS keeps those).
make_tree() {
  rm -rf "$WORK/src"
  mkdir -p "$WORK/src/d/e"
  for i in $(seq 1 5); do echo "file $i" >"$WORK/src/f$i.txt"; done
  for i in $(seq 1 5); do echo "deep $i" >"$WORK/src/d/e/g$i.txt"; done
  echo scratch >"$WORK/src/notes.tmp"
  head -c 70000 /dev/urandom >"$WORK/src/d/big.bin"
  find "$WORK/src" -type f -exec touch -d '2024-05-01 12:00:00 UTC' {} +
}
field() { jq -r ".$1" <<<"$2"; }  # field NAME JSON

# The source's mtime of FILE as the destination kind reports it.
dest_mtime() {  # dest_mtime KIND REL
  case $1 in
    local) stat -c %Y "$WORK/copy/$2" ;;
    nfs) stat -c %Y "$EXPORT/$RUN/copy/$2" ;;
    s3) aws s3api head-object --bucket "$BUCKET" --key "copy/$2" --query Metadata.mtime --output text |
          cut -d. -f1 ;;
    irods) dest_mtime_of "$IR_COLL/copy/$2" ;;
  esac
}
# An iRODS object's modification time by logical path (python-irodsclient).
dest_mtime_of() {
  "$PY" - "$1" <<PYEOF
import sys, calendar
from irods.session import iRODSSession
with iRODSSession(host="127.0.0.1", port=$IRODS_PORT, user="rods", password="rods", zone="tempZone") as s:
    print(calendar.timegm(s.data_objects.get(sys.argv[1]).modify_time.utctimetuple()))
PYEOF
}
want_mtime=$(date -d '2024-05-01 12:00:00 UTC' +%s)

for kind in local nfs s3 irods; do
  make_tree
  dst=${DEST[$kind]}
  out=$("$SYNC" --json "$WORK/src" "$dst" 2>"$WORK/err"); rc=$?
  if [ $rc -eq 0 ] && [ "$(field copied "$out")" = 12 ] && [ "$(field skipped "$out")" = 0 ]; then
    pass "${kind}_FirstSyncCopiesEveryFile"
  else fail "${kind}_FirstSyncCopiesEveryFile" "rc=$rc out=$out err=$(cat "$WORK/err")"; fi

  got=$(dest_mtime "$kind" d/e/g3.txt)
  if [ "$got" = "$want_mtime" ]; then pass "${kind}_TheCopyKeepsTheSourcesModificationTime"
  else fail "${kind}_TheCopyKeepsTheSourcesModificationTime" "got '$got', want $want_mtime"; fi

  out=$("$SYNC" --json "$WORK/src" "$dst" 2>"$WORK/err"); rc=$?
  if [ $rc -eq 0 ] && [ "$(field copied "$out")" = 0 ] && [ "$(field skipped "$out")" = 12 ] &&
     [ "$(field bytes "$out")" = 0 ]; then
    pass "${kind}_ASecondSyncCopiesNothing"
  else fail "${kind}_ASecondSyncCopiesNothing" "rc=$rc out=$out"; fi

  # One file changed (same size, other bytes), one added, one removed.
  echo "FILE 1" >"$WORK/src/f1.txt"
  echo new >"$WORK/src/d/new.txt"
  rm "$WORK/src/f5.txt"
  out=$("$SYNC" --json --dry-run "$WORK/src" "$dst" 2>"$WORK/err"); rc=$?
  again=$("$SYNC" --json --dry-run "$WORK/src" "$dst" 2>/dev/null)
  if [ $rc -eq 0 ] && [ "$(field dry_run "$out")" = true ] &&
     [ "$(jq -c '.copied_files | sort' <<<"$out")" = '["d/new.txt","f1.txt"]' ] &&
     [ "$(jq -c '.deleted_files' <<<"$out")" = '["f5.txt"]' ] && [ "$out" != "" ] &&
     [ "$(jq -c '.copied_files | sort' <<<"$again")" = '["d/new.txt","f1.txt"]' ]; then
    pass "${kind}_ADryRunListsWhatItWouldDoAndChangesNothing"
  else fail "${kind}_ADryRunListsWhatItWouldDoAndChangesNothing" "rc=$rc out=$out"; fi

  out=$("$SYNC" --json "$WORK/src" "$dst" 2>"$WORK/err"); rc=$?
  back="$WORK/back-$kind"
  "$CP" --quiet -r "$dst" "$back" 2>/dev/null
  if [ $rc -eq 0 ] && [ "$(jq -c '.copied_files | sort' <<<"$out")" = '["d/new.txt","f1.txt"]' ] &&
     [ "$(field deleted "$out")" = 1 ] && diff -r "$WORK/src" "$back" >/dev/null; then
    pass "${kind}_ASyncCopiesWhatChangedAndDeletesWhatTheSourceLacks"
  else fail "${kind}_ASyncCopiesWhatChangedAndDeletesWhatTheSourceLacks" "rc=$rc out=$out $(diff -r "$WORK/src" "$back" 2>&1 | head -3)"; fi

  out=$("$SYNC" --json --checksum "$WORK/src" "$dst" 2>"$WORK/err"); rc=$?
  if [ $rc -eq 0 ] && [ "$(field copied "$out")" = 0 ]; then pass "${kind}_ChecksumFindsNothingChanged"
  else fail "${kind}_ChecksumFindsNothingChanged" "rc=$rc out=$out err=$(cat "$WORK/err")"; fi

  # Excluded files stay on both sides' terms: not copied, not deleted.
  rm "$WORK/src/notes.tmp"
  out=$("$SYNC" --json --exclude '*.tmp' "$WORK/src" "$dst" 2>"$WORK/err"); rc=$?
  if [ $rc -eq 0 ] && [ "$(field deleted "$out")" = 0 ] && [ "$(field excluded "$out")" = 0 ]; then
    pass "${kind}_DeleteKeepsFilesTheFilterExcludes"
  else fail "${kind}_DeleteKeepsFilesTheFilterExcludes" "rc=$rc out=$out"; fi

  # More deletions than --max-delete: none.
  rm "$WORK/src"/f2.txt "$WORK/src"/f3.txt
  out=$("$SYNC" --json --max-delete 2 "$WORK/src" "$dst" 2>"$WORK/err"); rc=$?
  left=$("$CP" --quiet -r --dry-run --json "$dst" "$WORK/probe-$kind" 2>/dev/null | jq .copied)
  if [ $rc -eq 1 ] && grep -q "3 files the source lacks" "$WORK/err" && [ "$left" = 12 ]; then
    pass "${kind}_MaxDeleteDeletesNothingWhenMoreWouldGo"
  else fail "${kind}_MaxDeleteDeletesNothingWhenMoreWouldGo" "rc=$rc left=$left err=$(cat "$WORK/err")"; fi
done

# --- Back the other way: what ferry put on S3 and NFS syncs back as up to date
for kind in s3 nfs; do
  rm -rf "$WORK/down"
  "$SYNC" --quiet "${DEST[$kind]}" "$WORK/down"
  out=$("$SYNC" --json "${DEST[$kind]}" "$WORK/down" 2>"$WORK/err"); rc=$?
  if [ $rc -eq 0 ] && [ "$(field copied "$out")" = 0 ] && [ "$(field skipped "$out")" -gt 0 ]; then
    pass "${kind}_ToLocalASecondSyncCopiesNothing"
  else fail "${kind}_ToLocalASecondSyncCopiesNothing" "rc=$rc out=$out"; fi
done

# --- A touched file with the same bytes costs no copy, only its time ------
make_tree
"$SYNC" --quiet "$WORK/src" "$WORK/copy2"
touch -d '2024-07-01 00:00:00 UTC' "$WORK/src/f2.txt"
out=$("$SYNC" --json "$WORK/src" "$WORK/copy2" 2>"$WORK/err"); rc=$?
if [ $rc -eq 0 ] && [ "$(field copied "$out")" = 0 ] && [ "$(field times_updated "$out")" = 1 ] &&
   [ "$(stat -c %Y "$WORK/copy2/f2.txt")" = "$(date -d '2024-07-01 00:00:00 UTC' +%s)" ]; then
  pass ATouchedFileIsNotCopiedOnlyItsTimeSet
else fail ATouchedFileIsNotCopiedOnlyItsTimeSet "rc=$rc out=$out"; fi

# --- --delete never runs after a failure -----------------------------------
make_tree
"$SYNC" --quiet "$WORK/src" "$WORK/copy3"
echo extra >"$WORK/copy3/extra.txt"
chmod 000 "$WORK/src/f1.txt"
echo changed-size >"$WORK/src/f4.txt"
if [ "$(id -u)" != 0 ]; then
  out=$("$SYNC" --json "$WORK/src" "$WORK/copy3" 2>"$WORK/err"); rc=$?
  if [ $rc -eq 1 ] && [ -e "$WORK/copy3/extra.txt" ] && [ "$(field deleted "$out")" = 0 ]; then
    pass DeleteDeletesNothingAfterAFailedCopy
  else fail DeleteDeletesNothingAfterAFailedCopy "rc=$rc out=$out"; fi
else
  # root reads a 000 file: make the failure a directory in the way instead.
  chmod 644 "$WORK/src/f1.txt"
  rm "$WORK/copy3/f3.txt" && mkdir "$WORK/copy3/f3.txt" && touch "$WORK/copy3/f3.txt/x"
  echo changed-size-too >"$WORK/src/f3.txt"
  out=$("$SYNC" --json "$WORK/src" "$WORK/copy3" 2>"$WORK/err"); rc=$?
  if [ $rc -eq 1 ] && [ -e "$WORK/copy3/extra.txt" ] && [ "$(field deleted "$out")" = 0 ] &&
     grep -q "nothing deleted" <<<"$out$(cat "$WORK/err")"; then
    pass DeleteDeletesNothingAfterAFailedCopy
  else fail DeleteDeletesNothingAfterAFailedCopy "rc=$rc out=$out err=$(cat "$WORK/err")"; fi
fi

# --- ferry-cp: reruns skip by default, --ignore-times copies ---------------
make_tree
"$CP" --quiet -r "$WORK/src" "$WORK/cp"
out=$("$CP" --json -r "$WORK/src" "$WORK/cp" 2>/dev/null)
all=$("$CP" --json -r --ignore-times "$WORK/src" "$WORK/cp" 2>/dev/null)
if [ "$(field copied "$out")" = 0 ] && [ "$(field copied "$all")" = 12 ]; then
  pass FerryCpRerunSkipsUpToDateFilesUnlessIgnoreTimes
else fail FerryCpRerunSkipsUpToDateFilesUnlessIgnoreTimes "rerun=$out all=$all"; fi

# --- Filters as rclone's documentation has them ----------------------------
make_tree
printf '# keep the deep g1 only\n+ /d/e/g1.txt\n- /d/**\n- *.tmp\n' >"$WORK/rules"
out=$("$CP" --json -r --filter-from "$WORK/rules" "$WORK/src" "$WORK/filtered" 2>"$WORK/err"); rc=$?
got=$(cd "$WORK/filtered" && find . -type f | sort | tr '\n' ' ')
if [ $rc -eq 0 ] && [ "$got" = "./d/e/g1.txt ./f1.txt ./f2.txt ./f3.txt ./f4.txt ./f5.txt " ]; then
  pass FilterFromTakesTheFirstMatchingRule
else fail FilterFromTakesTheFirstMatchingRule "rc=$rc got=$got err=$(cat "$WORK/err")"; fi
out=$("$CP" --json -r --include '*.{bin,tmp}' "$WORK/src" "$WORK/included" 2>/dev/null)
got=$(cd "$WORK/included" && find . -type f | sort | tr '\n' ' ')
if [ "$got" = "./d/big.bin ./notes.tmp " ]; then pass IncludeTakesOnlyMatchingFiles
else fail IncludeTakesOnlyMatchingFiles "got=$got"; fi
err=$("$CP" -r --exclude 'a[b' "$WORK/src" "$WORK/x" 2>&1); rc=$?
if [ $rc -eq 2 ] && [[ $err == *"a[b"* ]]; then pass AMalformedPatternIsAUsageErrorNamingIt
else fail AMalformedPatternIsAUsageErrorNamingIt "rc=$rc err=$err"; fi

# --- A checksum sync keeps a multipart upload's MD5 (rclone's md5chksum) --
mkdir -p "$WORK/mp"
head -c $((9 << 20)) /dev/urandom >"$WORK/mp/nine.bin"
"$SYNC" --quiet --checksum "$WORK/mp" "s3://$BUCKET/mp"
kept=$(aws s3api head-object --bucket "$BUCKET" --key mp/nine.bin --query Metadata.md5chksum --output text)
want=$(openssl dgst -md5 -binary "$WORK/mp/nine.bin" | base64)
out=$("$SYNC" --json --checksum "$WORK/mp" "s3://$BUCKET/mp" 2>"$WORK/err"); rc=$?
etag=$(aws s3api head-object --bucket "$BUCKET" --key mp/nine.bin --query ETag --output text)
if [ $rc -eq 0 ] && [ "$kept" = "$want" ] && [[ $etag == *-* ]] && [ "$(field copied "$out")" = 0 ]; then
  pass AChecksumSyncKeepsAMultipartUploadsMd5
else fail AChecksumSyncKeepsAMultipartUploadsMd5 "rc=$rc kept=$kept want=$want etag=$etag out=$out"; fi

# --- iRODS: content compared by the server's own SHA-256 ------------------
# python-irodsclient's chksum() (the server's "sha2:") is the SHA-256 of the
# local file; a checksum rerun copies nothing; other bytes under the same
# size and time are found; a touch alone only sets the time (no transfer).
mkdir -p "$WORK/ck"
head -c 300000 /dev/urandom >"$WORK/ck/a.bin"
touch -d '2024-05-01 12:00:00 UTC' "$WORK/ck/a.bin"
CK="irods://rods@127.0.0.1:$IRODS_PORT$IR_COLL/ck"
"$SYNC" --quiet --checksum "$WORK/ck" "$CK"
prc=$("$PY" - "$IR_COLL/ck/a.bin" <<PYEOF
import sys
from irods.session import iRODSSession
with iRODSSession(host="127.0.0.1", port=$IRODS_PORT, user="rods", password="rods", zone="tempZone") as s:
    print(s.data_objects.get(sys.argv[1]).chksum())
PYEOF
)
want="sha2:$(openssl dgst -sha256 -binary "$WORK/ck/a.bin" | base64)"
again=$("$SYNC" --json --checksum "$WORK/ck" "$CK" 2>"$WORK/err")
printf 'X' | dd of="$WORK/ck/a.bin" bs=1 seek=100 conv=notrunc status=none
touch -d '2024-05-01 12:00:00 UTC' "$WORK/ck/a.bin"
changed=$("$SYNC" --json --checksum "$WORK/ck" "$CK" 2>>"$WORK/err")
touch -d '2024-06-01 12:00:00 UTC' "$WORK/ck/a.bin"
touched=$("$SYNC" --json "$WORK/ck" "$CK" 2>>"$WORK/err")
echo "irods sha2: prc=$prc local=$want; reruns copied $(field copied "$again")," \
  "$(field copied "$changed") after a change, $(field copied "$touched") after a touch" \
  "($(field times_updated "$touched") time set)"
if [ "$prc" = "$want" ] && [ "$(field copied "$again")" = 0 ]; then
  pass IrodsChecksumIsTheSha256PythonIrodsclientReads
else fail IrodsChecksumIsTheSha256PythonIrodsclientReads "prc=$prc want=$want again=$again err=$(cat "$WORK/err")"; fi
if [ "$(field copied "$changed")" = 1 ]; then pass IrodsChecksumSyncFindsOtherBytesOfTheSameSizeAndTime
else fail IrodsChecksumSyncFindsOtherBytesOfTheSameSizeAndTime "changed=$changed"; fi
if [ "$(field copied "$touched")" = 0 ] && [ "$(field times_updated "$touched")" = 1 ] &&
   [ "$(dest_mtime_of "$IR_COLL/ck/a.bin")" = "$(date -d '2024-06-01 12:00:00 UTC' +%s)" ]; then
  pass IrodsTouchedFileGetsItsTimeSetWithoutACopy
else fail IrodsTouchedFileGetsItsTimeSetWithoutACopy "touched=$touched"; fi

# --- --verify hashes both sides; --bwlimit holds the rate -----------------
head -c $((5 << 19)) /dev/urandom >"$WORK/two-and-a-half.bin"
out=$("$CP" --json --verify "$WORK/two-and-a-half.bin" "s3://$BUCKET/verified.bin" 2>"$WORK/err"); rc=$?
if [ $rc -eq 0 ] && [ "$(field copied "$out")" = 1 ]; then pass VerifyPassesAFaithfulUpload
else fail VerifyPassesAFaithfulUpload "rc=$rc out=$out err=$(cat "$WORK/err")"; fi
start=$(date +%s.%N)
"$CP" --quiet --bwlimit 1M "$WORK/two-and-a-half.bin" "$WORK/limited.bin"; rc=$?
took=$(echo "$(date +%s.%N) - $start" | bc -l)
# A second's burst (1 MiB), then 1.5 MiB at 1 MiB/s.
if [ $rc -eq 0 ] && [ "$(echo "$took >= 1.3" | bc -l)" = 1 ] &&
   cmp -s "$WORK/two-and-a-half.bin" "$WORK/limited.bin"; then
  pass BwlimitHoldsTheCopyToTheRate
else fail BwlimitHoldsTheCopyToTheRate "rc=$rc took=$took s"; fi
err=$("$CP" --bwlimit 10Q "$WORK/two-and-a-half.bin" "$WORK/x.bin" 2>&1); rc=$?
if [ $rc -eq 2 ] && [[ $err == *"10Q"* ]]; then pass ABadRateIsAUsageError
else fail ABadRateIsAUsageError "rc=$rc err=$err"; fi

# --- ferry-sync FILE DST: that one file, as rclone and cp -r take it ------
echo one >"$WORK/one.txt"
first=$("$SYNC" --json "$WORK/one.txt" "s3://$BUCKET/single/"); rc1=$?
again=$("$SYNC" --json "$WORK/one.txt" "s3://$BUCKET/single/"); rc2=$?
if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ "$(field copied "$first")" = 1 ] &&
   [ "$(field 'copied_files[0]' "$first")" = one.txt ] && [ "$(field copied "$again")" = 0 ] &&
   [ "$(field skipped "$again")" = 1 ] && [ "$(field deleted "$again")" = 0 ]; then
  pass SyncOfAFileCopiesItOnceThenLeavesIt
else fail SyncOfAFileCopiesItOnceThenLeavesIt "rc=$rc1/$rc2 first=$first again=$again"; fi

finish
