#!/usr/bin/env bash
# iotoll net crr and net cc against a C reference with netperf TCP_CRR's
# loop (bench/crr_ref.c: one process per client, blocking sockets; netperf
# is not packaged for this distribution), on loopback, alternating, several
# rounds, in one run; prints medians of connections/s and whole-host CPU per
# connection, and their ratios.
# Usage: bench/crr-vs-ref.sh [--rounds N] [--time S] [--ramp S] [--conns N]
#        [--req BYTES] [--resp BYTES] [--kinds crr,cc] [--linger0]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
cargo build --release --locked -q -p iotoll
ref=$(mktemp -d)/crr_ref
trap 'rm -rf "$(dirname "$ref")"' EXIT
cc -O2 -pthread -o "$ref" "$here/crr_ref.c"
python3 "$here/crr_vs_ref.py" --iotoll "$PWD/target/release/iotoll" --ref "$ref" "$@"
