#!/usr/bin/env bash
# How exactly iotoll measures a shaped lab link: single-stream goodput a->b
# against iperf3's on the same link, and against the shaper's rate, on
# pair-1g (MTU 1500) and pair-10g (MTU 9000), alternating, several rounds,
# in one run; prints medians, ratios and PASS/FAIL against the targets
# (iotoll within 1 % of iperf3; iotoll >= 93 % of the rate).
# Usage: bench/lab-accuracy.sh [--rounds N] [--time SECONDS] [--ramp SECONDS] [--cases 1g,10g]
# Needs root (the labs are network namespaces) and iperf3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
command -v iperf3 >/dev/null || { echo "iperf3 is not installed (apt-get install iperf3)" >&2; exit 1; }
cargo build --release --locked -q -p iotoll
iotoll="$PWD/target/release/iotoll"
tag=$$
# The labs this run brings up (the Python side takes them down itself; this
# is the backstop if it is killed). `lab down` also kills whatever still runs
# in their namespaces.
cleanup() {
  for n in "bench-1g-$tag" "bench-10g-$tag"; do
    if "$iotoll" lab status "$n" >/dev/null 2>&1; then "$iotoll" lab down "$n" >&2 || true; fi
  done
}
trap cleanup EXIT
python3 "$here/lab_accuracy.py" --iotoll "$iotoll" --tag "$tag" "$@"
