#!/usr/bin/env bash
# Third-party Loxone clients against the simulator (issue 13): Loxone's own JavaScript library
# lxcommunicator (npm) and loxwebsocket (PyPI, the client adapted from PyLoxone, the Home
# Assistant integration) each log in with a token, receive the initial tables, send plain and
# encrypted commands to a Switch of the demo house and see its change events
# (tests/thirdparty/lxcommunicator_check.js, tests/thirdparty/loxwebsocket_check.py).
#
# usage: tests/thirdparty/run.sh [path/to/home-mcp]   (default target/debug/home-mcp, built
#   with cargo when missing)
# Starts `home-mcp sim` with the demo house on a free loopback port, installs the pinned
# packages (tests/thirdparty/node/package-lock.json with npm ci, requirements.txt with pip into
# a venv; both under target/thirdparty/, reinstalled only when the pins change), runs both
# drivers (each bounded by `timeout`), stops the simulator and prints one verdict line per
# library. Exits 1 if either fails. Needs node + npm and python3 with venv.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${1:-target/debug/home-mcp}"
DIR=tests/thirdparty
WORK=target/thirdparty
DRIVER_TIMEOUT=75
command -v npm >/dev/null || { echo "thirdparty: node and npm are needed" >&2; exit 2; }
command -v python3 >/dev/null || { echo "thirdparty: python3 is needed" >&2; exit 2; }
if [[ ! -x "$BIN" ]]; then
  cargo build --bin home-mcp
fi
mkdir -p "$WORK"

# installed NAME PIN_FILE: true when the stamp of NAME matches PIN_FILE's checksum.
installed() { [[ "$(cat "$WORK/$1.stamp" 2>/dev/null)" == "$(sha1sum "$2" | cut -d' ' -f1)" ]]; }
stamp() { sha1sum "$2" | cut -d' ' -f1 >"$WORK/$1.stamp"; }

if ! installed node "$DIR/node/package-lock.json"; then
  echo "thirdparty: npm ci (lxcommunicator)"
  rm -rf "$WORK/node" && mkdir -p "$WORK/node"
  cp "$DIR/node/package.json" "$DIR/node/package-lock.json" "$WORK/node/"
  (cd "$WORK/node" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)
  stamp node "$DIR/node/package-lock.json"
fi
if ! installed venv "$DIR/requirements.txt"; then
  echo "thirdparty: pip install (loxwebsocket)"
  rm -rf "$WORK/venv"
  python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install --quiet --disable-pip-version-check -r "$DIR/requirements.txt"
  stamp venv "$DIR/requirements.txt"
fi

LOG=$(mktemp)
PID=
cleanup() {
  if [[ -n "$PID" ]]; then
    kill "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
  fi
  rm -f "$LOG"
}
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
"$BIN" sim --structure assets/demo-house.json --listen "127.0.0.1:$PORT" --user demo --password demo \
  2>"$LOG" &
PID=$!
for _ in $(seq 1 100); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/jdev/cfg/api', timeout=1)" \
    2>/dev/null && break
  sleep 0.1
done

version() { # the pinned version of a package in a pin file
  case $1 in
    lxcommunicator) sed -n 's/.*"lxcommunicator": "\(.*\)".*/\1/p' "$DIR/node/package.json" ;;
    loxwebsocket) sed -n 's/^loxwebsocket==//p' "$DIR/requirements.txt" ;;
  esac
}

declare -A VERDICT
status=0
run() { # NAME COMMAND...
  local name=$1 rc=0 start=$SECONDS
  shift
  echo "== thirdparty: $name $(version "$name")"
  timeout "$DRIVER_TIMEOUT" "$@" "127.0.0.1:$PORT" demo demo || rc=$?
  if [[ $rc -eq 0 ]]; then
    VERDICT[$name]="PASS ($((SECONDS - start)) s)"
  else
    status=1
    if [[ $rc -eq 124 ]]; then
      VERDICT[$name]="FAIL (killed after ${DRIVER_TIMEOUT} s: hung; its last step is printed above)"
    else
      VERDICT[$name]="FAIL (exit $rc)"
    fi
  fi
}
NODE_PATH="$PWD/$WORK/node/node_modules" run lxcommunicator node "$DIR/lxcommunicator_check.js"
run loxwebsocket "$WORK/venv/bin/python" "$DIR/loxwebsocket_check.py"

if [[ $status -ne 0 ]]; then
  echo "-- simulator log (last 30 lines)"
  tail -n 30 "$LOG"
fi
echo "== thirdparty verdicts"
for name in lxcommunicator loxwebsocket; do
  printf '%-15s %-8s %s\n' "$name" "$(version "$name")" "${VERDICT[$name]}"
done
exit $status
