#!/usr/bin/env bash
# Per-host CPU of a one-machine lab (pair-1g, one stream a->b) with and
# without CPU sets, beside `mpstat -P ALL` over the same window; alternating,
# several rounds, in one run; prints each round and the medians.
# Usage: bench/lab-cpus.sh [--rounds N] [--time SECONDS] [--ramp SECONDS]
# Needs root (the labs are network namespaces) and mpstat (sysstat).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
command -v mpstat >/dev/null || { echo "mpstat is not installed (apt-get install sysstat)" >&2; exit 1; }
cargo build --release --locked -q -p iotoll
iotoll="$PWD/target/release/iotoll"
tag=$$
cleanup() {
  for n in $("$iotoll" lab list 2>/dev/null | awk '$1 ~ /^bench-cpus-/ {print $1}'); do
    "$iotoll" lab down "$n" >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT
python3 "$here/lab_cpus.py" --iotoll "$iotoll" "$@"
