#!/usr/bin/env bash
# End-to-end: the built binary, driven by the official Python MCP SDK
# (../shared/tools/mcp-client-check.py), over stdio and over Streamable HTTP, against the
# built-in simulated Miniserver (--demo). Also checks that a control_device call made through
# the SDK changes the simulator's state as a following list_devices shows, runs a short
# session (tests/e2e/session.py; E2E_TRANSCRIPT=FILE keeps its transcript) and the human
# confirmation scenarios of issue 20 (tests/e2e/human.py) and the visualisation password page
# in headless chromium (tests/e2e/visu_page.py).
#
# usage: tests/e2e/python-sdk.sh [path/to/home-mcp]   (default: target/debug/home-mcp)
# Needs python3 with venv; the SDK is installed on first run (PyPI). Prints "N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${1:-target/debug/home-mcp}"
CHECK="${MCP_CLIENT_CHECK:-../shared/tools/mcp-client-check.py}"
[[ -x "$BIN" ]] || { echo "binary $BIN not built (cargo build)"; exit 2; }
[[ -f "$CHECK" ]] || { echo "$CHECK not found (../shared beside the checkout)"; exit 2; }

passed=0; failed=0
ok()   { echo "ok   $*"; passed=$((passed+1)); }
bad()  { echo "FAIL $*"; failed=$((failed+1)); }

run_check() { # name, args...
  local name=$1; shift
  local out
  if out=$(python3 "$CHECK" "$@" 2>/dev/null); then
    ok "$name: $(echo "$out" | tail -n1)"
  else
    bad "$name"; echo "$out" | sed 's/^/    /'
  fi
}

# 1. stdio
run_check "python-sdk stdio" --stdio -- "$BIN" stdio --demo

# 2. Streamable HTTP on a free port
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
LOG=$(mktemp)
"$BIN" serve --demo --listen "127.0.0.1:$PORT" 2>"$LOG" &
PID=$!
trap 'kill $PID 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  sleep 0.1
done
URL="http://127.0.0.1:$PORT/mcp"
run_check "python-sdk http" --http "$URL"
run_check "python-sdk sse (2024-11-05)" --sse "http://127.0.0.1:$PORT/sse"

# 3. A light really changes: control_device through the SDK, then list_devices shows it.
run_check "python-sdk control_device on" --http "$URL" --no-auto --tool control_device \
  --args '{"device":"Deckenlicht","room":"Küche","action":"on"}'
if python3 - "$URL" <<'PY'
import json, sys, urllib.request
url = sys.argv[1]
def post(body, sid=None):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if sid: h["Mcp-Session-Id"] = sid
    r = urllib.request.urlopen(urllib.request.Request(url, json.dumps(body).encode(), h))
    return r.headers.get("Mcp-Session-Id"), (json.loads(r.read() or b"null"))
sid, _ = post({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}})
post({"jsonrpc":"2.0","method":"notifications/initialized"}, sid)
def light_on():
    _, r = post({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_devices","arguments":{"room":"Küche","category":"lighting"}}}, sid)
    devs = r["result"]["structuredContent"]["data"]["devices"]
    d = next(d for d in devs if d["name"] == "Deckenlicht")
    return d["state"]["on"]
_, r = post({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"control_device","arguments":{"device":"Deckenlicht Küche","action":"off"}}}, sid)
assert not r["result"]["isError"], r
assert light_on() is False
_, r = post({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"control_device","arguments":{"device":"Deckenlicht Küche","action":"on"}}}, sid)
assert not r["result"]["isError"], r
assert light_on() is True
PY
then ok "control_device off/on seen in list_devices"; else bad "control_device off/on seen in list_devices"; fi

# 4. A home owner's session through the SDK (summary, room action, dry run, secured disarm),
# printed as a transcript. Runs in the SDK venv mcp-client-check.py prepared above.
SDK_SPEC="${MCP_CHECK_SDK:-mcp==2.3.0}"
SDK_PY="${MCP_TOOLS_CACHE:-${TMPDIR:-/tmp}/mcp-tools-cache}/py-$(printf '%s' "$SDK_SPEC" | sha1sum | cut -c1-12)/bin/python"
if [[ -x "$SDK_PY" ]] && TRANSCRIPT=$("$SDK_PY" tests/e2e/session.py "$BIN" 2>/dev/null); then
  ok "python-sdk session: $(echo "$TRANSCRIPT" | tail -n1)"
else
  bad "python-sdk session ($SDK_PY)"; echo "${TRANSCRIPT:-}" | sed 's/^/    /'
fi
[[ -n "${E2E_TRANSCRIPT:-}" ]] && echo "$TRANSCRIPT" > "$E2E_TRANSCRIPT"

# 5. Issue 20: only a person's answer (the SDK's elicitation callback: accept, decline, cancel,
# never; or no elicitation at all) lets the alarm and house-wide actions through.
if [[ -x "$SDK_PY" ]] && HUMAN=$("$SDK_PY" tests/e2e/human.py "$BIN" 2>/dev/null); then
  ok "python-sdk human confirmation: $(echo "$HUMAN" | tail -n1)"
else
  bad "python-sdk human confirmation ($SDK_PY)"; echo "${HUMAN:-}" | sed 's/^/    /'
fi

# 6. Issue 20: the visualisation password typed in headless chromium on this server's page that
# the SDK's URL-mode elicitation opens; never in an MCP message, log line or audit row. Needs
# node with tests/e2e/browser's packages and chromium (as tests/e2e/browser.sh prepares them).
if command -v node >/dev/null && [[ -d tests/e2e/browser/node_modules/playwright-core ]]; then
  if [[ -x "$SDK_PY" ]] && VISU=$("$SDK_PY" tests/e2e/visu_page.py "$BIN" 2>/dev/null); then
    ok "python-sdk + chromium password page: $(echo "$VISU" | tail -n1)"
  else
    bad "python-sdk + chromium password page ($SDK_PY)"; echo "${VISU:-}" | sed 's/^/    /'
  fi
else
  bad "python-sdk + chromium password page: run tests/e2e/browser.sh once (npm ci) first"
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
