#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance, run by
# ../shared/tools/mcp-conformance.sh), two pinned versions: 0.1.16 and the newest 0.2.x on the
# npm registry, 0.2.0-alpha.12 (MCP 2026-07-28), against
#   1. the conformance fixture server (target/debug/conformance-fixture): 0.1.16 `--suite all`;
#      the scenarios that fail must be exactly those in tests/conformance-expected-failures.txt;
#   2. the fixture server: 0.2.0-alpha.12 `--requirements 2025-11-25` (incl. the session
#      lifecycle: 404 after DELETE); every scenario must pass;
#   3. the fixture server: 0.2.0-alpha.12 `--requirements 2026-07-28` (stateless requests);
#      the failures must be exactly tests/conformance-expected-failures-2026-07-28.txt;
#   4. the product, `home-mcp serve --demo`, the whole 0.1.16 `--suite all` in one run on one
#      server (its rate limit budget set by a config file, so 429s cannot break the run): the
#      failures must be exactly tests/conformance-product-0.1.16.txt (scenarios that call the
#      suite's own fixture tools, prompts or resources, each with the reason);
#   5. the product, 0.2.0-alpha.12 `--requirements 2026-07-28` in one run: failures exactly
#      tests/conformance-product-2026-07-28.txt.
# Every run is counted against what should have run: the scenarios the suite itself lists for
# that version (`conformance list`). A run fails
# when a scenario is missing (did not run, or crashed without a result line), when an
# unexpected one ran, and when a scenario passed no check at all (all its checks skipped, or
# none reported): such a scenario counts as skipped, never as passed. Each run prints
#   <label>: N scenarios run, P passed, F failed (E expected), S skipped
# Both servers listen on 127.0.0.1 port 0 (a free port, read back from their output).
#
# usage: tests/conformance.sh [--no-build]
# env: MCP_CONFORMANCE_SH  path of mcp-conformance.sh (default: ../shared/tools/ next to the repo,
#      then /work/shared/tools/); the suite itself installs Node 22 and the npm package on first use
#      (into MCP_TOOLS_CACHE, default $TMPDIR/mcp-tools-cache, where this script also finds the
#      suite to list its scenarios).
#      MCP_CONFORMANCE_VERSION  version of runs 1 and 3 (default 0.1.16).
#      CONFORMANCE_ALPHA=skip   leaves out runs 2, 3 and 5 (refused when CI=true).
# Exit: 0 when all expectations hold, 1 otherwise, 2 when the suite cannot run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

MAIN_VER="${MCP_CONFORMANCE_VERSION:-0.1.16}"
ALPHA_VER=0.2.0-alpha.12

if [[ "${CONFORMANCE_ALPHA:-run}" == skip && "${CI:-}" == true ]]; then
  echo "conformance: CONFORMANCE_ALPHA=skip is refused when CI=true (CI runs every conformance version)" >&2
  exit 1
fi

SUITE="${MCP_CONFORMANCE_SH:-}"
if [[ -z "$SUITE" ]]; then
  for c in "$ROOT/../shared/tools/mcp-conformance.sh" /work/shared/tools/mcp-conformance.sh; do
    [[ -f "$c" ]] && { SUITE="$c"; break; }
  done
fi
[[ -n "$SUITE" && -f "$SUITE" ]] || { echo "conformance: mcp-conformance.sh not found (set MCP_CONFORMANCE_SH)" >&2; exit 2; }
CACHE="${MCP_TOOLS_CACHE:-${TMPDIR:-/tmp}/mcp-tools-cache}"

if [[ "${1:-}" != "--no-build" ]]; then
  cargo build --bin home-mcp && cargo build -p conformance-fixture
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

# suite VERSION OUT URL ARGS...: one run of the suite (checks.json files in the directory OUT),
# its output into OUT.results (per-scenario lines "ok NAME ..." / "FAIL NAME ..." and the
# suite's totals) and on stdout, its stderr into OUT.err. Exits 2 when the suite cannot run.
suite() {
  local ver=$1 out=$2 url=$3 rc; shift 3
  set +e
  MCP_CONFORMANCE_VERSION="$ver" MCP_CONFORMANCE_OUT="$out" bash "$SUITE" "$url" "$@" >"$out.results" 2>"$out.err"
  rc=$?
  set -e
  cat "$out.results"
  if [[ $rc -eq 2 ]]; then
    echo "conformance: the suite $ver could not run ($*):" >&2; tail -n 20 "$out.err" >&2; exit 2
  fi
}

