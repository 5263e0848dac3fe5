#!/usr/bin/env bash
# End-to-end: the built binary, driven by the MCP Inspector CLI (npm @modelcontextprotocol/inspector,
# pinned 2.12.0) in both protocol eras: `--protocol-era modern` (MCP 2026-07-28: server/discover,
# no session, `_meta` on every request) and `--protocol-era legacy` (initialize, a session), over
# Streamable HTTP (`serve --demo`) and stdio (`stdio --demo`): tools/list, tools/call,
# resources/read and prompts/list must exit 0 with the expected content, and modern results
# must carry the server's identity in `_meta` (legacy ones must not).
#
# Subscription updates and confirmations: the one-shot `inspector --cli` cannot do them. Its
# methods are one request each (tools/*, resources/list|read|templates/list, prompts/*,
# logging/setLevel, ...); `resources/subscribe` is refused as unsupported (a subscription needs
# a connection that outlives the command), and it connects with `elicit: false`, so it declares
# no elicitation capability and cannot be asked. What it can show is checked: arm_alarm through
# it is refused (HUMAN_CONFIRMATION_REQUIRED) and nothing reaches the simulator. The Inspector
# package's connection CLI, `mcpdo` (same npm package and version), keeps connections in a
# daemon and does both: `resources/subscribe` streams `resources/updated` lines (in the modern
# era over `subscriptions/listen`), and a tool call the server asks about returns
# `elicitationPending`, answered with `elicitation/respond`. Both eras over HTTP are checked
# with it: an update after a wall button at the simulator; arm_alarm armed at the simulator
# only after the answer; a declined disarm_alarm sends nothing (in the modern era the server
# asks through an `input_required` result, which mcpdo turns into the same `elicitationPending`).
# The alarm tools take no password: the demo's is configured (HOME_VISU_PASS). Over stdio the
# TypeScript and Python SDK scripts (tests/e2e/ts-sdk.sh, python-sdk.sh) cover both (the
# simulator of a stdio child is named only on the child's stderr, which mcpdo's daemon keeps to
# itself).
#
# usage: tests/e2e/inspector.sh [path/to/home-mcp]   (default: target/debug/home-mcp)
# Needs npm (the Inspector is fetched by npx on first use, then cached by npm); uses Node 22
# from the conformance cache (MCP_TOOLS_CACHE) when the system node is older. mcpdo's daemon
# lives in a temporary directory (MCP_INSPECTOR_DAEMON_DIR) and is stopped on exit.
# Prints "N passed, M failed"; exit 1 on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${1:-target/debug/home-mcp}"
[[ -x "$BIN" ]] || { echo "binary $BIN not built (cargo build)"; exit 2; }
CACHE="${MCP_TOOLS_CACHE:-${TMPDIR:-/tmp}/mcp-tools-cache}"
if ! command -v node >/dev/null || [[ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]]; then
  for n in "$CACHE"/node22/node_modules/node-linux-*/bin; do [[ -x "$n/node" ]] && PATH="$n:$PATH"; done
fi
INSPECTOR=(npx -y @modelcontextprotocol/inspector@2.12.0 --cli)
MCPDO=(npx -y -p @modelcontextprotocol/inspector@2.12.0 mcpdo --format json)

passed=0; failed=0
OUT=$(mktemp); ERR=$(mktemp)
LOG=$(mktemp)
WORK=$(mktemp -d)
PID=""; SUB=""
cleanup() {
  set +e
  [[ -n "$SUB" ]] && kill "$SUB" 2>/dev/null
  # mcpdo's daemon (started by the first mcpdo command, in $WORK) ends with its connections.
  [[ -n "${MCP_INSPECTOR_DAEMON_DIR:-}" ]] && timeout 30 "${MCPDO[@]}" daemon stop >/dev/null 2>&1
  [[ -n "$PID" ]] && kill "$PID" 2>/dev/null
  rm -rf "$OUT" "$ERR" "$LOG" "$WORK"
}
trap cleanup EXIT

# check NAME JQ-LIKE-PYTHON-EXPR ARGS...: runs the Inspector with ARGS; passes when it exits 0
# and the Python expression EXPR holds for its JSON output `r`.
check() {
  local name=$1 expr=$2; shift 2
  if timeout 180 "${INSPECTOR[@]}" "$@" >"$OUT" 2>"$ERR" \
     && python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if ($expr) else 1)" "$OUT"; then
    echo "ok   $name"; passed=$((passed+1))
  else
    echo "FAIL $name"; failed=$((failed+1))
    head -c 600 "$OUT" | sed 's/^/    /'; grep -v ' INFO ' "$ERR" | tail -n 5 | sed 's/^/    /'
  fi
}

MODERN='"io.modelcontextprotocol/serverInfo" in r.get("_meta", {})'
LEGACY='"io.modelcontextprotocol/serverInfo" not in r.get("_meta", {})'

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
HOME_VISU_PASS=1234 "$BIN" serve --demo --listen "127.0.0.1:$PORT" 2>"$LOG" >/dev/null &
PID=$!
source tests/e2e/lib.sh
SIM=$(e2e_demo_up "$PORT" "$LOG")
URL="http://127.0.0.1:$PORT/mcp"

