#!/usr/bin/env bash
# ferry-walk and ferry-cp -r over an iRODS collection whose catalog rows
# were edited into states a real iCAT reaches through a bad rename, a
# migration or a malicious admin (the peer_irods fixture's SQLite catalog,
# edited behind the peer's back): collections and data objects with empty
# names, "." and "..", a '/' inside a name, an absolute name, a collection
# whose stored path escapes its parent. Both tools must finish, copy every
# good file, refuse and name every bad entry exactly once, exit 1, and write
# nothing outside the destination.
#   ferry_walk_hostile_irods_test.sh FERRY_CP FERRY_WALK PYTHON_WITH_PRC CATALOG_DB
set -uo pipefail
CP=${1:?usage: ferry_walk_hostile_irods_test.sh FERRY_CP FERRY_WALK PYTHON CATALOG_DB}
WALK=${2:?}
PY=${3:?}
DB=${4:?}
source "$(dirname "$0")/lib.sh" ferry-walk-hostile
export IRODS_PASSWORD=rods
PORT=${IRODS_PEER_PORT:-1247}
COLL=/tempZone/home/rods/$RUN
IR="irods://rods@127.0.0.1:$PORT$COLL"
[ -f "$DB" ] || { echo "FAIL Setup: no SQLite catalog at $DB (IRODS_PEER_DB set?)"; exit 1; }
# Every command below is bounded: a walk that never ends fails the test
# instead of hanging it.
bounded() { timeout -k 5 60 "$@"; }

mkdir -p "$WORK/src/sub"
echo good1 >"$WORK/src/good1"
echo good2 >"$WORK/src/sub/good2"
bounded "$CP" --quiet -r "$WORK/src" "$IR/t2" || { echo "FAIL Setup: could not upload the tree"; exit 1; }

# The edits: rows copied from the good ones, with hostile names. Eight
# entries in all, each of which the walk must refuse once.
"$PY" - "$DB" "$COLL/t2" <<'PYEOF' || { echo "FAIL Setup: catalog edit"; exit 1; }
import sqlite3, sys
db, t2 = sys.argv[1], sys.argv[2]
c = sqlite3.connect(db, timeout=30)
coll_id, = c.execute("SELECT coll_id FROM r_coll_main WHERE coll_name = ?", (t2,)).fetchone()

def new_id(kind):
    # From the peer's own allocator, so its later ids never collide.
    return c.execute("INSERT INTO r_objectid (kind) VALUES (?)", (kind,)).lastrowid

cols = [r[1] for r in c.execute("PRAGMA table_info(r_coll_main)")]
for stored in (t2 + "/", t2 + "/../../escape3", t2 + "/.", t2 + "/.."):
    next_id = new_id("coll")
    sel = ", ".join({"coll_id": ":id", "coll_name": ":name", "parent_coll_name": ":parent"}.get(k, k)
                    for k in cols)
    c.execute(f"INSERT INTO r_coll_main ({', '.join(cols)}) SELECT {sel} FROM r_coll_main WHERE coll_id = :of",
              {"id": next_id, "name": stored, "parent": t2, "of": coll_id})
    c.execute("INSERT INTO r_objt_access SELECT ?, user_id, access_type_id, create_ts, modify_ts "
              "FROM r_objt_access WHERE object_id = ?", (next_id, coll_id))
good_id, = c.execute("SELECT data_id FROM r_data_main WHERE coll_id = ? AND data_name = 'good1'",
                     (coll_id,)).fetchone()
cols = [r[1] for r in c.execute("PRAGMA table_info(r_data_main)")]
for name in ("", "..", "a/b", "/tmp/x"):
    next_id = new_id("data")
    sel = ", ".join({"data_id": "?", "data_name": "?"}.get(k, k) for k in cols)
    c.execute(f"INSERT INTO r_data_main ({', '.join(cols)}) SELECT {sel} FROM r_data_main WHERE data_id = ?",
              (next_id, name, good_id))
    c.execute("INSERT INTO r_objt_access SELECT ?, user_id, access_type_id, create_ts, modify_ts "
              "FROM r_objt_access WHERE object_id = ?", (next_id, good_id))
c.commit()
PYEOF
REFUSED=8

out=$(bounded "$WALK" "$IR/t2" --list 2>"$WORK/walk.err"); rc=$?
refusals=$(grep -c "warning: .*refused" "$WORK/walk.err")
if [ $rc -eq 1 ] && [ "$refusals" -eq $REFUSED ] && grep -q "good1" <<<"$out" &&
   grep -q "sub/good2" <<<"$out" && ! grep -q "escape3" <<<"$out" &&
   [ "$(grep -c . <<<"$out")" -eq 3 ]; then
  pass WalkEndsListsTheGoodEntriesAndRefusesEachBadOneOnce
else fail WalkEndsListsTheGoodEntriesAndRefusesEachBadOneOnce \
  "rc=$rc refusals=$refusals out=$(head -c 400 <<<"$out") err=$(head -c 1500 "$WORK/walk.err")"; fi

# The raw names are named: the empty one quoted, the escaping one whole.
if grep -q 'refused "" listed in' "$WORK/walk.err" && grep -q 'refused "../../escape3"' "$WORK/walk.err" &&
   grep -q 'refused "/tmp/x"' "$WORK/walk.err" && grep -q 'refused "a/b"' "$WORK/walk.err"; then
  pass WalkNamesEachRefusedEntryAsListed
else fail WalkNamesEachRefusedEntryAsListed "$(head -c 1500 "$WORK/walk.err")"; fi

json=$(bounded "$WALK" "$IR/t2" --json 2>/dev/null)
if grep -q "\"entries_refused\":$REFUSED" <<<"$json"; then pass WalkJsonCountsRefusedEntries
else fail WalkJsonCountsRefusedEntries "$json"; fi

mkdir -p "$WORK/out"
summary=$(bounded "$CP" --json -r "$IR/t2" "$WORK/out/dst" 2>"$WORK/cp.err"); rc=$?
refusals=$(grep -c "refused" "$WORK/cp.err")
if [ $rc -eq 1 ] && [ "$(cat "$WORK/out/dst/good1")" = good1 ] &&
   [ "$(cat "$WORK/out/dst/sub/good2")" = good2 ] && [ "$refusals" -eq $REFUSED ] &&
   grep -q "\"entries_refused\":$REFUSED" <<<"$summary" && grep -q '"files_failed":0' <<<"$summary"; then
  pass CopyEndsCopiesTheGoodFilesAndReportsEachRefusalOnce
else fail CopyEndsCopiesTheGoodFilesAndReportsEachRefusalOnce \
  "rc=$rc refusals=$refusals summary=$summary err=$(head -c 1500 "$WORK/cp.err")"; fi

# Nothing outside the destination, and nothing made for a refused name.
made=$(cd "$WORK/out" && find . | sort | tr '\n' ' ')
if [ "$made" = ". ./dst ./dst/good1 ./dst/sub ./dst/sub/good2 " ] && [ ! -e "$WORK/escape3" ]; then
  pass CopyWritesNothingOutsideTheDestination
else fail CopyWritesNothingOutsideTheDestination "$made"; fi

finish
