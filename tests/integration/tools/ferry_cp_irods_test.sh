#!/usr/bin/env bash
# ferry-cp and ferry-walk with irods:// URLs against ferry's iRODS test peer
# (the peer_irods fixture), cross-checked with python-irodsclient (what
# ferry writes PRC reads, and the reverse), and through s3:// (the
# peer_versitygw fixture); the error paths' exit codes and messages.
#   ferry_cp_irods_test.sh PATH/TO/ferry-cp PATH/TO/ferry-walk PYTHON_WITH_PRC
set -uo pipefail
CP=${1:?usage: ferry_cp_irods_test.sh FERRY_CP FERRY_WALK PYTHON}
WALK=${2:?}
PY=${3:?}
source "$(dirname "$0")/lib.sh" ferry-cp-irods
export IRODS_PASSWORD=rods
PORT=${IRODS_PEER_PORT:-1247}
COLL=/tempZone/home/rods/$RUN
IR="irods://rods@127.0.0.1:$PORT$COLL"
S3=s3://ferry-cp-irods-$$
"$PY" -c 'import irods' 2>/dev/null || { echo "FAIL python-irodsclient missing in $PY (scripts/test-irods installs it)"; exit 1; }

# python-irodsclient, for the cross-checks: prc.py put|get|ls ...
cat >"$WORK/prc.py" <<PYEOF
import sys
from irods.session import iRODSSession
with iRODSSession(host="127.0.0.1", port=$PORT, user="rods", password="rods", zone="tempZone") as s:
    op = sys.argv[1]
    if op == "put":
        s.data_objects.put(sys.argv[2], sys.argv[3])
    elif op == "get":
        s.data_objects.get(sys.argv[2], sys.argv[3])
    elif op == "mkdir":
        s.collections.create(sys.argv[2])
    elif op == "ls":
        def walk(c, prefix):
            for o in sorted(c.data_objects, key=lambda o: o.name):
                print(prefix + o.name, o.size)
            for sub in sorted(c.subcollections, key=lambda x: x.name):
                walk(sub, prefix + sub.name + "/")
        walk(s.collections.get(sys.argv[2]), "")
PYEOF

mkdir -p "$WORK/src/d/e"
head -c $((9 << 20 | 4321)) /dev/urandom >"$WORK/src/a.bin"
head -c 70001 /dev/urandom >"$WORK/src/d/b.bin"
: >"$WORK/src/d/e/empty"
"$PY" "$WORK/prc.py" mkdir "$COLL" || fail Setup "PRC could not create $COLL"

# ferry writes a tree, PRC reads every object back byte for byte.
if "$CP" --quiet -r "$WORK/src" "$IR/tree" &&
   "$PY" "$WORK/prc.py" get "$COLL/tree/a.bin" "$WORK/prc-a.bin" && cmp -s "$WORK/src/a.bin" "$WORK/prc-a.bin" &&
   "$PY" "$WORK/prc.py" get "$COLL/tree/d/b.bin" "$WORK/prc-b.bin" && cmp -s "$WORK/src/d/b.bin" "$WORK/prc-b.bin" &&
   [ "$("$PY" "$WORK/prc.py" ls "$COLL/tree" | sort)" = "$(printf 'a.bin %s\nd/b.bin 70001\nd/e/empty 0' $((9 << 20 | 4321)) | sort)" ]; then
  pass TreeWrittenByFerryReadsBackInPrc
else fail TreeWrittenByFerryReadsBackInPrc "PRC saw other bytes or names"; fi

# PRC writes (40 MiB: its parallel path), ferry reads.
head -c $((40 << 20)) /dev/urandom >"$WORK/big.bin"
if "$PY" "$WORK/prc.py" put "$WORK/big.bin" "$COLL/big.bin" &&
   "$CP" --quiet "$IR/big.bin" "$WORK/big.back" && cmp -s "$WORK/big.bin" "$WORK/big.back"; then
  pass ObjectWrittenByPrcReadsBackInFerry
else fail ObjectWrittenByPrcReadsBackInFerry "bytes differ or a copy failed"; fi

# irods -> s3 -> irods -> local, files and trees, remote to remote.
if "$CP" --quiet --make-bucket "$IR/big.bin" "$S3/big.bin" &&
   "$CP" --quiet "$S3/big.bin" "$IR/big2.bin" &&
   "$CP" --quiet "$IR/big2.bin" "$WORK/big2.back" && cmp -s "$WORK/big.bin" "$WORK/big2.back" &&
   "$CP" --quiet -r "$IR/tree" "$S3/tree/" && "$CP" --quiet -r "$S3/tree/" "$IR/tree2" &&
   "$CP" --quiet -r "$IR/tree2" "$WORK/tree2.back" && diff -r "$WORK/src" "$WORK/tree2.back" >/dev/null; then
  pass FilesAndTreesRoundTripThroughS3
else fail FilesAndTreesRoundTripThroughS3 "bytes differ or a copy failed"; fi

# ferry-walk lists the collection tree.
out=$("$WALK" "$IR/tree" --list 2>&1)
if grep -q "d/e/empty" <<<"$out" && grep -q "a.bin" <<<"$out"; then
  pass WalkListsAnIrodsTree
else fail WalkListsAnIrodsTree "$(head -c 300 <<<"$out")"; fi

# Errors: a wrong password and a missing path exit non-zero and say why.
out=$(IRODS_PASSWORD=wrong-Pw-8Kq "$CP" --progress --json "$IR/big.bin" "$WORK/x" 2>&1); rc=$?
# ... and never print the password it tried.
if [ $rc -ne 0 ] && grep -q "CAT_INVALID_AUTHENTICATION" <<<"$out" && [ ! -e "$WORK/x" ] &&
   ! grep -q "wrong-Pw-8Kq" <<<"$out"; then
  pass WrongPasswordFailsWithTheIrodsError
else fail WrongPasswordFailsWithTheIrodsError "rc=$rc: $(head -c 300 <<<"$out")"; fi
if grep -q 'the password from \$IRODS_PASSWORD was refused' <<<"$out"; then
  pass WrongPasswordNamesWhereThePasswordCameFrom
else fail WrongPasswordNamesWhereThePasswordCameFrom "$(head -c 300 <<<"$out")"; fi
out=$(env -u IRODS_PASSWORD -u IRODS_PASSWORD_FILE "$CP" "$IR/big.bin" "$WORK/x" 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q 'no password is set: ferry looked in \$IRODS_PASSWORD and \$IRODS_PASSWORD_FILE' <<<"$out" &&
   [ ! -e "$WORK/x" ]; then
  pass UnsetPasswordSaysItIsUnsetAndWhereFerryLooked
else fail UnsetPasswordSaysItIsUnsetAndWhereFerryLooked "rc=$rc: $(head -c 300 <<<"$out")"; fi
out=$("$CP" --quiet "$IR/nope" "$WORK/y" 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -qi "not.found\|USER_FILE_DOES_NOT_EXIST" <<<"$out"; then
  pass MissingPathFailsWithNotFound
else fail MissingPathFailsWithNotFound "rc=$rc: $(head -c 300 <<<"$out")"; fi

finish
