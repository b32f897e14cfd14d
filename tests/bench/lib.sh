# Sourced by the bench scripts: where ferry's tree, its test peers and the
# build the bench measures are, and the two tools most benches run.
#   ROOT   the checkout;  PEERS  tests/peers;
#   BUILD  $FERRY_BUILD_DIR, else build/release (another build tree, e.g.
#          while developing);  CP, WALK  its ferry-cp and ferry-walk;
#   VENV   $BENCH_VENV, else .venv: the Python the Python benches use.
# And what the benches share: require_built (the programs a bench runs are
# built), bench_work and bench_peer (a scratch folder and the peers in it,
# stopped and removed on exit), bench_make_tree (a generated tree to serve),
# bench_random_files and tree_sum (small files to copy, and their check),
# bench_apt_install (a peer tool from apt),
# bench_python_env and bench_pip_ensure (the Python benches' venv).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PEERS="$ROOT/tests/peers"
BUILD=${FERRY_BUILD_DIR:-$ROOT/build/release}
CP="$BUILD/examples/ferry-cp"
WALK="$BUILD/examples/ferry-walk"
VENV=${BENCH_VENV:-$ROOT/.venv}

# require_built NAME FILE...: exits, naming the first FILE that is not an
# executable, when one is not built.
require_built() {
  local name=$1 file
  shift
  for file in "$@"; do
    [ -x "$file" ] || { echo "$name: $file is missing (scripts/build release)" >&2; exit 1; }
  done
}

# bench_work NAME: makes the scratch folder $WORK (/tmp/ferry-NAME-bench.*)
# holding $STATE (the peers' state) and $EXPORT (what ganesha serves); on
# exit the peers bench_peer started are stopped, last first, and $WORK is
# removed.
# BENCH_WORK_BASE (default /tmp) holds it: /dev/shm keeps a bench that
# writes GiBs (peers' vaults, local copies) off this VM's virtual disk,
# whose write-back otherwise lands as noise on whichever tool runs next.
bench_work() {
  WORK=$(mktemp -d "${BENCH_WORK_BASE:-/tmp}/ferry-$1-bench.XXXXXX")
  STATE="$WORK/state"
  EXPORT="$WORK/export"
  mkdir -p "$STATE" "$EXPORT"
  BENCH_STOPS=()
  trap bench_cleanup EXIT
}
bench_cleanup() {
  local i
  for ((i = ${#BENCH_STOPS[@]} - 1; i >= 0; i--)); do eval "${BENCH_STOPS[i]}" || true; done
  rm -rf "$WORK"
}

# bench_peer PEER ARGS...: tests/peers/PEER start ARGS..., and PEER stop
# ARGS... on exit (after bench_work). The peer's own variables (e.g.
# REDIS_PORT=0) go before the call.
bench_peer() {
  BENCH_STOPS+=("$(printf '%q ' "$PEERS/$1" stop "${@:2}")")
  "$PEERS/$1" start "${@:2}"
}

# bench_make_tree NAME DIRS FILES: generates $EXPORT/NAME (after bench_work),
# FILES empty files spread over DIRS folders (tests/bench/make_tree.py).
bench_make_tree() {
  echo "generating $EXPORT/$1 ($3 files in $2 folders) ..." >&2
  python3 "$ROOT/tests/bench/make_tree.py" "$EXPORT/$1" "$2" "$3"
}

# bench_random_files DIR N KIB: N files of KIB KiB of random bytes in DIR
# (f00000.bin ...); tree_sum DIR: one sha256 over every file below DIR
# (names and contents), to check a copied tree.
bench_random_files() {
  python3 - "$@" <<'EOF'
import os, sys
d, n, kib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    with open(os.path.join(d, f"f{i:05d}.bin"), "wb") as f:
        f.write(os.urandom(kib << 10))
EOF
}
tree_sum() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1); }

# bench_python_env NAME [MODULE[=PIP_SPEC]...]: for the benches that drive
# ferry from Python: checks that ferry-cp and ferry-walk are built, makes
# $VENV if missing and, unless BENCH_SKIP_INSTALL is set, installs
# BENCH_PACKAGE (default bindings/python; set it before the call) into it,
# incrementally; then each MODULE the bench also imports, as PIP_SPEC
# (default MODULE) if the venv lacks it (bench_pip_ensure). Sets `pip`, the
# venv's pip command, for the caller's own installs.
bench_python_env() {
  local name=$1 package=${BENCH_PACKAGE:-$ROOT/bindings/python} tool module
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
  for module in "${@:2}"; do bench_pip_ensure "${module%%=*}" "${module#*=}"; done
}

# bench_apt_install PACKAGE: installs a peer tool with apt-get, refreshing
# the package lists only if the first try fails.
bench_apt_install() {
  echo "bench: installing $1 (apt-get)" >&2
  apt-get install -y -q "$1" >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null && apt-get install -y -q "$1" >/dev/null; }
}

