# Sourced by the bench scripts: where ferry's tree, its test peers and the
# build the bench measures are, and the two tools most benches run.
#   ROOT   the checkout;  PEERS  tests/peers;
#   BUILD  $FERRY_BUILD_DIR, else build/release (another build tree, e.g.
#          while developing);  CP, WALK  its ferry-cp and ferry-walk.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PEERS="$ROOT/tests/peers"
BUILD=${FERRY_BUILD_DIR:-$ROOT/build/release}
CP="$BUILD/examples/ferry-cp"
WALK="$BUILD/examples/ferry-walk"
