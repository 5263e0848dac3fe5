#!/usr/bin/env bash
# Builds the Debian package of home-mcp from a release binary, with dpkg-deb alone.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: cross/deb.sh [--build] TARGET [BINARY]

Packages BINARY (default target-cross/TARGET/release/home-mcp) as
target-cross/deb/home-mcp_<version>_<arch>.deb, arch from TARGET:
  x86_64-unknown-linux-gnu -> amd64, aarch64-unknown-linux-gnu -> arm64,
  armv7-unknown-linux-gnueabihf -> armhf

  --build     build the binary first (cross/build.sh TARGET; for x86_64 a plain
              cargo build --release --target-dir target-cross)
  -h, --help  this text

Contents: /usr/bin/home-mcp, /lib/systemd/system/home-mcp.service, /etc/home-mcp/config.toml
and /etc/home-mcp/home-mcp.env (conffiles), /usr/share/doc/home-mcp/. The maintainer
scripts (cross/debian/) create the system user home-mcp and /var/lib/home-mcp (0700), and
enable/start the service where systemd runs. Environment: TARGET_DIR (default target-cross).
USAGE
}

cd "$(dirname "$0")/.."
TARGET_DIR=${TARGET_DIR:-target-cross}
build=0
args=()
for a in "$@"; do
  case "$a" in
    --build) build=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "unknown option $a" >&2; usage >&2; exit 2 ;;
    *) args+=("$a") ;;
  esac
done
((${#args[@]} >= 1 && ${#args[@]} <= 2)) || { usage >&2; exit 2; }
target=${args[0]}
case "$target" in
  x86_64-unknown-linux-gnu) arch=amd64 tool= ;;
  aarch64-unknown-linux-gnu) arch=arm64 tool=aarch64-linux-gnu- ;;
  armv7-unknown-linux-gnueabihf) arch=armhf tool=arm-linux-gnueabihf- ;;
  *) echo "unsupported target $target" >&2; exit 2 ;;
esac
bin=${args[1]:-$TARGET_DIR/$target/release/home-mcp}
if ((build)); then
  if [[ $arch == amd64 ]]; then
    nice -n "${NICE:-10}" cargo build --release --locked --target "$target" --target-dir "$TARGET_DIR"
  else
    cross/build.sh "$target"
  fi
fi
[[ -x $bin ]] || { echo "no binary at $bin (use --build)" >&2; exit 1; }

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
# The glibc floor from the binary's versioned symbols (gcc on bookworm: 2.34).
objdump=${tool}objdump
command -v "$objdump" >/dev/null || objdump=objdump
glibc=$("$objdump" -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n1)
[[ -n $glibc ]] || { echo "cannot read the glibc version $bin needs" >&2; exit 1; }

out=$TARGET_DIR/deb
root=$out/home-mcp_${version}_$arch
rm -rf "$root"
install -d "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" "$root/etc/home-mcp" \
  "$root/usr/share/doc/home-mcp"
install -m 0755 "$bin" "$root/usr/bin/home-mcp"
"${tool}strip" "$root/usr/bin/home-mcp" 2>/dev/null || strip "$root/usr/bin/home-mcp"
install -m 0644 systemd/home-mcp.service "$root/lib/systemd/system/home-mcp.service"
install -m 0640 systemd/config.toml.example "$root/etc/home-mcp/config.toml"
install -m 0600 systemd/home-mcp.env "$root/etc/home-mcp/home-mcp.env"
install -m 0644 README.md systemd/config.toml.example "$root/usr/share/doc/home-mcp/"
# The README links its reference pages as docs/*.md: ship them beside it.
install -d "$root/usr/share/doc/home-mcp/docs"
install -m 0644 docs/*.md "$root/usr/share/doc/home-mcp/docs/"
cat >"$root/usr/share/doc/home-mcp/copyright" <<COPY
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: home-mcp
License: MIT
Files: *
License: MIT
COPY
for s in postinst prerm postrm; do install -m 0755 "cross/debian/$s" "$root/DEBIAN/$s"; done
printf '/etc/home-mcp/config.toml\n/etc/home-mcp/home-mcp.env\n' >"$root/DEBIAN/conffiles"
size_kb=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: home-mcp
Version: $version
Architecture: $arch
Maintainer: home-mcp maintainers <home-mcp@localhost>
Installed-Size: $size_kb
Depends: libc6 (>= $glibc), passwd
Recommends: systemd
Section: net
Priority: optional
Homepage: https://github.com/home-mcp/home-mcp
Description: MCP server for the Loxone Miniserver
 A small, synchronous Model Context Protocol server that runs beside a Loxone
 Miniserver (built for a Raspberry Pi): tools, resources and prompts for AI clients
 over Streamable HTTP and stdio, API keys with roles, a dashboard and an admin page.
 Runs as the hardened systemd service home-mcp.service.
CONTROL
deb=$out/home-mcp_${version}_$arch.deb
dpkg-deb --build --root-owner-group -Zxz "$root" "$deb" >/dev/null
echo "$deb: $(stat -c %s "$deb") bytes (binary $(stat -c %s "$root/usr/bin/home-mcp") bytes, glibc >= $glibc)"
