#!/usr/bin/env bash
# iotoll's network engine against iperf3, iperf2 and sockperf on loopback,
# alternating, several rounds, in one run; prints medians and ratios.
# Usage: bench/net-vs-peers.sh [--rounds N] [--time SECONDS] [--cases a,b,...] [--iperf2-conns N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
for t in iperf3 iperf sockperf; do
  command -v "$t" >/dev/null || { echo "$t is not installed (apt-get install iperf3 iperf sockperf)" >&2; exit 1; }
done
cargo build --release --locked -q -p iotoll
exec python3 "$here/net_vs_peers.py" --iotoll "$PWD/target/release/iotoll" "$@"