for era in modern legacy; do
  [[ $era == modern ]] && META=$MODERN || META=$LEGACY
  for transport in http stdio; do
    if [[ $transport == http ]]; then T=("$URL"); else T=(); fi
    S=(); [[ $transport == stdio ]] && S=(-- "$BIN" stdio --demo)
    check "inspector $era $transport tools/list" \
      'any(t["name"] == "list_rooms" for t in r["tools"])' \
      "${T[@]}" --protocol-era "$era" --method tools/list "${S[@]}"
    check "inspector $era $transport tools/call list_rooms" \
      "r.get('isError') is not True and 'rooms' in r['content'][0]['text'] and $META" \
      "${T[@]}" --protocol-era "$era" --method tools/call --tool-name list_rooms "${S[@]}"
    check "inspector $era $transport resources/read home://lighting" \
      "r['contents'][0]['uri'] == 'home://lighting' and $META" \
      "${T[@]}" --protocol-era "$era" --method resources/read --uri home://lighting "${S[@]}"
    check "inspector $era $transport prompts/list" \
      'any(p["name"] == "house_status_report" for p in r["prompts"])' \
      "${T[@]}" --protocol-era "$era" --method prompts/list "${S[@]}"
  done
done

# ---------------------------------------------------------------- the simulator's HTTP API
# sim PATH [PY-EXPR]: GET PATH at the simulator (demo/demo); prints PY-EXPR of its `LL` (`ll`;
# default: its code).
sim() {
  curl -sf --max-time 20 -u demo:demo "$SIM$1" \
    | python3 -c "import json,sys; ll=json.load(sys.stdin)['LL']; print(${2:-ll.get('Code', ll.get('code'))})"
}
# sim_state UUID NAME: one state of a control as the simulator reports it (jdev/sps/io/UUID/all).
sim_state() {
  sim "/jdev/sps/io/$1/all" \
    "next(int(float(v['value'])) for k, v in ll.items() if k.startswith('output') and v['name'] == '$2')"
}
# control NAME ROOM: the uuid of a control, from the structure file the simulator serves.
control() {
  curl -sf --max-time 20 -u demo:demo "$SIM/data/LoxAPP3.json" | python3 -c "
import json, sys
s = json.load(sys.stdin)
found = [u for u, c in s['controls'].items()
         if c['name'] == sys.argv[1] and s['rooms'].get(c.get('room'), {}).get('name') == sys.argv[2]]
assert len(found) == 1, found
print(found[0])" "$1" "$2"
}
LIGHT=$(control Deckenlicht Küche)
ALARM=$(control Alarmanlage Zentral)

pass() { echo "ok   $1"; passed=$((passed+1)); }
fail() { echo "FAIL $1"; failed=$((failed+1)); if [[ -n "${2:-}" ]]; then head -c 600 "$2" | sed 's/^/    /'; echo; fi; }
# verdict NAME GOOD [FILE]: a check (GOOD is 1 or 0; FILE is shown on failure).
verdict() {
  if [[ $2 == 1 ]]; then pass "$1"; else fail "$1" "${3:-}"; fi
}
# pyjson FILE EXPR: prints 1 when the Python expression EXPR holds for the JSON in FILE (`r`).
pyjson() {
  python3 -c "import json,sys
try:
    r = json.load(open(sys.argv[1]))
    print(1 if ($2) else 0)
except Exception:
    print(0)" "$1"
}
# pending_id FILE: the elicitationId of an elicitationPending answer in FILE (empty if none).
pending_id() {
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['elicitationPending']['elicitationId'])" "$1" 2>/dev/null || true
}
# wait_for FILE PATTERN: waits (bounded, 20 s) until FILE contains PATTERN.
wait_for() {
  for _ in $(seq 1 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

# ---------------------------------------------------------------- one-shot CLI: cannot be asked
for era in modern legacy; do
  timeout 180 "${INSPECTOR[@]}" "$URL" --protocol-era "$era" --method tools/call --tool-name arm_alarm \
    --tool-args-json "{\"alarm\":\"$ALARM\",\"delayed\":false}" >"$OUT" 2>"$ERR" || true
  good=$(pyjson "$OUT" "'HUMAN_CONFIRMATION_REQUIRED' in r['content'][0]['text'] and r['isError'] is True")
  [[ $(sim_state "$ALARM" armed) == 0 ]] || good=0
  verdict "inspector $era http tools/call arm_alarm: refused (no elicitation capability), nothing armed at the simulator" "$good" "$OUT"
done

# ---------------------------------------------------------------- mcpdo: subscription, confirmation
export MCP_INSPECTOR_DAEMON_DIR="$WORK/daemon" MCP_CATALOG_PATH="$WORK/mcp.json"
export MCP_CLIENT_CONFIG_PATH="$WORK/client.json" MCP_INSPECTOR_SECRET_STORE=memory
MCP_INSPECTOR_DAEMON_TOKEN=$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')
export MCP_INSPECTOR_DAEMON_TOKEN
printf '{"mcpServers": {"home-legacy": {"type": "streamable-http", "url": "%s", "protocolEra": "legacy"},
  "home-modern": {"type": "streamable-http", "url": "%s", "protocolEra": "modern"}}}\n' "$URL" "$URL" \
  >"$WORK/mcp.json"