# listed VERSION ARGS...: the server scenarios the suite VERSION lists for ARGS (`conformance
# list --server ARGS`; with --requirements, the required ones plus the [server] ones it runs
# without scoring), one per line, sorted. Uses the node and the suite that mcp-conformance.sh
# installed into CACHE (it ran VERSION before this is called).
listed() {
  local ver=$1 node=node cli n; shift
  cli="$CACHE/conformance-$ver/node_modules/@modelcontextprotocol/conformance/dist/index.js"
  if ! command -v node >/dev/null || [[ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]]; then
    node=""
    for n in "$CACHE"/node22/node_modules/node-linux-*/bin/node; do [[ -x "$n" ]] && { node="$n"; break; }; done
  fi
  [[ -n "$node" && -f "$cli" ]] || { echo "conformance: cannot list the scenarios of $ver (no node 22 or no $cli)" >&2; exit 2; }
  "$node" "$cli" list --server "$@" | awk '
    /^Server scenarios/ { sec = "server"; next }
    /^Client scenarios/ { sec = "client"; next }
    /^Run and reported/ { sec = "unscored"; next }
    /^ *- / { if (sec == "server" || (sec == "unscored" && $0 ~ /\[server\] *$/)) print $2 }' | sort
}

FAILED=0
SUMMARY=()

# tally LABEL RESULTS EXPECTED_SCENARIOS EXPECTED_FAILURES: counts the per-scenario lines in
# RESULTS against the scenario names in EXPECTED_SCENARIOS (each must have run exactly once) and
# the names in EXPECTED_FAILURES (exactly those must fail); a scenario with no passing check and
# no failing one counts as skipped, which fails unless it is listed there (an extension
# scenario the suite runs unscored, whose fixtures are absent). Prints the counts; sets FAILED.
tally() {
  local label=$1 results=$2 expected=$3 xfail=$4 verdict
  [[ -s "$expected" ]] || { echo "conformance: $label: the list of scenarios to run is empty" >&2; exit 2; }
  # One line per result: NAME STATUS, where STATUS is pass, fail or skip ("ok NAME 0 check(s)",
  # e.g. "0 check(s), 3 skipped": nothing passed).
  { grep -E '^(ok|FAIL) ' "$results" || true; } | awk '
    $1 == "FAIL" { print $2, "fail"; next }
    { print $2, ($3 + 0 > 0 && $4 ~ /^check/) ? "pass" : "skip" }' >"$results.status"
  verdict="$(awk -v label="$label" '
    FILENAME == ARGV[1] { want[$1] = 1; nwant++; next }
    FILENAME == ARGV[2] { xfail[$1] = 1; nx++; next }
    { n++; seen[$1]++; st[$1] = $2; count[$2]++
      if (seen[$1] == 2) { printf "conformance: %s: %s ran more than once\n", label, $1; bad = 1 }
      if (!($1 in want)) { printf "conformance: %s: %s ran but is not in the list to run\n", label, $1; bad = 1 }
      if ($2 == "skip" && !($1 in xfail)) { printf "conformance: %s: %s passed no check (all skipped or none reported)\n", label, $1; bad = 1 }
      if ($2 == "fail" && !($1 in xfail)) { printf "conformance: %s: %s failed (unexpected)\n", label, $1; bad = 1 }
      if ($2 == "pass" && ($1 in xfail)) { printf "conformance: %s: %s now passes, remove it from tests/conformance-expected-failures.txt\n", label, $1; bad = 1 } }
    END {
      for (s in want) if (!(s in seen)) { printf "conformance: %s: %s did not run\n", label, s; bad = 1 }
      for (s in xfail) if (!(s in seen)) { printf "conformance: %s: expected failure %s did not run\n", label, s; bad = 1 }
      if (n != nwant) { printf "conformance: %s: %d scenarios run, %d to run\n", label, n, nwant; bad = 1 }
      printf "%s: %d scenarios run, %d passed, %d failed (%d expected), %d skipped%s\n", label, n,
        count["pass"], count["fail"], nx, count["skip"], bad ? " -- FAILED" : ""
      exit bad }' "$expected" "$xfail" "$results.status")" || FAILED=1
  echo "$verdict"
  SUMMARY+=("$(tail -n1 <<<"$verdict")")
}

