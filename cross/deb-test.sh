#!/usr/bin/env bash
# Installs the home-mcp .deb in a throwaway Debian root (debootstrap + chroot), checks what
# the package set up, creates the admin key as a user would, runs the service's command
# line as the service user with the installed config against a simulated Miniserver, uses
# the key over MCP, then removes and purges the package and checks nothing is left.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: cross/deb-test.sh DEB [ROOT]

DEB    the package (cross/deb.sh; amd64 runs natively, arm64/armhf binaries are run
       through qemu-user: the cross libc is copied into the root)
ROOT   a Debian root to use (default target-cross/debroot-bookworm; made with
       debootstrap --variant=minbase when missing, bounded to 15 minutes; needs root)

systemd is not PID 1 in a chroot, so the package's scripts skip starting the service (as
on any system without systemd); the test then runs the unit's ExecStart as the unit's
user with the unit's environment. systemd-analyze verify runs inside the root.
USAGE
}

cd "$(dirname "$0")/.."
case "${1:-}" in -h | --help) usage; exit 0 ;; "") usage >&2; exit 2 ;; esac
deb=$(realpath "$1")
root=$(realpath -m "${2:-target-cross/debroot-bookworm}")
[[ -f $deb ]] || { echo "no package $deb" >&2; exit 1; }
arch=$(dpkg-deb -f "$deb" Architecture)

if [[ ! -x $root/usr/bin/dpkg ]]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
  timeout 900 debootstrap --variant=minbase --include=systemd,systemd-sysv \
    bookworm "$root" http://deb.debian.org/debian
fi
in_root() { chroot "$root" "$@"; }
mounted=0
cleanup() {
  [[ -n ${sim_pid:-} ]] && kill "$sim_pid" 2>/dev/null || true
  [[ -n ${srv_pid:-} ]] && kill "$srv_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  ((mounted)) && umount "$root/proc" || true
}
trap cleanup EXIT
mountpoint -q "$root/proc" || { mount -t proc proc "$root/proc"; mounted=1; }

failed=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; failed=$((failed + 1)); }
check() { # description, command...
  local what=$1; shift
  if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi
}

# A clean start: no earlier install, no user from an earlier run.
in_root dpkg --purge home-mcp >/dev/null 2>&1 || true
in_root userdel home-mcp >/dev/null 2>&1 || true

# Foreign binaries: install with --force-architecture, run through qemu with the cross libc.
run_prefix=()
if [[ $arch != amd64 ]]; then
  case $arch in
    arm64) qemu=qemu-aarch64-static sys=/usr/aarch64-linux-gnu ;;
    armhf) qemu=qemu-arm-static sys=/usr/arm-linux-gnueabihf ;;
  esac
  cp "$(command -v $qemu)" "$root/usr/bin/$qemu"
  mkdir -p "$root$sys" && cp -a "$sys/lib" "$root$sys/"
  run_prefix=("/usr/bin/$qemu" -L "$sys" -E "LD_LIBRARY_PATH=$sys/lib")
fi
force=()
[[ $arch != amd64 ]] && force=(--force-architecture --force-depends)

cp "$deb" "$root/tmp/home-mcp.deb"
echo "== install $(basename "$deb") into $root"
if in_root dpkg "${force[@]}" -i /tmp/home-mcp.deb; then ok "dpkg -i"; else bad "dpkg -i"; exit 1; fi
hm=("${run_prefix[@]}" /usr/bin/home-mcp)
check "home-mcp --version" in_root "${hm[@]}" --version
check "system user home-mcp" in_root getent passwd home-mcp
[[ $(in_root stat -c '%a %U' /var/lib/home-mcp) == "700 home-mcp" ]] && ok "/var/lib/home-mcp 0700 home-mcp" ||
  bad "/var/lib/home-mcp: $(in_root stat -c '%a %U' /var/lib/home-mcp)"
[[ $(in_root stat -c '%a %U %G' /etc/home-mcp/config.toml) == "640 root home-mcp" ]] && ok "config.toml 0640 root:home-mcp" || bad "config.toml perms"
[[ $(in_root stat -c '%a %U' /etc/home-mcp/home-mcp.env) == "600 root" ]] && ok "home-mcp.env 0600 root" || bad "env perms"
check "conffiles registered" in_root sh -c 'dpkg-query -W -f="\${Conffiles}" home-mcp | grep -q /etc/home-mcp/home-mcp.env'
check "service enabled (multi-user.target.wants)" test -L "$root/etc/systemd/system/multi-user.target.wants/home-mcp.service"
if out=$(in_root systemd-analyze verify --man=no /lib/systemd/system/home-mcp.service 2>&1) && [[ -z $out ]]; then
  ok "systemd-analyze verify (installed unit)"
else
  bad "systemd-analyze verify: $out"
fi

# The set-up a user does: the admin key (as root, no options), the Miniserver in the env file.
if key=$(in_root "${hm[@]}" keys generate --role admin --name pi 2>&1) && [[ $key == *homekey_admin_* ]]; then
  key=$(grep -o 'homekey_admin_[A-Za-z0-9_]*' <<<"$key" | head -n1)
  ok "keys generate --role admin (as root)"
