#!/usr/bin/env bash
# iotoll's iSCSI initiator vs libiscsi's iscsi-perf on one private tgtd
# (null LUN and tmpfs LUN), alternating, several reps, in one run. Prints
# median IOPS and whole-host CPU per I/O for both and their ratios, and
# iotoll's peak RSS with 4 workers (4 sessions) at 4k QD 32.
# Cases: 4k-null, 4k-tmpfs (4k random read QD 32), 64k-null, 64k-tmpfs (64k
# sequential read QD 8), rss. Needs root, tgt (tgtd, tgtadm), libiscsi-bin.
# Usage: bench/iscsi-vs-libiscsi.sh [--reps N] [--time SECONDS] [--cases LIST]
#        [--tmpfs-dir DIR] [--lun-size SIZE] [--json]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
PATH=$PATH:/usr/sbin:/sbin
for t in tgtd tgtadm iscsi-perf; do
    command -v "$t" >/dev/null || { echo "$t is not installed (apt-get install tgt libiscsi-bin)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "tgtd needs root" >&2; exit 1; }
cargo build --release --locked -q -p iotoll
exec python3 "$here/iscsi_vs_libiscsi.py" --iotoll "$PWD/target/release/iotoll" "$@"
