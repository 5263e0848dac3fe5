#!/usr/bin/env bash
# OAuth sign-in end to end (issue 15): mcp-remote (npm, pinned in tests/e2e/oauth/package-lock.json)
# started against `home-mcp serve --demo` at SECURITY_LEVEL=staging with no key; the consent page
# driven in Debian's chromium by playwright-core (sign in with an admin key, grant operator for
# one room); tools/call through mcp-remote; revoking the key ends access. See oauth/oauth.mjs.
#
# usage: tests/e2e/oauth.sh [path/to/home-mcp]   (default target/debug/home-mcp; builds nothing)
# Needs node + npm (`npm ci` on first run or when the lock file changes) and chromium (apt-get
# install chromium when missing). CHROMIUM=/path overrides /usr/bin/chromium. Screenshots go to
# target/e2e-screenshots/ (E2E_SCREENSHOTS).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${1:-target/debug/home-mcp}"
[[ -x "$BIN" ]] || { echo "binary $BIN not built (cargo build)"; exit 2; }
command -v npm >/dev/null || { echo "the OAuth end-to-end test needs node and npm"; exit 2; }
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$CHROMIUM" ]]; then
  echo "installing chromium (apt)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

DIR=tests/e2e/oauth
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

ADMIN_KEY=$("$BIN" keys generate --role admin --name "e2e owner" --json --key-store "$TMP/keys.toml" \
  | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).id))')
PORT=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
SECURITY_LEVEL=staging "$BIN" serve --demo --listen "127.0.0.1:$PORT" --key-store "$TMP/keys.toml" \
  2>"$TMP/server.log" &
PID=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  sleep 0.1
done

export HOME_MCP_URL="http://127.0.0.1:$PORT" HOME_MCP_ADMIN_KEY="$ADMIN_KEY"
export MCP_REMOTE_CONFIG_DIR="$TMP/mcp-auth"
export E2E_SCREENSHOTS="${E2E_SCREENSHOTS:-$PWD/target/e2e-screenshots}"
status=0
timeout 240 node "$DIR/oauth.mjs" || status=1
if [[ $status -ne 0 ]]; then
  echo "-- server log (last 40 lines)"; tail -n 40 "$TMP/server.log"
fi
exit $status
