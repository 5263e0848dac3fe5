#!/usr/bin/env bash
# Release binaries of home-mcp for the Raspberry Pi, from Debian packages and crates.io alone.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: cross/build.sh [--install] [--no-default-features] [TARGET...]

Builds `cargo build --release` for each TARGET (default: aarch64-unknown-linux-gnu
armv7-unknown-linux-gnueabihf) into target-cross/<TARGET>/release/home-mcp and prints the
stripped size and build time of each.

  --install              install what is missing first (needs root): Debian's cross gcc,
                         the cross libc, qemu-user-static; then the Rust target std from
                         `rustup target add`, falling back to Debian's toolchain (recipe A:
                         rustc-web + libstd-rust-web-dev:arm64; armv7 via -Zbuild-std with
                         Debian's rust-web-src) when rustup cannot download it
  --no-default-features  build without TLS (to measure what rustls/ring cost)
  -h, --help             this text

Environment: TARGET_DIR (default target-cross), NICE (default 10), CARGO_BUILD_JOBS,
TOOLCHAIN=debian (use recipe A even where rustup has the target std; to test the fallback).
Linker, C compiler and qemu runner come from .cargo/config.toml.
USAGE
}

cd "$(dirname "$0")/.."
TARGET_DIR=${TARGET_DIR:-target-cross}
NICE=${NICE:-10}
install=0
features=()
targets=()
for a in "$@"; do
  case "$a" in
    --install) install=1 ;;
    --no-default-features) features=(--no-default-features) ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "unknown option $a" >&2; usage >&2; exit 2 ;;
    *) targets+=("$a") ;;
  esac
done
((${#targets[@]})) || targets=(aarch64-unknown-linux-gnu armv7-unknown-linux-gnueabihf)

gcc_of() {
  case "$1" in
    aarch64-unknown-linux-gnu) echo aarch64-linux-gnu ;;
    armv7-unknown-linux-gnueabihf) echo arm-linux-gnueabihf ;;
    x86_64-unknown-linux-gnu) echo x86_64-linux-gnu ;;
    *) echo "unsupported target $1" >&2; exit 2 ;;
  esac
}

# Which toolchain builds a target: "rustup" (target std installed), "debian" (recipe A,
# aarch64: Debian rustc-web + multiarch std), "debian-build-std" (recipe A, armv7).
declare -A how
have_rustup_std() {
  [[ ${TOOLCHAIN:-} != debian ]] && command -v rustup >/dev/null &&
    rustup target list --installed 2>/dev/null | grep -qx "$1"
}
# Recipe A's pieces for a target are in place (aarch64: the multiarch std; armv7: the source).
have_debian_std() {
  [[ -x /usr/bin/rustc ]] || return 1
  if [[ $1 == aarch64-* ]]; then [[ -d /usr/lib/rustlib/$1 ]]; else [[ -d /usr/lib/rustlib/src/rust ]]; fi
}

install_debian_rust() { # recipe A from /work/shared/research/cross-arm.md §2
  local t=$1
  apt_get() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"; }
  if [[ $t == aarch64-* ]]; then
    dpkg --add-architecture arm64
    apt-get -o APT::Architectures::=amd64 -o APT::Architectures::=arm64 update -qq
    apt_get rustc-web cargo-web libstd-rust-web-dev libstd-rust-web-dev:arm64
  else
    # libstd-rust-web-dev:armhf is often not installable (its index fails to load), so armv7
    # builds std from Debian's own source of the same version.
    apt-get update -qq
    apt_get rustc-web cargo-web libstd-rust-web-dev rust-web-src
  fi
}

for t in "${targets[@]}"; do
  g=$(gcc_of "$t")
  if ((install)); then
    if [[ $t != x86_64-* ]] && ! command -v "$g-gcc" >/dev/null; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf libc6-dev-arm64-cross libc6-dev-armhf-cross \
        qemu-user-static
    fi
    if ! have_rustup_std "$t" && command -v rustup >/dev/null && [[ ${TOOLCHAIN:-} != debian ]]; then
      rustup target add "$t" || echo "rustup cannot add $t; falling back to Debian's toolchain" >&2
    fi
    if ! have_rustup_std "$t" && ! have_debian_std "$t"; then
      install_debian_rust "$t"
    fi
  fi
  if have_rustup_std "$t"; then
    how[$t]=rustup
  elif [[ $t == aarch64-* ]] && have_debian_std "$t"; then
    how[$t]=debian
  elif [[ $t != aarch64-* ]] && have_debian_std "$t"; then
    how[$t]=debian-build-std
  else
    echo "no Rust std for $t: run cross/build.sh --install (as root)" >&2
    exit 1
  fi
done

for t in "${targets[@]}"; do
  g=$(gcc_of "$t")
  echo "== $t (${how[$t]}${features:+, ${features[*]}})"
  start=$(date +%s)
  case "${how[$t]}" in
    rustup)
      nice -n "$NICE" cargo build --release --locked --target "$t" --target-dir "$TARGET_DIR" "${features[@]}" ;;
    debian)
      RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc nice -n "$NICE" /usr/bin/cargo build --release \
        --locked --target "$t" --target-dir "$TARGET_DIR" "${features[@]}" ;;
    debian-build-std)
      RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 nice -n "$NICE" /usr/bin/cargo \
        build --release --locked -Zbuild-std=std,panic_abort --target "$t" --target-dir "$TARGET_DIR" \
        "${features[@]}" ;;
  esac
  bin=$TARGET_DIR/$t/release/home-mcp
  # The release profile strips already; strip again with the target's binutils to be sure.
  if command -v "$g-strip" >/dev/null; then "$g-strip" "$bin"; fi
  end=$(date +%s)
  printf '%s: %s bytes stripped, built in %ss (%s)\n' "$t" "$(stat -c %s "$bin")" "$((end - start))" "$bin"
done
