#!/usr/bin/env bash
# End-to-end: the official TypeScript MCP SDK clients (npm, pinned in
# tests/e2e/ts-sdk/package-lock.json: `@modelcontextprotocol/client` 2.4.0, the v2 client line,
# in the 2026-07-28 era (pinned) and the legacy era; `@modelcontextprotocol/sdk` 1.32.2, the newest
# 1.x) against `home-mcp serve --demo` over Streamable HTTP and `home-mcp stdio --demo`: lists,
# a prompt and a resource; a tool call read back at the simulator; a subscription update after a
# wall button at the simulator; a confirmation accepted and declined (see ts-sdk/e2e.mjs; in the
# 2026-07-28 era the server asks through an input_required result).
#
# usage: tests/e2e/ts-sdk.sh [path/to/home-mcp]   (default target/debug/home-mcp; builds nothing)
# Needs node >= 20 and npm (`npm ci` on first run or when the lock file changes). Loopback only.
# Prints "N passed, M failed"; exit 1 on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${1:-target/debug/home-mcp}"
source tests/e2e/lib.sh
e2e_needs "the TypeScript SDK end-to-end test"
CACHE="${MCP_TOOLS_CACHE:-${TMPDIR:-/tmp}/mcp-tools-cache}"
if [[ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]]; then
  for n in "$CACHE"/node22/node_modules/node-linux-*/bin; do [[ -x "$n/node" ]] && PATH="$n:$PATH"; done
fi
DIR=tests/e2e/ts-sdk
e2e_npm_ci "$DIR"
e2e_tmp
PORT=$(e2e_free_port)
HOME_VISU_PASS=1234 "$BIN" serve --demo --listen "127.0.0.1:$PORT" 2>"$TMP/server.log" >/dev/null &
PID=$!
SIM=$(e2e_demo_up "$PORT" "$TMP/server.log")
status=0
timeout 300 node "$DIR/e2e.mjs" --bin "$BIN" --url "http://127.0.0.1:$PORT/mcp" --sim "$SIM" || status=1
if [[ $status -ne 0 ]]; then
  echo "-- server log (last 40 lines)"; tail -n 40 "$TMP/server.log"
fi
exit $status
