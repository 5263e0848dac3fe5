#!/usr/bin/env bash
# End-to-end in a real browser: Debian's chromium driven by playwright-core (tests/e2e/browser/)
# against the built binary (`home-mcp serve --demo`, the built-in simulated Miniserver) with a
# real key store: an admin key is generated into a temporary keys.toml first, and the server
# runs at SECURITY_LEVEL=staging so every request needs a key. demo.mjs starts its own
# `serve --demo` as the README does and follows only what it prints (issue 22).
#
# usage: tests/e2e/browser.sh [path/to/home-mcp] [test.mjs...]
#   (default binary target/debug/home-mcp; default tests: every tests/e2e/browser/*.mjs but
#   lib.mjs and visu-page.mjs, which tests/e2e/visu_page.py runs on a pending command's
#   password page). Builds nothing. Screenshots go to target/e2e-screenshots/ (E2E_SCREENSHOTS).
# Needs node + npm (playwright-core from the npm registry, installed by `npm ci` on first run
# or when package-lock.json changes) and chromium (apt-get install chromium when missing; never
# a browser download by playwright). CHROMIUM=/path overrides /usr/bin/chromium.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${1:-target/debug/home-mcp}"
shift || true
source tests/e2e/lib.sh
e2e_needs "browser tests"
e2e_chromium
DIR=tests/e2e/browser
e2e_npm_ci "$DIR"
e2e_tmp
ADMIN_KEY=$(e2e_admin_key "e2e admin")
PORT=$(e2e_free_port)
SECURITY_LEVEL=staging "$BIN" serve --demo --listen "127.0.0.1:$PORT" --key-store "$TMP/keys.toml" \
  >"$TMP/server.out" 2>"$TMP/server.log" &
PID=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  sleep 0.1
done

# The simulated Miniserver of the demo (doorbell.mjs rings its bell).
HOME_MCP_SIM=$(grep -o 'demo: simulated Miniserver at http://[0-9.:]*' "$TMP/server.log" | head -1 | sed 's/.* at //')
export HOME_MCP_URL="http://127.0.0.1:$PORT" HOME_MCP_ADMIN_KEY="$ADMIN_KEY" HOME_MCP_BIN="$BIN" HOME_MCP_SIM
export E2E_SCREENSHOTS="${E2E_SCREENSHOTS:-$PWD/target/e2e-screenshots}"
if [[ $# -eq 0 ]]; then
  set -- $(cd "$DIR" && ls *.mjs | grep -v -e '^lib\.mjs$' -e '^visu-page\.mjs$')
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
