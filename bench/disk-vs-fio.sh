#!/usr/bin/env bash
# iotoll vs fio on the same file and access spec, alternating, several rounds,
# in one run. Prints median IOPS and whole-host CPU per I/O for both and their
# ratios (against each fio mode and the best one), and the queue depth each tool kept (qd_achieved). Cases: qd32, qd1, rss
# (one file), multi (4 files, one worker each), mixed (Iometer File Server).
# Usage: bench/disk-vs-fio.sh [--rounds N] [--time SECONDS] [--dir DIR] [--size SIZE] [--cases LIST]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 1; }
cargo build --release --locked -q -p iotoll
exec python3 "$here/disk_vs_fio.py" --iotoll "$PWD/target/release/iotoll" "$@"
