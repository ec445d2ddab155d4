#!/usr/bin/env bash
# This build of iotoll against another (a commit, default: the last one
# before HEAD's branch point given as REV), alternating, in one run: the
# figures a refactor must leave unchanged within noise.
# Usage: bench/old-vs-new.sh REV [--rounds N] [--time S] [--dir D] [--iscsi]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
rev=${1:?usage: bench/old-vs-new.sh REV [options]}; shift
old=$(mktemp -d /var/tmp/iotoll-old.XXXXXX)
trap 'git worktree remove --force "$old/src" >/dev/null 2>&1 || true; rm -rf "$old"' EXIT
git worktree add -q --detach "$old/src" "$rev"
(cd "$old/src" && CARGO_TARGET_DIR="$old/target" cargo build --release --locked -q -p iotoll)
cargo build --release --locked -q -p iotoll
exec python3 "$here/old_vs_new.py" --old "$old/target/release/iotoll" --new "$PWD/target/release/iotoll" "$@"
