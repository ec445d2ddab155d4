#!/usr/bin/env bash
# iotoll net udp against iperf3 -u: on loopback unlimited, and on the
# pair-1g lab at 100, 500 and 950 Mbit/s and unlimited; goodput, offered
# rate, loss and whole-host CPU per KB, alternating, several rounds, in one
# run; prints medians and ratios.
# Usage: bench/udp-vs-iperf3.sh [--rounds N] [--time SECONDS] [--ramp SECONDS]
#        [--cases lo,1g-100,1g-500,1g-950,1g-max]
# Needs iperf3, and root for the lab cases (network namespaces).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
command -v iperf3 >/dev/null || { echo "iperf3 is not installed (apt-get install iperf3)" >&2; exit 1; }
cargo build --release --locked -q -p iotoll
iotoll="$PWD/target/release/iotoll"
tag=$$
# The labs this run brings up (the Python side takes them down itself; this
# is the backstop if it is killed).
cleanup() {
  for k in 1g-100 1g-500 1g-950 1g-max; do
    n="r-udp-$k-$tag"; n=${n:0:24}
    if "$iotoll" lab status "$n" >/dev/null 2>&1; then "$iotoll" lab down "$n" >&2 || true; fi
  done
}
trap cleanup EXIT
python3 "$here/udp_vs_iperf3.py" --iotoll "$iotoll" --tag "$tag" "$@"
