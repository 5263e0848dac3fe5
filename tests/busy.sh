#!/usr/bin/env bash
# Runs a command with N busy loops per core beside it (default 12), as a loaded machine would
# be, and stops the loops when the command ends; exits with the command's status.
#   tests/busy.sh [-n N] -- COMMAND...
set -u
per_core=12
if [[ "${1:-}" == "-n" ]]; then per_core=$2; shift 2; fi
[[ "${1:-}" == "--" ]] && shift
loops=$(( per_core * $(nproc) ))
pids=()
for _ in $(seq "$loops"); do
  ( while :; do :; done ) &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
echo "busy.sh: $loops busy loops beside: $*" >&2
"$@"
