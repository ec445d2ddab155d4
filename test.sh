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
  [sshd]=openssh-server    # agent --ssh test (sshd in a lab host)
  [ssh]=openssh-client     # agent --ssh test
  [ssh-keygen]=openssh-client  # agent --ssh test (throwaway keys)
  [python3]=python3        # kubernetes-validate (below)
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

# The Kubernetes schema validator of the k8s-manifests test, from PyPI, in
# a venv of its own under target/ (never the system's Python packages).
kv="$PWD/target/k8s-validate-venv"
if [ ! -x "$kv/bin/kubernetes-validate" ]; then
  rm -rf "$kv"
  if ! python3 -m venv "$kv" >/dev/null 2>&1; then
    # Debian's python3 has no venv module without python3-venv.
    rm -rf "$kv"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    fi
    python3 -m venv "$kv" >/dev/null 2>&1 || echo "test.sh: warning: cannot make a Python venv in $kv" >&2
  fi
  if [ -x "$kv/bin/pip" ]; then
    "$kv/bin/pip" install -q --disable-pip-version-check kubernetes-validate >/dev/null ||
      echo "test.sh: warning: pip install kubernetes-validate failed" >&2
  fi
fi
# Without it the test fails under CI and is skipped elsewhere.
if [ -x "$kv/bin/kubernetes-validate" ]; then
  export IOTOLL_KUBERNETES_VALIDATE="$kv/bin/kubernetes-validate"
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked --features iotoll/test-hooks -- -D warnings
# Every test binary runs even when one fails (--no-fail-fast); the last
# line sums them all.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
# test-hooks: the few test-only behaviours (an injected fault, a fake
# agent version, a pause) that release builds do not have.
cargo test --workspace --locked --no-fail-fast --features iotoll/test-hooks 2>&1 | tee "$log" || status=$?
if [ "$status" != 0 ]; then
  grep -E '^test .* FAILED$' "$log" | sed 's/^/test.sh: /' | sort -u || true
fi
awk '/^test result:/ { for (i = 2; i <= NF; i++) { v = $(i - 1) + 0
    if ($i ~ /^passed/) p += v; if ($i ~ /^failed/) f += v; if ($i ~ /^ignored/) g += v } }
  END { printf "test.sh: %d passed, %d failed, %d ignored\n", p, f, g }' "$log"
exit "$status"