: >"$WORK/none"
# expected FILE OUT: the scenario names of an expected-failures file (first word of each line
# that is not blank or a comment; the rest of the line is the reason), sorted, into OUT.
expected() { { grep -vE '^\s*(#|$)' "$1" || true; } | awk '{print $1}' | sort >"$2"; }
expected tests/conformance-expected-failures.txt "$WORK/expected-failures"
expected tests/conformance-expected-failures-2026-07-28.txt "$WORK/expected-failures-2026"
expected tests/conformance-product-0.1.16.txt "$WORK/product-failures"
expected tests/conformance-product-2026-07-28.txt "$WORK/product-failures-2026"

echo "== conformance $MAIN_VER: fixture server, --suite all"
target/debug/conformance-fixture --listen 127.0.0.1:0 >"$WORK/fixture.out" 2>"$WORK/fixture.err" &
PIDS+=($!)
URL="$(wait_url "$WORK/fixture.out")"
suite "$MAIN_VER" "$WORK/fixture" "$URL" --suite all
listed "$MAIN_VER" >"$WORK/fixture.listed"
tally "conformance $MAIN_VER, fixture --suite all" "$WORK/fixture.results" "$WORK/fixture.listed" "$WORK/expected-failures"

echo "== conformance $ALPHA_VER: fixture server, --requirements 2025-11-25 (session lifecycle: 404 after DELETE)"
if [[ "${CONFORMANCE_ALPHA:-run}" == skip ]]; then
  echo "skipped (CONFORMANCE_ALPHA=skip)"
  SUMMARY+=("conformance $ALPHA_VER, fixture --requirements 2025-11-25: not run (CONFORMANCE_ALPHA=skip)")
else
  suite "$ALPHA_VER" "$WORK/alpha" "$URL" --requirements 2025-11-25
  listed "$ALPHA_VER" --requirements 2025-11-25 >"$WORK/alpha.listed"
  tally "conformance $ALPHA_VER, fixture --requirements 2025-11-25" "$WORK/alpha.results" "$WORK/alpha.listed" "$WORK/none"
fi

echo "== conformance $ALPHA_VER: fixture server, --requirements 2026-07-28 (stateless)"
if [[ "${CONFORMANCE_ALPHA:-run}" == skip ]]; then
  echo "skipped (CONFORMANCE_ALPHA=skip)"
  SUMMARY+=("conformance $ALPHA_VER, fixture --requirements 2026-07-28: not run (CONFORMANCE_ALPHA=skip)")
else
  suite "$ALPHA_VER" "$WORK/modern" "$URL" --requirements 2026-07-28
  listed "$ALPHA_VER" --requirements 2026-07-28 >"$WORK/modern.listed"
  tally "conformance $ALPHA_VER, fixture --requirements 2026-07-28" "$WORK/modern.results" "$WORK/modern.listed" "$WORK/expected-failures-2026"
fi

# The product as a user runs it, with a request budget the whole suite cannot exhaust (the
# default per-client limit is meant for people, not for a suite firing 50 scenarios at once).
mkdir -p "$WORK/data"
printf '[server]\ndata_dir = "%s"\n[auth.rate_limits]\nper_client = 100000\n' "$WORK/data" >"$WORK/product.toml"
target/debug/home-mcp serve --demo --listen 127.0.0.1:0 --config "$WORK/product.toml" >"$WORK/product.out" 2>"$WORK/product.err" &
PIDS+=($!)
URL="$(wait_url "$WORK/product.err")"

echo "== conformance $MAIN_VER: home-mcp serve --demo, --suite all in one run"
suite "$MAIN_VER" "$WORK/product" "$URL" --suite all
tally "conformance $MAIN_VER, home-mcp serve --demo --suite all" "$WORK/product.results" "$WORK/fixture.listed" "$WORK/product-failures"

echo "== conformance $ALPHA_VER: home-mcp serve --demo, --requirements 2026-07-28 in one run"
if [[ "${CONFORMANCE_ALPHA:-run}" == skip ]]; then
  echo "skipped (CONFORMANCE_ALPHA=skip)"
  SUMMARY+=("conformance $ALPHA_VER, home-mcp serve --demo --requirements 2026-07-28: not run (CONFORMANCE_ALPHA=skip)")
else
  suite "$ALPHA_VER" "$WORK/product-modern" "$URL" --requirements 2026-07-28
  tally "conformance $ALPHA_VER, home-mcp serve --demo --requirements 2026-07-28" "$WORK/product-modern.results" "$WORK/modern.listed" "$WORK/product-failures-2026"
fi

echo "== conformance summary"
printf '%s\n' "${SUMMARY[@]}"
if [[ $FAILED -ne 0 ]]; then echo "conformance: FAILED (logs in $WORK)"; exit 1; fi
echo "conformance: all expectations hold"
rm -rf "$WORK"
