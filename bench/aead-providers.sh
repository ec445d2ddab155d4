#!/usr/bin/env bash
# The AEAD speed of rustls' two crypto providers (ring, aws-lc-rs) on this
# CPU, sealing 16 KiB records on one thread, beside `openssl speed` at the
# same size: the data behind iotoll's choice of provider (docs/design.md).
# Usage: bench/aead-providers.sh [GIB per cipher and provider, default 2] [ROUNDS, default 3]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
gib=${1:-2}; rounds=${2:-3}
(cd "$here/aead" && cargo build --release -q)
for r in $(seq 1 "$rounds"); do
  echo "== round $r"
  "$here/aead/target/release/aead-providers" "$gib"
  for c in aes-128-gcm aes-256-gcm chacha20-poly1305; do
    openssl speed -evp "$c" -bytes 16384 -seconds 2 2>/dev/null | tail -1 |
      awk -v c="$c" '{v=$NF; sub(/k$/,"",v); printf "%-30s %8.0f MB/s (openssl speed, one core)\n", "openssl " c, v/1000}'
  done
done