# bench_pip_ensure IMPORTS PACKAGE...: pip-installs PACKAGE... into $VENV
# unless its Python can already `import IMPORTS` (e.g. "boto3, irods").
bench_pip_ensure() {
  local imports=$1
  shift
  "$VENV/bin/python" -c "import $imports" 2>/dev/null ||
    "$VENV/bin/python" -m pip --disable-pip-version-check -q install "$@" >&2
}

# Timing helpers for the shell benches: `now` (seconds, ns precision),
# `elapsed_since T0`, `timed CMD...` (runs CMD quietly, prints its wall
# seconds), `median X...` and `div A B` (below).
now() { date +%s.%N; }
elapsed_since() { echo "$(now) - $1" | bc -l; }
timed() { local t0; t0=$(now); "$@" >/dev/null; elapsed_since "$t0"; }
# timed_run COMMAND...: "WALL CPU" seconds of it, CPU being the client's
# user+sys (children included); a failure ends the bench naming it.
timed_run() {
  local TIMEFORMAT='%R %U %S' out
  out=$( { time ("$@" >/dev/null 2>"$WORK/err") ; } 2>&1 ) ||
    { echo "$(basename "$0"): $* failed: $(cat "$WORK/err")" >&2; exit 1; }
  awk '{printf "%.3f %.3f\n", $1, $2 + $3}' <<<"$out"
}
# json_map NAME ASSOC [%FORMAT] LABEL=KEY...: prints "NAME":{"LABEL":value,...},
# each value ASSOC[KEY] printed with FORMAT (default %.3f): a RESULT line's
# map of figures.
json_map() {
  local name=$1 pair sep= format=%.3f
  local -n values=$2
  shift 2
  if [[ ${1-} == %* ]]; then format=$1; shift; fi
  printf '"%s":{' "$name"
  for pair in "$@"; do
    printf "%s\"%s\":$format" "$sep" "${pair%%=*}" "${values[${pair#*=}]}"; sep=,
  done
  printf '}'
}
# div A B: A / B, 0 when B is 0 (a CPU figure too small to count), for
# the *_cpu_ratio keys.
div() { echo "if ($2 == 0) 0 else $1 / $2" | bc -l; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# toxi_delay_proxy NAME UPSTREAM_PORT DELAY_MS: a toxiproxy proxy (API on
# 127.0.0.1:$TOXIPROXY_PORT) to 127.0.0.1:UPSTREAM_PORT adding DELAY_MS on
# requests and on replies; prints the port it listens on.
toxi_api() { curl -sS -f --max-time 5 -X "$1" "http://127.0.0.1:$TOXIPROXY_PORT$2" ${3:+-d "$3"}; }
toxi_delay_proxy() {
  local name=$1 upstream=$2 delay=$3 listen stream
  toxi_api DELETE "/proxies/$name" >/dev/null 2>&1 || true
  listen=$(toxi_api POST /proxies \
    "{\"name\":\"$name\",\"listen\":\"127.0.0.1:0\",\"upstream\":\"127.0.0.1:$upstream\",\"enabled\":true}" | jq -r .listen)
  for stream in upstream downstream; do
    toxi_api POST "/proxies/$name/toxics" \
      "{\"name\":\"delay_$stream\",\"type\":\"latency\",\"stream\":\"$stream\",\"attributes\":{\"latency\":$delay}}" >/dev/null
  done
  echo "${listen##*:}"
}

# bench_versitygw_bucket: (after bench_work) starts versitygw on
# $VERSITYGW_PORT (7070) with the bucket "bench" ($DATA/bench in its posix
# store), exports the AWS environment every S3 tool here reads (no ~/.aws),
# and defines REMOTE (rclone's connection string for the bucket) and
# rclone_ (rclone without a config file; rclone's S3 backend refuses any
# AWS_CA_BUNDLE, even for http://, and some machines export one).
bench_versitygw_bucket() {
  bench_peer versitygw "$STATE/versitygw"
  DATA="$STATE/versitygw/data"
  mkdir -p "$DATA/bench"  # a folder of the posix store is a bucket
  export AWS_ACCESS_KEY_ID=AKIDLOCAL AWS_SECRET_ACCESS_KEY=SECRETLOCAL AWS_REGION=us-east-1
  export AWS_ENDPOINT_URL="http://127.0.0.1:${VERSITYGW_PORT:-7070}"
  export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true
  REMOTE=":s3,provider=Other,env_auth=true,endpoint='$AWS_ENDPOINT_URL':bench"
}
rclone_() { env -u AWS_CA_BUNDLE rclone --config /dev/null "$@"; }
