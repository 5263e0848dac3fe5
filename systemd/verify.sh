#!/usr/bin/env bash
# Checks systemd/home-mcp.service offline: `systemd-analyze verify` must print nothing and exit
# 0 (it runs in a throwaway root holding the unit, the host's stock units and a stand-in for
# /usr/bin/home-mcp, since systemd need not be PID 1), and `systemd-analyze security` must
# exit 0 and rate the unit's exposure ("Overall exposure level for UNIT: X.Y ...", a number from
# 0.0 to 10.0) below MAX_EXPOSURE (default 3.0, i.e. "OK" or better). A missing, empty or
# unreadable score fails, as does a MAX_EXPOSURE that is not a number.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: systemd/verify.sh [--install] [UNIT]

UNIT defaults to systemd/home-mcp.service. Prints the exposure score; exits non-zero when
verify complains or the score is MAX_EXPOSURE or worse.
  --install   install Debian's systemd package when systemd-analyze is missing (root)
USAGE
}

cd "$(dirname "$0")/.."
unit=systemd/home-mcp.service
install=0
for a in "$@"; do
  case "$a" in
    --install) install=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "unknown option $a" >&2; usage >&2; exit 2 ;;
    *) unit=$a ;;
  esac
done
if ! command -v systemd-analyze >/dev/null; then
  ((install)) || { echo "systemd-analyze missing (apt-get install systemd, or --install)" >&2; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd
fi
max=${MAX_EXPOSURE:-3.0}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
install -d "$root/lib/systemd" "$root/usr/bin" "$root/etc/home-mcp"
cp -a /lib/systemd/system "$root/lib/systemd/"
name=$(basename "$unit")
cp "$unit" "$root/lib/systemd/system/$name"
printf '#!/bin/sh\n' >"$root/usr/bin/home-mcp"
chmod 0755 "$root/usr/bin/home-mcp"

out=$(systemd-analyze verify --man=no --root="$root" "$name" 2>&1) && rc=0 || rc=$?
if [[ -n $out || $rc -ne 0 ]]; then
  echo "systemd-analyze verify $name (exit $rc):" >&2
  echo "$out" >&2
  exit 1
fi
echo "systemd-analyze verify $name: clean"

number='^[0-9]+(\.[0-9]+)?$'
[[ $max =~ $number ]] || { echo "MAX_EXPOSURE=$max is not a number" >&2; exit 1; }
sec=$(systemd-analyze security --offline=true --no-pager "$unit" 2>&1) && rc=0 || rc=$?
if ((rc != 0)); then
  echo "systemd-analyze security $unit failed (exit $rc):" >&2
  echo "$sec" >&2
  exit 1
fi
line=$(grep -E "Overall exposure level for $name: " <<<"$sec" | tail -n1 || true)
echo "systemd-analyze security: ${line#→ }"
score=$(sed -nE "s/.*Overall exposure level for $name: ([0-9]+\.[0-9]+)( .*)?$/\1/p" <<<"$line")
if [[ ! $score =~ $number ]] || ! awk -v s="$score" 'BEGIN { exit !(s + 0 >= 0 && s + 0 <= 10) }'; then
  echo "systemd-analyze security: no readable exposure score for $name (got '${score}'); its output ends:" >&2
  tail -n 5 <<<"$sec" >&2
  exit 1
fi
awk -v s="$score" -v m="$max" 'BEGIN { exit !(s + 0 < m + 0) }' || { echo "exposure $score >= $max" >&2; exit 1; }
echo "exposure $score < $max: OK"
