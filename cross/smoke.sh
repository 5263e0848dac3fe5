#!/usr/bin/env bash
# Smoke test of the ARM release binaries under qemu-user: the key CLI, then `serve --demo`
# and `stdio --demo` driven by real MCP clients (tests/e2e/python-sdk.sh: the official Python
# SDK's initialize, tools/list, a control_device that the next list_devices must show, the
# SSE transport and a home-owner session), and an API key from the CLI used over HTTP.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: cross/smoke.sh [--build] [--install] [TARGET...]

TARGET defaults to aarch64-unknown-linux-gnu armv7-unknown-linux-gnueabihf; each binary is
target-cross/TARGET/release/home-mcp (TARGET_DIR to change). Exits non-zero when any check
fails.

  --build     build the binaries first (cross/build.sh)
  --install   install qemu-user-static and the cross libc with apt when missing (root)
  -h, --help  this text
USAGE
}

cd "$(dirname "$0")/.."
TARGET_DIR=${TARGET_DIR:-target-cross}
build=0
install=0
targets=()
for a in "$@"; do
  case "$a" in
    --build) build=1 ;;
    --install) install=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "unknown option $a" >&2; usage >&2; exit 2 ;;
    *) targets+=("$a") ;;
  esac
done
((${#targets[@]})) || targets=(aarch64-unknown-linux-gnu armv7-unknown-linux-gnueabihf)

if ((install)) && { ! command -v qemu-aarch64-static >/dev/null || [[ ! -d /usr/arm-linux-gnueabihf/lib ]]; }; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    qemu-user-static libc6-arm64-cross libc6-armhf-cross curl python3-venv
fi
if ((build)); then
  cross/build.sh $( ((install)) && echo --install) "${targets[@]}"
fi

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

total_failed=0
for t in "${targets[@]}"; do
  case "$t" in
    aarch64-unknown-linux-gnu) qemu=qemu-aarch64-static sysroot=/usr/aarch64-linux-gnu machine=aarch64 ;;
    armv7-unknown-linux-gnueabihf) qemu=qemu-arm-static sysroot=/usr/arm-linux-gnueabihf machine=ARM ;;
    *) echo "unsupported target $t" >&2; exit 2 ;;
  esac
  bin=$PWD/$TARGET_DIR/$t/release/home-mcp
  [[ -x $bin ]] || { echo "no binary at $bin (cross/build.sh $t, or --build)" >&2; exit 1; }
  file -b "$bin" | grep -q "$machine" || { echo "$bin is not an $machine binary" >&2; exit 1; }
  # Every run of the binary goes through qemu (no binfmt_misc needed).
  run=$work/home-mcp-$t
  printf '#!/bin/sh\nexec %s -L %s -E LD_LIBRARY_PATH=%s/lib %s "$@"\n' "$qemu" "$sysroot" "$sysroot" "$bin" >"$run"
  chmod +x "$run"
  echo "== $t under $qemu ($(stat -c %s "$bin") bytes)"
  start=$(date +%s)
  failed=0
  ok() { echo "ok   $*"; }
  bad() { echo "FAIL $*"; failed=$((failed + 1)); }

  # 1. CLI: version, keys generate/list in a private data dir.
  ver=$("$run" --version) && [[ $ver == "home-mcp "* ]] && ok "--version: $ver" || bad "--version"
  data=$work/data-$t
  if key=$(HOME_DATA_DIR=$data "$run" keys generate --role admin --name smoke) &&
    [[ $key == *homekey_admin_* ]]; then
    key=$(grep -o 'homekey_admin_[A-Za-z0-9_]*' <<<"$key" | head -n1)
    ok "keys generate --role admin"
  else
    bad "keys generate"
  fi
  if HOME_DATA_DIR=$data "$run" keys list | grep -q smoke; then ok "keys list"; else bad "keys list"; fi
  [[ $(stat -c %a "$data") == 700 ]] && ok "data dir 0700" || bad "data dir mode $(stat -c %a "$data")"

  # 2. serve --demo with the CLI's key store, production level: no key 401, the key works.
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
  SECURITY_LEVEL=production "$run" serve --demo --listen "127.0.0.1:$port" \
    --key-store "$data/keys.toml" 2>"$work/serve-$t.log" &
  pids+=($!)
  for _ in $(seq 1 150); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    sleep 0.1
  done
  init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"smoke","version":"1"}}}'
  code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -d "$init" "http://127.0.0.1:$port/mcp")
  [[ $code == 401 ]] && ok "production: /mcp without a key is 401" || bad "no key: HTTP $code"
  if curl -sf -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H "Authorization: Bearer ${key:-none}" -d "$init" "http://127.0.0.1:$port/mcp" | grep -q '"serverInfo"'; then
    ok "production: initialize with the CLI's admin key"
  else
    bad "initialize with the key"; sed 's/^/    /' "$work/serve-$t.log" | tail -n 5
  fi
  kill "${pids[-1]}" 2>/dev/null || true
  wait "${pids[-1]}" 2>/dev/null || true

  # 3. Real MCP clients: the official Python SDK over stdio, Streamable HTTP and SSE,
  # initialize + tools/list + control_device (seen by list_devices) + a session (mcp 2.x only:
  # the 1.x runs double the time under qemu; .ci/run's native stage runs both).
  if out=$(MCP_CHECK_SDK1=none bash tests/e2e/python-sdk.sh "$run" 2>&1); then
    ok "python-sdk e2e: $(tail -n1 <<<"$out")"
  else
    bad "python-sdk e2e"; sed 's/^/    /' <<<"$out"
  fi
  grep -E '^(ok|FAIL)' <<<"$out" | sed 's/^/    /' || true
  echo "$t: $failed failed, $(($(date +%s) - start)) s"
  total_failed=$((total_failed + failed))
done
[[ $total_failed -eq 0 ]] && echo "smoke: all passed" || { echo "smoke: $total_failed failed"; exit 1; }
