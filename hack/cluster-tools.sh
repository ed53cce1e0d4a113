#!/usr/bin/env bash
# Builds the local test cluster's binaries (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok; kubectl with GPUCTL_WITH_KUBECTL=1) from the Go module proxy into a cache outside the checkout, once.
# Prints the directory that holds them on its last line.
#
#   hack/cluster-tools.sh            build what is missing, print the directory
#   GPUCTL_CACHE=/some/dir hack/...  use another cache root (default ~/.cache/gpuctl)
set -euo pipefail

K8S_VERSION=v1.37.1
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${GPUCTL_CACHE:-$HOME/.cache/gpuctl}
dir="$cache/cluster/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
mkdir -p "$dir"

export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
export GONOSUMDB=k8s.io/kubernetes

build() { # module-dir package binary-name
  local mod=$1 pkg=$2 bin=$3
  if [ -x "$dir/$bin" ]; then return 0; fi
  local start=$SECONDS
  echo ">> building $bin ($pkg) — first build only, cached in $dir" >&2
  (cd "$root/hack/tools/$mod" && go build -trimpath -ldflags='-s -w' -o "$dir/$bin.tmp" "$pkg") >&2 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 15
    kill -0 "$pid" 2>/dev/null && echo "   ... still building $bin ($((SECONDS - start))s)" >&2
  done
  wait "$pid"
  mv "$dir/$bin.tmp" "$dir/$bin"
  echo ">> built $bin in $((SECONDS - start))s" >&2
}

build etcdkwok go.etcd.io/etcd/server/v3 etcd
build etcdkwok sigs.k8s.io/kwok/cmd/kwok kwok
build kube k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver
build kube k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager
build kube k8s.io/kubernetes/cmd/kube-scheduler kube-scheduler
if [ "${GPUCTL_WITH_KUBECTL:-}" = 1 ]; then # for `make bench` only: the peer it is compared with
  build kube k8s.io/kubernetes/cmd/kubectl kubectl
fi
echo "$dir"
