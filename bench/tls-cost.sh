#!/usr/bin/env bash
# What TLS costs iotoll's network engine on loopback: one stream cleartext
# against --tls (each cipher asked for), and the cipher's one-core ceiling
# from `openssl speed -evp`, alternating, several rounds, in one run; prints
# medians, tls/cleartext ratios (goodput, CPU %, CPU per Gbit) and TLS
# goodput / openssl ceiling. No targets: the ratios are the result.
# Usage: bench/tls-cost.sh [--rounds N] [--time SECONDS] [--ramp SECONDS]
#                          [--openssl-seconds S] [--ciphers aes-128-gcm,chacha20-poly1305]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
command -v openssl >/dev/null || { echo "openssl is not installed (apt-get install openssl)" >&2; exit 1; }
cargo build --release --locked -q -p iotoll
exec python3 "$here/tls_cost.py" --iotoll "$PWD/target/release/iotoll" "$@"
