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

# bench_python_env NAME [PACKAGE]: for the benches that drive ferry from
# Python: checks that ferry-cp and ferry-walk are built, makes $VENV if
# missing and, unless BENCH_SKIP_INSTALL is set, installs PACKAGE (default
# bindings/python) into it, incrementally. Sets `pip`, the venv's pip
# command, for the caller's own installs.
bench_python_env() {
  local name=$1 package=${2:-$ROOT/bindings/python} tool
  for tool in "$CP" "$WALK"; do
    [ -x "$tool" ] || { echo "$name: $tool is missing (scripts/build release)" >&2; exit 1; }
  done
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  pip=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
  if [ -z "${BENCH_SKIP_INSTALL:-}" ]; then
    echo "$name: pip install bindings/python (incremental)" >&2
    "${pip[@]}" install "scikit-build-core>=0.10" "pybind11>=2.12,<3" >&2
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
      "${pip[@]}" install --no-build-isolation "$package" >&2
  fi
}
