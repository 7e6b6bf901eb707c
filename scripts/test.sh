#!/usr/bin/env bash
# Installs what the test suite needs (idempotently) and runs the whole suite.
# This is the README's test command, and exactly what CI runs (.ci/run).
#   - etcd-server: the real etcd the store conformance suite and the etcd
#     datastore tests start on loopback ports;
#   - protobuf-compiler: builds the gRPC bindings;
#   - containerd, runc, containernetworking-plugins, busybox-static: the
#     kubelet tests start their own managed containerd (crates/kubelet/tests)
#     and build the pause and busybox images locally;
#   - nftables, conntrack, iproute2: kube-proxy, NetworkPolicy and the node
#     network program the host (the network tests do so inside network
#     namespaces they create); dnsutils: dig queries the cluster DNS;
#   - dbus-daemon: the graceful node shutdown test runs a private bus with a
#     stand-in for systemd-logind (the machine need not run systemd);
#   - kubectl comes with the machine image (/usr/bin/kubectl);
#   - the official Python `kubernetes` client, pip-installed into a venv under
#     target/ (client_python.rs finds its interpreter via RKUBE_TEST_PYTHON).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(protobuf-compiler etcd-server containerd runc containernetworking-plugins busybox-static nftables conntrack iproute2 dnsutils dbus-daemon)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "rkube tests: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # Don't let the packages start etcd or containerd services: the tests start their own.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  apt-get install -y -qq "${missing[@]}"
  rm -f /usr/sbin/policy-rc.d
fi
command -v kubectl >/dev/null || { echo "rkube tests: kubectl not found on PATH; install kubectl 1.33 (the tests drive the real kubectl)" >&2; exit 1; }

python_client=kubernetes==33.1.0
venv=target/python-client-venv
if ! "$venv/bin/python" -c "import kubernetes, sys; sys.exit(kubernetes.__version__ != '${python_client#*==}')" 2>/dev/null; then
  echo "rkube tests: installing the Python client $python_client into $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$python_client"
fi
export RKUBE_TEST_PYTHON="$PWD/$venv/bin/python"

# A whole-suite run is one build: incremental caches would only double the
# disk it takes (set CARGO_INCREMENTAL=1 to keep them while iterating).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --locked --no-fail-fast "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One closing line for the whole run: the sum over every test binary.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed;?$/) p += $(i-1); if ($(i) ~ /^failed;?$/) f += $(i-1) } }
     END { printf "%d passed, %d failed\n", p, f }' "$log"
exit "$status"
