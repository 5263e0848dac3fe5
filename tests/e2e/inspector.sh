#!/usr/bin/env bash
# End-to-end: the built binary, driven by the MCP Inspector CLI (npm @modelcontextprotocol/inspector,
# pinned 2.12.0) in both protocol eras: `--protocol-era modern` (MCP 2026-07-28: server/discover,
# no session, `_meta` on every request) and `--protocol-era legacy` (initialize, a session), over
# Streamable HTTP (`serve --demo`) and stdio (`stdio --demo`): tools/list, tools/call,
# resources/read and prompts/list must exit 0 with the expected content, and modern results
# must carry the server's identity in `_meta` (legacy ones must not).
#
# usage: tests/e2e/inspector.sh [path/to/home-mcp]   (default: target/debug/home-mcp)
# Needs npm (the Inspector is fetched by npx on first use, then cached by npm); uses Node 22
# from the conformance cache (MCP_TOOLS_CACHE) when the system node is older.
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

passed=0; failed=0
OUT=$(mktemp); ERR=$(mktemp)
LOG=$(mktemp)
PID=""
trap '[[ -n "$PID" ]] && kill "$PID" 2>/dev/null; rm -f "$OUT" "$ERR" "$LOG"' EXIT

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
"$BIN" serve --demo --listen "127.0.0.1:$PORT" 2>"$LOG" &
PID=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  sleep 0.1
done
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

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
