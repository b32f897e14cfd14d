# Sourced by the ferry-cp / ferry-walk tests after their arguments:
#   source "$(dirname "$0")/lib.sh" NAME
# A scratch folder $WORK (/tmp/NAME.XXXXXX, removed on exit; a test that
# has more to remove sets its own trap), $RUN (NAME-PID-RANDOM, for the
# folders a test makes on a peer), the AWS environment of the
# peer_versitygw fixture's versitygw with nobody's ~/.aws in the way, the
# PASS/FAIL bookkeeping: pass NAME, fail NAME WHY, and finish last (it
# prints the count and is the script's exit status), and the checks the
# scripts share (expect_missing_source).
WORK=$(mktemp -d "/tmp/$1.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
RUN=$1-$$-$RANDOM
export AWS_ENDPOINT_URL="http://127.0.0.1:${VERSITYGW_PORT:-7070}"
export AWS_ACCESS_KEY_ID=AKIDLOCAL AWS_SECRET_ACCESS_KEY=SECRETLOCAL AWS_REGION=us-east-1
export HOME="$WORK/home" AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
mkdir -p "$HOME"
failures=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; failures=$((failures + 1)); }
finish() {
  echo "$failures failure(s)"
  [ "$failures" -eq 0 ]
}

# expect_missing_source NAME SOURCE DEST: "$CP" from a SOURCE that does not
# exist exits 1 with a message naming SOURCE's last component and creates
# no DEST.
expect_missing_source() {
  local name=$1 src=$2 dest=$3 err rc
  local base=${src##*/}
  base=${base%%\?*}
  err=$("$CP" --quiet "$src" "$dest" 2>&1); rc=$?
  if [ $rc -eq 1 ] && [[ $err == *"$base"* ]] && [ ! -e "$dest" ]; then pass "$name"
  else fail "$name" "rc=$rc err=$err"; fi
}
