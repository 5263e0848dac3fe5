#!/usr/bin/env bash
# Builds the release binary with each profile choice switched off in turn and prints the
# stripped size and build time of each, so every setting of [profile.release] shows its cost.
# usage: tests/bench/profile-sizes.sh   (host target; a few minutes per variant on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${PROFILE_SIZES_DIR:-target/profile-sizes}
mkdir -p "$OUT"
# variant NAME CARGO_FLAGS [ENV=VALUE ...]
variant() {
  local name=$1 flags=$2; shift 2
  local dir="$OUT/$(echo "$name" | tr -c 'a-z0-9\n' '-')" start end
  start=$(date +%s)
  # shellcheck disable=SC2086
  env "$@" CARGO_TARGET_DIR="$dir" cargo build --release --quiet --bin home-mcp $flags
  end=$(date +%s)
  cp "$dir/release/home-mcp" "$dir/home-mcp.stripped" && strip "$dir/home-mcp.stripped"
  printf '%-30s %10d bytes stripped  (%4d s clean build)\n' "$name" \
    "$(stat -c %s "$dir/home-mcp.stripped")" "$((end-start))"
}
variant "release (as shipped)"      ""
variant "opt-level 3 instead of s"  "" CARGO_PROFILE_RELEASE_OPT_LEVEL=3
variant "without LTO"               "" CARGO_PROFILE_RELEASE_LTO=false
variant "codegen-units 16"          "" CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
variant "panic = abort"             "" CARGO_PROFILE_RELEASE_PANIC=abort
variant "without the tls feature"   "--no-default-features"
