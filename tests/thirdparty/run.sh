#!/usr/bin/env bash
# Third-party Loxone clients against the simulator (issues 13, 32), each using other parts of
# the protocol: Loxone's own JavaScript library lxcommunicator (npm; getjwt and commands in
# fenc, authwithtoken), node-lox-ws-api (npm; legacy gettoken with SHA1 hashes, everything in
# enc with a NUL and PKCS#7 padding, the structure file over the socket; against a second
# simulator started with --hash-alg sha1), loxwebsocket (PyPI, adapted from PyLoxone; Basic
# auth over HTTP, enc with the echo decrypted), loxws (PyPI; an AES-128 session key, fenc
# with nextSalt) and pyloxone-api (PyPI; Basic auth over HTTP, enc with a NUL and PKCS#7,
# getkey + authwithtoken with its saved token; in a venv of its own, see
# requirements-pyloxone.txt). Each logs in, reads the structure file, receives the initial tables, reads a
# Switch of the demo house through the dev/ (XML) flavour and switches it on, off and on,
# checking the answers and the change events (tests/thirdparty/*_check.{js,py}).
#
# usage: tests/thirdparty/run.sh [path/to/home-mcp]   (default target/debug/home-mcp, built
#   with cargo when missing)
# Starts `home-mcp sim` with the demo house on a free loopback port, installs the pinned
# packages (tests/thirdparty/node/package-lock.json with npm ci, requirements.txt with pip into
# a venv; both under target/thirdparty/, reinstalled only when the pins change), runs both
# drivers (each bounded by `timeout`), stops the simulators and prints one verdict line per
# library. Exits 1 if any fails. Needs node + npm and python3 with venv.
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
  echo "thirdparty: npm ci (lxcommunicator, node-lox-ws-api)"
  rm -rf "$WORK/node" && mkdir -p "$WORK/node"
  cp "$DIR/node/package.json" "$DIR/node/package-lock.json" "$WORK/node/"
  (cd "$WORK/node" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)
  stamp node "$DIR/node/package-lock.json"
fi
if ! installed venv "$DIR/requirements.txt"; then
  echo "thirdparty: pip install (loxwebsocket, loxws)"
  rm -rf "$WORK/venv"
  python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install --quiet --disable-pip-version-check -r "$DIR/requirements.txt"
  stamp venv "$DIR/requirements.txt"
fi
if ! installed venv-pyloxone "$DIR/requirements-pyloxone.txt"; then
  echo "thirdparty: pip install --no-deps (pyloxone-api; see requirements-pyloxone.txt)"
  rm -rf "$WORK/venv-pyloxone"
  python3 -m venv "$WORK/venv-pyloxone"
  "$WORK/venv-pyloxone/bin/pip" install --quiet --disable-pip-version-check --no-deps \
    -r "$DIR/requirements-pyloxone.txt"
  stamp venv-pyloxone "$DIR/requirements-pyloxone.txt"
fi

LOG=$(mktemp)
LOG1=$(mktemp)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -f "$LOG" "$LOG1"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
# start_sim PORT LOG ARGS...: the demo house on PORT, waiting (bounded) until it answers.
start_sim() {
  local port=$1 log=$2
  shift 2
  "$BIN" sim --structure assets/demo-house.json --listen "127.0.0.1:$port" --user demo --password demo \
    "$@" 2>"$log" &
  PIDS+=($!)
  for _ in $(seq 1 100); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/jdev/cfg/api', timeout=1)" \
      2>/dev/null && return 0
    sleep 0.1
  done
  echo "thirdparty: the simulator on port $port did not come up" >&2
  return 1
}
PORT=$(free_port)
start_sim "$PORT" "$LOG"
# Firmware before 10.3 hashes passwords with SHA1 only (node-lox-ws-api knows nothing else).
PORT_SHA1=$(free_port)
start_sim "$PORT_SHA1" "$LOG1" --hash-alg sha1

version() { # the pinned version of a package in a pin file
  case $1 in
    lxcommunicator | node-lox-ws-api) sed -n "s/.*\"$1\": \"\(.*\)\".*/\1/p" "$DIR/node/package.json" ;;
    loxwebsocket | loxws) sed -n "s/^$1==//p" "$DIR/requirements.txt" ;;
    pyloxone-api) sed -n "s/^$1==//p" "$DIR/requirements-pyloxone.txt" ;;
  esac
}

declare -A VERDICT
status=0
run() { # NAME PORT COMMAND...
  local name=$1 port=$2 rc=0 start=$SECONDS
  shift 2
  echo "== thirdparty: $name $(version "$name")"
  timeout "$DRIVER_TIMEOUT" "$@" "127.0.0.1:$port" demo demo || rc=$?
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
NODE_PATH="$PWD/$WORK/node/node_modules" run lxcommunicator "$PORT" node "$DIR/lxcommunicator_check.js"
NODE_PATH="$PWD/$WORK/node/node_modules" run node-lox-ws-api "$PORT_SHA1" node "$DIR/nodeloxwsapi_check.js"
run loxwebsocket "$PORT" "$WORK/venv/bin/python" "$DIR/loxwebsocket_check.py"
run loxws "$PORT" "$WORK/venv/bin/python" "$DIR/loxws_check.py"
run pyloxone-api "$PORT" "$WORK/venv-pyloxone/bin/python" "$DIR/pyloxone_check.py"

if [[ $status -ne 0 ]]; then
  echo "-- simulator log (last 30 lines)"
  tail -n 30 "$LOG"
  echo "-- SHA1 simulator log (last 15 lines)"
  tail -n 15 "$LOG1"
fi
echo "== thirdparty verdicts"
passed=0
LIBRARIES=(lxcommunicator node-lox-ws-api loxwebsocket loxws pyloxone-api)
for name in "${LIBRARIES[@]}"; do
  printf '%-16s %-8s %s\n' "$name" "$(version "$name")" "${VERDICT[$name]}"
  [[ ${VERDICT[$name]} == PASS* ]] && passed=$((passed + 1))
done
echo "thirdparty: $passed passed, $((${#LIBRARIES[@]} - passed)) failed"
exit $status
