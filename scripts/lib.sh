# Shared by the scripts in this folder; sourced, not run.
FERRY_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export FERRY_ROOT
JOBS=${JOBS:-$(nproc)}

# Every log line carries the seconds since the outermost script started
# (FERRY_T0 is inherited by the scripts it calls), so a CI log shows where
# the run's time goes.
: "${FERRY_T0:=$(date +%s)}"
export FERRY_T0
log() { printf '\033[1m== [+%ss] %s\033[0m\n' "$(($(date +%s) - FERRY_T0))" "$*" >&2; }

# configure_build DIR [cmake args...]: configure DIR with Ninja if needed, then build it.
configure_build() {
  local dir=$1; shift
  cmake -S "$FERRY_ROOT" -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir" -j "$JOBS"
}
