#!/usr/bin/env bash
# Many hosts, one window: a lab of one server and 16 client hosts on an
# unshaped switch (the engine is the limit), 16 endpoint pairs c_k -> server.
# In one run, alternating: iotoll's aggregate goodput (suite run --lab, the
# console starting an agent per host) against sixteen iperf3 clients started
# at once in the same client hosts; the console's measured start/stop skew
# across the 17 agents; the time from `suite run` to RECORD ON.
# Prints medians, ratios and PASS/FAIL against the targets (>= 1.00 x iperf3;
# start skew < 1 ms).
# Usage: bench/multihost.sh [--rounds N] [--time SECONDS] [--ramp SECONDS] [--threads auto,2]
# Needs root (network namespaces) and iperf3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
command -v iperf3 >/dev/null || { echo "iperf3 is not installed (apt-get install iperf3)" >&2; exit 1; }
cargo build --release --locked -q -p iotoll
iotoll="$PWD/target/release/iotoll"
tag=$$
cleanup() {
  if "$iotoll" lab status "bench-mh-$tag" >/dev/null 2>&1; then "$iotoll" lab down "bench-mh-$tag" >&2 || true; fi
}
trap cleanup EXIT
python3 "$here/multihost.py" --iotoll "$iotoll" --tag "$tag" "$@"
