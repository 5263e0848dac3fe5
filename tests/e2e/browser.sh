#!/usr/bin/env bash
# End-to-end in a real browser: Debian's chromium driven by playwright-core (tests/e2e/browser/)
# against the built binary (`home-mcp serve --demo`, the built-in simulated Miniserver) with a
# real key store: an admin key is generated into a temporary keys.toml first, and the server
# runs at SECURITY_LEVEL=staging so every request needs a key. demo.mjs starts its own
# `serve --demo` as the README does and follows only what it prints (issue 22).
#
# usage: tests/e2e/browser.sh [path/to/home-mcp] [test.mjs...]
#   (default binary target/debug/home-mcp; default tests: every tests/e2e/browser/*.mjs but
#   lib.mjs). Builds nothing. Screenshots go to target/e2e-screenshots/ (E2E_SCREENSHOTS).
# Needs node + npm (playwright-core from the npm registry, installed by `npm ci` on first run
# or when package-lock.json changes) and chromium (apt-get install chromium when missing; never
# a browser download by playwright). CHROMIUM=/path overrides /usr/bin/chromium.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${1:-target/debug/home-mcp}"
shift || true
[[ -x "$BIN" ]] || { echo "binary $BIN not built (cargo build)"; exit 2; }
command -v npm >/dev/null || { echo "browser tests need node and npm"; exit 2; }
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$CHROMIUM" ]]; then
  echo "installing chromium (apt)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

DIR=tests/e2e/browser
# npm ci only when the lock file changed since the last install (stamp in node_modules);
# --prefer-offline takes packages from npm's cache when it has them.
STAMP="$DIR/node_modules/.home-mcp-lock.sha1"
LOCK_SUM=$(sha1sum "$DIR/package-lock.json" | cut -d' ' -f1)
if [[ "$(cat "$STAMP" 2>/dev/null)" != "$LOCK_SUM" ]]; then
  (cd "$DIR" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)
  echo "$LOCK_SUM" > "$STAMP"
fi

TMP=$(mktemp -d)
PID=
cleanup() {
  [[ -n "$PID" ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

ADMIN_KEY=$("$BIN" keys generate --role admin --name "e2e admin" --json --key-store "$TMP/keys.toml" \
  | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).id))')
PORT=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
SECURITY_LEVEL=staging "$BIN" serve --demo --listen "127.0.0.1:$PORT" --key-store "$TMP/keys.toml" \
  >"$TMP/server.out" 2>"$TMP/server.log" &
PID=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  sleep 0.1
done

export HOME_MCP_URL="http://127.0.0.1:$PORT" HOME_MCP_ADMIN_KEY="$ADMIN_KEY" HOME_MCP_BIN="$BIN"
export E2E_SCREENSHOTS="${E2E_SCREENSHOTS:-$PWD/target/e2e-screenshots}"
if [[ $# -eq 0 ]]; then
  set -- $(cd "$DIR" && ls *.mjs | grep -v '^lib\.mjs$')
fi
status=0
for t in "$@"; do
  echo "== browser: $t"
  node "$DIR/$(basename "$t")" || status=1
done
if [[ $status -ne 0 ]]; then
  echo "-- server log (last 30 lines)"; tail -n 30 "$TMP/server.log"
fi
exit $status
