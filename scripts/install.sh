#!/usr/bin/env bash
# Installs what rkube needs on a fresh Debian 12 machine (with a Rust
# toolchain), builds rkube in release mode and puts it on the PATH as
# /usr/local/bin/rkube. Idempotent: run it again after `git pull`.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: protoc builds the etcd and CRI gRPC bindings; the node
# agent runs pods through containerd (runc, the CNI plugins) and builds the
# busybox image from busybox-static; kube-proxy and NetworkPolicy program
# nftables (nft), clear stale UDP flows with conntrack, and the node network
# sets routes with iproute2.
packages=(protobuf-compiler containerd runc containernetworking-plugins busybox-static nftables conntrack iproute2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "rkube install: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}"
fi

echo "rkube install: building rkube (release; the first build takes several minutes)"
cargo build --release --locked -p rkube
install -m 0755 "${CARGO_TARGET_DIR:-target}/release/rkube" /usr/local/bin/rkube
echo "rkube install: installed /usr/local/bin/rkube ($(/usr/local/bin/rkube --version))"
# The images pods can use without a registry: registry.k8s.io/pause:3.10 and
# docker.io/library/busybox:<this machine's busybox version>, left in
# /var/lib/rkube/agent/images for the node agent to import (at once if it runs).
/usr/local/bin/rkube images build-local
