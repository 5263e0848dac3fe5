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
source tests/e2e/lib.sh
e2e_needs "the OAuth end-to-end test"
e2e_chromium
DIR=tests/e2e/oauth
e2e_npm_ci "$DIR"
e2e_tmp
ADMIN_KEY=$(e2e_admin_key "e2e owner")
PORT=$(e2e_free_port)
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
