# Shared by the browser end-to-end scripts (browser.sh, oauth.sh); source it after `cd` to the
# repository root with BIN set.
#   e2e_needs WHAT          checks $BIN is built and npm is there (WHAT names the script)
#   e2e_chromium            exports CHROMIUM (default /usr/bin/chromium), installing it with apt
#                           when missing
#   e2e_npm_ci DIR          `npm ci` in DIR only when its package-lock.json changed since the
#                           last install (a stamp in node_modules); --prefer-offline takes
#                           packages from npm's cache when it has them
#   e2e_tmp                 makes TMP (removed on exit) and PID (killed on exit when set)
#   e2e_admin_key NAME      prints the id of a new admin key in $TMP/keys.toml
#   e2e_free_port           prints a free loopback port
#   e2e_demo_up PORT LOG    waits (bounded, 20 s) until a `serve --demo` started on PORT with
#                           its stderr in LOG (and its pid in PID) answers /health, then prints
#                           the base URL of its simulated Miniserver (the log's "demo: simulated
#                           Miniserver at URL"); fails when that server has exited (e.g. PORT
#                           was taken: another server's /health would answer)

e2e_needs() {
  [[ -x "$BIN" ]] || { echo "binary $BIN not built (cargo build)"; exit 2; }
  command -v npm >/dev/null || { echo "$1 needs node and npm"; exit 2; }
}

e2e_chromium() {
  export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
  if [[ ! -x "$CHROMIUM" ]]; then
    echo "installing chromium (apt)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
}

e2e_npm_ci() {
  local dir=$1 stamp="$1/node_modules/.home-mcp-lock.sha1" sum
  sum=$(sha1sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [[ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]]; then
    (cd "$dir" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)
    echo "$sum" > "$stamp"
  fi
}

e2e_tmp() {
  TMP=$(mktemp -d)
  PID=
  trap e2e_cleanup EXIT
}

e2e_cleanup() {
  # The server's exit status after the kill is not a failure of the script.
  if [[ -n "$PID" ]]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}

e2e_admin_key() {
  "$BIN" keys generate --role admin --name "$1" --json --key-store "$TMP/keys.toml" \
    | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).id))'
}

e2e_free_port() {
  node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

e2e_demo_up() {
  local port=$1 log=$2 url=
  for _ in $(seq 1 200); do
    if [[ -n "${PID:-}" ]] && ! kill -0 "$PID" 2>/dev/null; then break; fi
    url=$(grep -o 'demo: simulated Miniserver at http://[0-9.:]*' "$log" 2>/dev/null | awk '{print $NF}')
    [[ -n $url ]] && curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && { echo "$url"; return 0; }
    sleep 0.1
  done
  echo "serve --demo on port $port did not come up within 20 s (or exited); its log:" >&2
  tail -n 20 "$log" >&2
  return 1
}
