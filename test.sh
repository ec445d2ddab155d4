#!/usr/bin/env bash
# The test command of the README: installs what tests and benchmarks need
# (when run as root on Debian), then checks formatting and lints, then
# builds and runs every test.
set -euo pipefail
cd "$(dirname "$0")"

# command -> Debian package
declare -A need=(
  [fio]=fio                # bench/disk-vs-fio.sh
  [iperf3]=iperf3          # bench/net-vs-peers.sh
  [iperf]=iperf            # bench/net-vs-peers.sh (iperf2)
  [sockperf]=sockperf      # bench/net-vs-peers.sh
  [setpriv]=util-linux     # permission test runs as nobody when root
  [losetup]=mount          # block-device test
  [mount]=mount            # full-disk test (small tmpfs)
  [ip]=iproute2            # unreachable-host test (network namespace)
  [ss]=iproute2            # --bind test (source addresses of live sockets)
  [tc]=iproute2            # lab tests (shaping)
  [chromium]=chromium      # the HTML report, loaded headless
  [tgtd]=tgt               # iSCSI initiator tests
  [iscsi-perf]=libiscsi-bin  # bench/iscsi-vs-libiscsi.sh; harness self-test
)
missing=()
for cmd in "${!need[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${need[$cmd]}")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "test.sh: installing ${missing[*]}" >&2
    apt-get update -qq
    # shellcheck disable=SC2046
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(printf '%s\n' "${missing[@]}" | sort -u) >/dev/null
  else
    echo "test.sh: warning: missing packages ${missing[*]} (install them as root)" >&2
  fi
fi

cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --workspace --locked
