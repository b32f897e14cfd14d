# Sourced by the ferry-cp / ferry-walk tests after their arguments:
#   source "$(dirname "$0")/lib.sh" NAME
# A scratch folder $WORK (/tmp/NAME.XXXXXX, removed on exit; a test that
# has more to remove sets its own trap), the AWS environment of the
# peer_versitygw fixture's versitygw with nobody's ~/.aws in the way, and
# the PASS/FAIL bookkeeping: pass NAME, fail NAME WHY, and finish last (it
# prints the count and is the script's exit status).
WORK=$(mktemp -d "/tmp/$1.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
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
