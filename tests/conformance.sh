#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance, pinned by
# ../shared/tools/mcp-conformance.sh) against
#   1. the conformance fixture server (target/debug/conformance-fixture), `--suite all`; the
#      scenarios that fail must be exactly those in tests/conformance-expected-failures.txt;
#   2. the product, `home-mcp serve --demo`, scenario by scenario, for the scenarios that need
#      no fixtures: every one must pass.
# Both servers listen on 127.0.0.1 port 0 (a free port, read back from their output).
#
# usage: tests/conformance.sh [--no-build]
# env: MCP_CONFORMANCE_SH  path of mcp-conformance.sh (default: ../shared/tools/ next to the repo,
#      then /work/shared/tools/); the suite itself installs Node 22 and the npm package on first use.
# Exit: 0 when all expectations hold, 1 otherwise, 2 when the suite cannot run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

SUITE="${MCP_CONFORMANCE_SH:-}"
if [[ -z "$SUITE" ]]; then
  for c in "$ROOT/../shared/tools/mcp-conformance.sh" /work/shared/tools/mcp-conformance.sh; do
    [[ -f "$c" ]] && { SUITE="$c"; break; }
  done
fi
[[ -n "$SUITE" && -f "$SUITE" ]] || { echo "conformance: mcp-conformance.sh not found (set MCP_CONFORMANCE_SH)" >&2; exit 2; }

if [[ "${1:-}" != "--no-build" ]]; then
  cargo build --bin home-mcp --bin conformance-fixture
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/home-mcp-conformance.XXXXXX")"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# wait_url FILE PATTERN: prints the first http://.../mcp URL that appears in FILE (10 s).
wait_url() {
  local url=""
  for _ in $(seq 100); do
    url="$(grep -o 'http://[0-9.:]*/mcp' "$1" 2>/dev/null | head -1 || true)"
    [[ -n "$url" ]] && { echo "$url"; return 0; }
    sleep 0.1
  done
  echo "conformance: no URL in $1:" >&2; cat "$1" >&2; return 1
}

FAILED=0

echo "== conformance: fixture server, --suite all"
target/debug/conformance-fixture --listen 127.0.0.1:0 >"$WORK/fixture.out" 2>"$WORK/fixture.err" &
PIDS+=($!)
URL="$(wait_url "$WORK/fixture.out")"
set +e
bash "$SUITE" "$URL" --suite all | tee "$WORK/fixture.results"
RC=${PIPESTATUS[0]}
set -e
if [[ $RC -eq 2 ]]; then echo "conformance: the suite could not run" >&2; exit 2; fi
{ grep -E '^(ok|FAIL) ' "$WORK/fixture.results" || true; } | awk '$1=="FAIL"{print $2}' | sort >"$WORK/failed"
{ grep -vE '^\s*(#|$)' tests/conformance-expected-failures.txt || true; } | sort >"$WORK/expected"
[[ -s "$WORK/fixture.results" ]] && grep -qE '^(ok|FAIL) ' "$WORK/fixture.results" || { echo "conformance: no results" >&2; exit 2; }
UNEXPECTED="$(comm -23 "$WORK/failed" "$WORK/expected")"
STALE="$(comm -13 "$WORK/failed" "$WORK/expected")"
if [[ -n "$UNEXPECTED" ]]; then
  echo "conformance: fixture: unexpected failures:" $UNEXPECTED; FAILED=1
fi
if [[ -n "$STALE" ]]; then
  echo "conformance: fixture: now passing, remove from tests/conformance-expected-failures.txt:" $STALE; FAILED=1
fi
[[ -z "$UNEXPECTED$STALE" ]] && echo "conformance: fixture: failures match the expected list ($(wc -l <"$WORK/expected") expected)"

echo "== conformance: fixture server, 0.2.0-alpha.12 --requirements 2025-11-25 (session lifecycle: 404 after DELETE)"
if [[ "${CONFORMANCE_ALPHA:-run}" != skip ]]; then
  ALPHA="$(MCP_CONFORMANCE_VERSION=0.2.0-alpha.12 bash "$SUITE" "$URL" --requirements 2025-11-25 2>/dev/null || true)"
  grep -E '^(FAIL) |passed, [0-9]+ failed$' <<<"$ALPHA" || true
  if ! grep -qE '^[0-9]+ passed, 0 failed$' <<<"$ALPHA"; then
    echo "conformance: fixture: the 2025-11-25 requirements run failed"; FAILED=1
  fi
fi

echo "== conformance: home-mcp serve --demo, scenarios without fixtures"
target/debug/home-mcp serve --demo --listen 127.0.0.1:0 >"$WORK/product.out" 2>"$WORK/product.err" &
PIDS+=($!)
URL="$(wait_url "$WORK/product.err")"
for s in server-initialize ping logging-set-level tools-list resources-list prompts-list \
         dns-rebinding-protection server-sse-multiple-streams; do
  OUT="$(bash "$SUITE" "$URL" --scenario "$s" 2>/dev/null || true)"
  grep -E '^(ok|FAIL) ' <<<"$OUT" || true
  if ! grep -qE "^ok +$s " <<<"$OUT"; then
    echo "conformance: product: $s failed"; FAILED=1
  fi
done

if [[ $FAILED -ne 0 ]]; then echo "conformance: FAILED (logs in $WORK)"; exit 1; fi
echo "conformance: all expectations hold"
rm -rf "$WORK"
