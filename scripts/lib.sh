# Shared by the scripts in this folder; sourced, not run.
FERRY_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export FERRY_ROOT
JOBS=${JOBS:-$(nproc)}

log() { printf '\033[1m== %s\033[0m\n' "$*" >&2; }

# configure_build DIR [cmake args...]: configure DIR with Ninja if needed, then build it.
configure_build() {
  local dir=$1; shift
  cmake -S "$FERRY_ROOT" -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir" -j "$JOBS"
}
