# Shared by the peer scripts in this folder; sourced, not run.
#
# Every peer runs in the background, detached from the caller's terminal and
# pipes (ctest waits for a setup test's output pipes to close, so a peer
# that kept them open would hang the run), writes STATE_DIR/NAME.pid, and is
# stopped by that PID only: never by process name, so peers of other runs or
# other engineers on the same machine are left alone.
PEERS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FERRY_ROOT=${FERRY_ROOT:-$(cd "$PEERS_DIR/../.." && pwd)}
PEERS_BIN="$FERRY_ROOT/.peers/bin"

peer_log() { printf '== %s\n' "$*" >&2; }

# die MSG [LOGFILE]: prints MSG and the last lines of LOGFILE, then exits 1.
die() {
  printf 'ERROR: %s\n' "$1" >&2
  if [ -n "${2:-}" ] && [ -f "$2" ]; then
    printf -- '---- last lines of %s ----\n' "$2" >&2
    tail -n 40 "$2" >&2
    printf -- '----\n' >&2
  fi
  exit 1
}

# alive PID: true while PID exists and is not a zombie.
alive() {
  local s
  s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$s" ] && [ "$s" != Z ]
}

# pidfile_alive FILE: true if FILE names a live process.
pidfile_alive() {
  [ -f "$1" ] && alive "$(cat "$1")"
}

# spawn PIDFILE LOGFILE CMD...: starts CMD in its own session with stdin
# from /dev/null and stdout+stderr to LOGFILE, and records its PID.
spawn() {
  local pidfile=$1 logfile=$2; shift 2
  # setsid execs in place (a background child of a script is never a group
  # leader), so $! is the peer's own PID.
  setsid "$@" </dev/null >"$logfile" 2>&1 &
  echo $! >"$pidfile"
}

# stop_pidfile FILE [GRACE_SECONDS]: SIGTERM the PID in FILE, wait up to
# GRACE_SECONDS (default 5), then SIGKILL; removes FILE. Quiet if gone.
stop_pidfile() {
  local f=$1 grace=${2:-5} pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < grace * 20; i++)); do alive "$pid" || break; sleep 0.05; done
    if alive "$pid"; then
      peer_log "PID $pid did not stop in ${grace}s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for ((i = 0; i < 40; i++)); do alive "$pid" || break; sleep 0.05; done
    fi
  fi
  rm -f "$f"
}

# port_owner PORT: prints "PID (command)" of the process listening on TCP
# PORT on any address, or nothing if the port is free.
port_owner() {
  local line pid
  line=$(ss -Hltnp "sport = :$1" 2>/dev/null | head -n 1)
  [ -n "$line" ] || return 0
  pid=$(grep -o 'pid=[0-9]*' <<<"$line" | head -n 1 | cut -d= -f2)
  if [ -n "$pid" ]; then
    printf '%s (%s)' "$pid" "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-120)"
  else
    printf 'an unknown process'
  fi
}

# require_free_port PORT WHAT: fails loudly if PORT is taken.
require_free_port() {
  local owner
  owner=$(port_owner "$1")
  [ -z "$owner" ] || die "$2 needs TCP port $1, which is already in use by PID $owner. \
Stop that peer with the script that started it (tests/peers/*, by its STATE_DIR) and retry."
}

# portmapper_answers: true if a portmapper answers on 127.0.0.1:111.
portmapper_answers() {
  timeout 2 rpcinfo -p 127.0.0.1 >/dev/null 2>&1
}
