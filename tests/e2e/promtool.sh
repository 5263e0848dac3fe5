#!/usr/bin/env bash
# GET /metrics of `home-mcp serve --demo` through `promtool check metrics` (issue 7): starts the
# server on a free loopback port (development level: /metrics follows the anonymous rule), makes
# a few MCP calls so counters and histograms have series, scrapes, and fails on any problem
# promtool reports (format errors and lint findings alike).
# Usage: tests/e2e/promtool.sh [path/to/home-mcp]   (default target/debug/home-mcp)
set -euo pipefail
BIN="${1:-target/debug/home-mcp}"
command -v promtool >/dev/null || { echo "promtool is missing" >&2; exit 1; }

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
LOG=$(mktemp)
OUT=$(mktemp)
"$BIN" serve --demo --listen "127.0.0.1:$PORT" 2>"$LOG" &
PID=$!
trap 'kill $PID 2>/dev/null || true; rm -f "$LOG" "$OUT"' EXIT
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  sleep 0.1
done

URL="http://127.0.0.1:$PORT/mcp"
H=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
SID=$(curl -sf -D - -o /dev/null "${H[@]}" "$URL" -d \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"promtool-ci","version":"1"}}}' \
  | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
[[ -n "$SID" ]] || { echo "no MCP session" >&2; cat "$LOG" >&2; exit 1; }
curl -sf -o /dev/null "${H[@]}" -H "Mcp-Session-Id: $SID" "$URL" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
curl -sf -o /dev/null "${H[@]}" -H "Mcp-Session-Id: $SID" "$URL" -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
curl -sf -o /dev/null "${H[@]}" -H "Mcp-Session-Id: $SID" "$URL" \
  -d '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_devices","arguments":{}}}'
curl -sf -o /dev/null "${H[@]}" -H "Mcp-Session-Id: $SID" "$URL" \
  -d '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}'

curl -sf -D "$OUT.head" -o "$OUT" "http://127.0.0.1:$PORT/metrics"
grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' "$OUT.head" \
  || { echo "wrong Content-Type:" >&2; cat "$OUT.head" >&2; rm -f "$OUT.head"; exit 1; }
rm -f "$OUT.head"
grep -q 'tool="list_devices",outcome="ok"' "$OUT" || { echo "tool call not counted" >&2; exit 1; }
echo "scraped $(grep -vc '^#' "$OUT") samples"
# promtool prints problems and exits non-zero on format errors; lint findings are printed too,
# so any output at all fails the check.
FINDINGS=$(promtool check metrics <"$OUT" 2>&1) || { echo "$FINDINGS" >&2; exit 1; }
if [[ -n "$FINDINGS" ]]; then
  echo "$FINDINGS" >&2
  exit 1
fi
echo "promtool check metrics: clean"
