#!/usr/bin/env bash
# Binaries for older glibc (Raspberry Pi OS bullseye: glibc 2.31) or fully static (musl),
# with cargo-zigbuild and zig from PyPI (no system packages besides python3-venv).
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: cross/zigbuild.sh [TARGET...]

TARGET defaults to aarch64-unknown-linux-gnu.2.31 armv7-unknown-linux-gnueabihf.2.31.
Other useful ones: aarch64-unknown-linux-musl (static). The `.2.31` suffix is the glibc
version to link against (zig's own glibc stubs). Needs the target's Rust std
(rustup target add ..., without the suffix). Output: target-cross/zig/<target>/release/home-mcp
(TARGET_DIR to change). The venv with cargo-zigbuild and ziglang lives in
target-cross/zig/venv.

armv7: zig compiles C (SQLite) as A32, not Thumb-2 like Debian's gcc; -mthumb is passed
to keep the binary small.
USAGE
}

cd "$(dirname "$0")/.."
for a in "$@"; do
  case "$a" in
    -h | --help) usage; exit 0 ;;
    -*) echo "unknown option $a" >&2; usage >&2; exit 2 ;;
  esac
done
TARGET_DIR=${TARGET_DIR:-target-cross/zig}
targets=("$@")
((${#targets[@]})) || targets=(aarch64-unknown-linux-gnu.2.31 armv7-unknown-linux-gnueabihf.2.31)
venv=$TARGET_DIR/venv
if [[ ! -x $venv/bin/cargo-zigbuild ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q cargo-zigbuild ziglang
fi
export PATH="$PWD/$venv/bin:$PATH"
for t in "${targets[@]}"; do
  base=${t%.2.*}
  rustup target list --installed | grep -qx "$base" || rustup target add "$base"
  start=$(date +%s)
  # zig is the linker and C compiler: cargo-zigbuild sets CC_<target>/linker variables,
  # which win over .cargo/config.toml's [env] and [target] entries.
  CFLAGS_armv7_unknown_linux_gnueabihf=-mthumb nice -n "${NICE:-10}" cargo zigbuild --release --locked --target "$t" --target-dir "$TARGET_DIR"
  bin=$TARGET_DIR/$base/release/home-mcp
  glibc=$(objdump -T "$bin" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n1 || true)
  echo "$t: $(stat -c %s "$bin") bytes, ${glibc:-static} needed, built in $(($(date +%s) - start))s ($bin)"
done