for era in modern legacy; do
  C=(--connection "home-$era")
  if ! timeout 120 "${MCPDO[@]}" connect "home-$era" >"$OUT" 2>"$ERR" \
     || [[ $(pyjson "$OUT" "r['protocolEra'] == '$era'") != 1 ]]; then
    fail "mcpdo $era http: connect" "$OUT"; tail -n 5 "$ERR" | sed 's/^/    /'; continue
  fi
  pass "mcpdo $era http: connected in the $era era"

  # A subscription (legacy: resources/subscribe; modern: subscriptions/listen), a wall button.
  timeout 120 "${MCPDO[@]}" "${C[@]}" resources/subscribe home://lighting >"$WORK/sub" 2>"$WORK/sub.err" &
  SUB=$!
  if wait_for "$WORK/sub" '"type": "subscribed"'; then
    pass "mcpdo $era http: resources/subscribe home://lighting"
    [[ $(sim_state "$LIGHT" active) == 1 ]] && cmd=off || cmd=on
    [[ $(sim "/jdev/sps/io/$LIGHT/$cmd") == 200 ]] || fail "the simulator takes $cmd for the kitchen light"
    if wait_for "$WORK/sub" '"type": "resources/updated"'; then
      pass "mcpdo $era http: resources/updated home://lighting after a wall button ($cmd) at the simulator"
    else
      fail "mcpdo $era http: resources/updated after a wall button at the simulator" "$WORK/sub"
    fi
  else
    fail "mcpdo $era http: resources/subscribe home://lighting" "$WORK/sub"
    tail -n 5 "$WORK/sub.err" | sed 's/^/    /'
  fi
  kill "$SUB" 2>/dev/null; wait "$SUB" 2>/dev/null || true; SUB=""

  # A confirmation: armed only after the answer; a declined disarm sends nothing.
  if [[ $(sim_state "$ALARM" armed) != 0 ]]; then fail "mcpdo $era http: the alarm starts disarmed"; continue; fi
  timeout 120 "${MCPDO[@]}" "${C[@]}" tools/call arm_alarm "alarm:=\"$ALARM\"" delayed:=false \
    >"$OUT" 2>"$ERR" || true
  asked=$(pyjson "$OUT" "r['elicitationPending']['message'].startswith('Arm at once the alarm Alarmanlage')")
  verdict "mcpdo $era http: arm_alarm asks the user (elicitationPending naming the alarm)" "$asked" "$OUT"
  [[ $asked == 1 && $(sim_state "$ALARM" armed) == 0 ]] && good=1 || good=0
  verdict "mcpdo $era http: nothing armed at the simulator while the question is open" "$good"
  [[ $asked == 1 ]] || continue
  timeout 120 "${MCPDO[@]}" "${C[@]}" elicitation/respond "$(pending_id "$OUT")" confirm:=true >"$OUT" 2>"$ERR" || true
  good=$(pyjson "$OUT" "json.loads(r['content'][0]['text'])['status'] == 'success'")
  [[ $(sim_state "$ALARM" armed) == 1 ]] || good=0
  verdict "mcpdo $era http: accepted, the simulator shows the alarm armed" "$good" "$OUT"

  timeout 120 "${MCPDO[@]}" "${C[@]}" tools/call disarm_alarm "alarm:=\"$ALARM\"" >"$OUT" 2>"$ERR" || true
  id=$(pending_id "$OUT"); good=0
  if [[ -n "$id" ]]; then
    timeout 120 "${MCPDO[@]}" "${C[@]}" elicitation/respond "$id" --decline >"$OUT" 2>"$ERR" || true
    good=$(pyjson "$OUT" "json.loads(r['content'][0]['text'])['data']['cancelled'] is True")
  fi
  [[ $(sim_state "$ALARM" armed) == 1 ]] || good=0
  verdict "mcpdo $era http: a declined disarm_alarm sends nothing (still armed)" "$good" "$OUT"

  timeout 120 "${MCPDO[@]}" "${C[@]}" tools/call disarm_alarm "alarm:=\"$ALARM\"" >"$OUT" 2>"$ERR" || true
  id=$(pending_id "$OUT")
  if [[ -n "$id" ]]; then
    timeout 120 "${MCPDO[@]}" "${C[@]}" elicitation/respond "$id" confirm:=true >"$OUT" 2>"$ERR" || true
  fi
  [[ $(sim_state "$ALARM" armed) == 0 ]] && good=1 || good=0
  verdict "mcpdo $era http: accepted disarm_alarm, the simulator shows it disarmed" "$good" "$OUT"
done

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