else
  bad "keys generate: $key"
fi
[[ $(in_root stat -c '%U %a' /var/lib/home-mcp/keys.toml 2>/dev/null) == "home-mcp 600" ]] &&
  ok "keys.toml in /var/lib/home-mcp, home-mcp 0600" || bad "keys.toml: $(ls -l "$root/var/lib/home-mcp" 2>&1)"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
sim_port=$(free_port)
port=$(free_port)
cp assets/demo-house.json "$root/tmp/demo-house.json"
chroot "$root" "${hm[@]}" sim --structure /tmp/demo-house.json --listen "127.0.0.1:$sim_port" >/dev/null 2>"$root/tmp/sim.log" &
sim_pid=$!
# The service exits when the Miniserver is unreachable at start (systemd restarts it 30 s
# later); under qemu the simulator takes a moment, so wait until it answers.
for _ in $(seq 1 300); do
  curl -s -o /dev/null "http://127.0.0.1:$sim_port/" && break
  sleep 0.1
done
sed -i -e "s/^HOME_HOST=.*/HOME_HOST=127.0.0.1:$sim_port/" -e 's/^HOME_USER=.*/HOME_USER=demo/' \
  -e 's/^HOME_PASS=.*/HOME_PASS=demo/' -e "s/^#HOME_LISTEN=.*/HOME_LISTEN=127.0.0.1:$port/" \
  "$root/etc/home-mcp/home-mcp.env"
# The unit's ExecStart, user, working directory and environment (EnvironmentFile=,
# StateDirectory= -> STATE_DIRECTORY).
exec_start=$(sed -n 's/^ExecStart=//p' "$root/lib/systemd/system/home-mcp.service")
# shellcheck disable=SC2046,SC2086
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin STATE_DIRECTORY=/var/lib/home-mcp \
  $(grep -E '^[A-Z_]+=.+' "$root/etc/home-mcp/home-mcp.env") \
  setpriv --reuid=home-mcp --regid=home-mcp --init-groups sh -c "cd /var/lib/home-mcp && exec ${run_prefix[*]} $exec_start" \
  >/dev/null 2>"$root/tmp/serve.log" &
srv_pid=$!
for _ in $(seq 1 200); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.1
done
check "service command serves /health (as home-mcp, installed config)" curl -sf "http://127.0.0.1:$port/health"
mcp() { # session id, body
  curl -s -D "$root/tmp/h" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H "Authorization: Bearer $key" ${1:+-H "Mcp-Session-Id: $1"} -d "$2" "http://127.0.0.1:$port/mcp"
}
init=$(mcp "" '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"deb-test","version":"1"}}}')
sid=$(grep -i '^mcp-session-id:' "$root/tmp/h" | cut -d' ' -f2 | tr -d '\r')
[[ $init == *serverInfo* && -n $sid ]] && ok "initialize with the admin key (production)" || bad "initialize: $init"
mcp "$sid" '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
tools=$(mcp "$sid" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
[[ $tools == *control_device* ]] && ok "tools/list" || bad "tools/list: ${tools:0:300}"
call=$(mcp "$sid" '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"control_device","arguments":{"device":"Deckenlicht Küche","action":"on"}}}')
[[ $call == *'"isError":false'* ]] && ok "tools/call control_device against the simulated Miniserver" || bad "control_device: ${call:0:300}"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/admin/keys")
[[ $code == 200 ]] && ok "/admin/keys from loopback" || bad "/admin/keys: HTTP $code"
[[ -f $root/var/lib/home-mcp/audit.db && $(in_root stat -c %U /var/lib/home-mcp/audit.db) == home-mcp ]] &&
  ok "audit.db owned by home-mcp" || bad "audit.db: $(ls -l "$root/var/lib/home-mcp")"
kill -TERM "$srv_pid"; wait "$srv_pid" 2>/dev/null && ok "SIGTERM: clean exit" || bad "SIGTERM exit $?"
srv_pid=
kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true
sim_pid=

echo "== remove and purge"
check "dpkg -r" in_root dpkg -r home-mcp
[[ ! -e $root/usr/bin/home-mcp && ! -e $root/lib/systemd/system/home-mcp.service ]] && ok "binary and unit removed" || bad "files left after remove"
[[ -f $root/etc/home-mcp/config.toml && -d $root/var/lib/home-mcp ]] && ok "remove keeps config and keys" || bad "remove lost config/keys"
check "dpkg -P" in_root dpkg -P home-mcp
[[ ! -e $root/etc/home-mcp && ! -e $root/var/lib/home-mcp ]] && ok "purge removes /etc/home-mcp and /var/lib/home-mcp" || bad "left after purge"
[[ ! -e $root/etc/systemd/system/multi-user.target.wants/home-mcp.service ]] && ok "no enablement link left" || bad "enablement link left"
check "package unknown to dpkg" bash -c "! chroot '$root' dpkg -s home-mcp"
echo "$arch: $failed failed"
[[ $failed -eq 0 ]]
