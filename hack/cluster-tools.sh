#!/usr/bin/env bash
# Builds the local test cluster's binaries from the Go module proxy into a cache outside the
# checkout, once: the control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kwok) as ONE multi-call binary, hack/tools/controlplane, linked under
# those five names; the Kueue controller with its CRDs and webhook configurations, and with it
# the JobSet controller (a module Kueue requires, so its packages are mostly Kueue's) with its
# CRD and webhook configurations; kubectl with GPUCTL_WITH_KUBECTL=1. Prints the directory that holds them on its last line.
#
#   hack/cluster-tools.sh            build what is missing, print the directory
#   GPUCTL_CACHE=/some/dir hack/...  use another cache root (default ~/.cache/gpuctl)
#   GPUCTL_WITHOUT_KUEUE=1 hack/...  the control plane only (make demo builds Kueue and JobSet
#                                    afterwards, in the background)
#
# Runs one at a time on a machine: it waits for the lock that testcluster.Binaries takes,
# ${TMPDIR:-/tmp}/gpuctl-cluster-tools.lock (see below).
#
# The first build of the control plane takes about 7 minutes on 2 cores with empty Go caches
# (423 s, downloads included; as five binaries from two modules it took 525 s: etcd's and kwok's
# packages compiled apart from Kubernetes' and the union of the code linked five times; the one
# binary links in about 11 s), and Kueue about 5 more (JobSet, with it, about 10 s). Later runs only
# check that the files are there. Progress lines every 15 s say what is building and about how
# long is left. No binary carries DWARF. A change of the link flags alone (BUILD_REV) relinks in
# seconds when Go's build cache still holds the packages.
set -euo pipefail

K8S_VERSION=v1.37.1
ETCD_VERSION=v3.7.3
KWOK_VERSION=v0.8.0
KUEUE_VERSION=v0.15.2
JOBSET_VERSION=v0.10.1
# The JobSet controller is built into the same directory when it is missing (its version is
# not part of the name: a cache without it gains it on the next run, not a rebuild of all).
# BUILD_REV changes when the way the binaries are built changes (r2: the Kubernetes binaries
# carry their version, which Kueue parses; r3: one control-plane binary), so that an existing
# cache is rebuilt, not reused. The versions are those of hack/tools/controlplane/go.mod and
# hack/tools/kueue/go.mod (a test keeps them equal).
BUILD_REV=r3

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${GPUCTL_CACHE:-$HOME/.cache/gpuctl}
dir="$cache/cluster/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION-kueue-$KUEUE_VERSION-$BUILD_REV"

# One run at a time on this machine: make demo's background Kueue build and a test's
# testcluster.Binaries would otherwise build into the same directory (`mv: cannot stat
# .../.build-kueue/...`). The lock is the one testcluster.Binaries takes, flock(2) on
# os.TempDir()/gpuctl-cluster-tools.lock; Binaries holds it while it runs this script and says
# so with GPUCTL_TOOLS_LOCKED=1, so the script does not wait for its own caller. Without
# flock(1) (macOS) runs are not serialized, as testcluster does not lock there either.
lock=${TMPDIR:-/tmp}/gpuctl-cluster-tools.lock
if [ "${GPUCTL_TOOLS_LOCKED:-}" != 1 ] && command -v flock >/dev/null; then
  exec 9>>"$lock"
  if ! flock -n 9; then
    echo ">> waiting for another hack/cluster-tools.sh to finish (lock $lock)" >&2
    flock 9
  fi
fi
mkdir -p "$dir"

export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
export GONOSUMDB=k8s.io/kubernetes

# What kube-apiserver reports at /version (and the other binaries with --version); unstamped it
# is v0.0.0-master+$Format:%H$, which Kueue refuses to parse.
k8s_minor=${K8S_VERSION#v1.}
k8s_minor=${k8s_minor%%.*}
k8s_ldflags="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$k8s_minor -X k8s.io/component-base/version.gitTreeState=clean"
kueue_ldflags="-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION -X sigs.k8s.io/jobset/pkg/version.GitVersion=$JOBSET_VERSION"

# What a first build of each step typically takes on 2 cores with empty Go caches (downloads
# included), for the "about N min left" of the progress lines; measured on this project's
# machines, see README.
declare -A typical=([controlplane]=430 [kueue]=300 [kubectl]=120)
left_after=0 # typical seconds of the steps still to come after the current one

# build MODULE-DIR STEP EXTRA-LDFLAGS BINARY=PACKAGE... builds the binaries of one step that
# are missing, in one `go build` (so the packages they share compile once and in parallel, and
# the links overlap with compiling), without DWARF (the binaries are stripped anyway, and the
# compiler saves the time), then moves them into $dir.
build() {
  local mod=$1 step=$2 ldflags="-s -w $3"
  shift 3
  local bins=() pkgs=() pair
  for pair in "$@"; do
    if [ ! -x "$dir/${pair%%=*}" ]; then bins+=("${pair%%=*}"); pkgs+=("${pair#*=}"); fi
  done
  [ ${#bins[@]} -gt 0 ] || return 0
  after "$step"
  local start=$SECONDS out="$dir/.build-$step"
  rm -rf "$out" && mkdir -p "$out"
  echo ">> building ${bins[*]} — first build only, cached in $dir" >&2
  (cd "$root/hack/tools/$mod" && go build -trimpath -gcflags=all=-dwarf=false -ldflags="$ldflags" -o "$out/" "${pkgs[@]}") >&2 &
  local pid=$! said=$start
  while kill -0 "$pid" 2>/dev/null; do # poll each second (a relink takes seconds), tell every 15
    sleep 1
    if [ $((SECONDS - said)) -ge 15 ] && kill -0 "$pid" 2>/dev/null; then
      said=$SECONDS
      local spent=$((SECONDS - start)) rest=$(( ${typical[$step]:-300} - (SECONDS - start) ))
      [ $rest -gt 30 ] || rest=30
      echo "   ... still building ${bins[*]} (${spent}s; about $(( (rest + left_after + 59) / 60 )) min left in all)" >&2
    fi
  done
  wait "$pid"
  local i name
  for i in "${!bins[@]}"; do # go build names a command after its path's last element (not /vN)
    name=${pkgs[$i]%/v[0-9]*}
    mv "$out/${name##*/}" "$dir/${bins[$i]}"
  done
  rm -rf "$out"
  echo ">> built ${bins[*]} in $((SECONDS - start))s" >&2
}

# after sets left_after to the typical seconds of the steps that follow step in $steps.
after() {
  left_after=0
  local seen=0 st
  for st in "${steps[@]}"; do
    if [ $seen = 1 ]; then left_after=$((left_after + ${typical[$st]})); fi
    if [ "$st" = "$1" ]; then seen=1; fi
  done
}

# kueue_sources copies Kueue's cmd/kueue/main.go from the module into hack/tools/kueue/patched
# (git-ignored), with its hard-coded metrics certificate directory /etc/kueue/metrics/certs
# replaced by $KUEUE_METRICS_CERT_DIR: Kueue without its internal certificate management
# always loads that certificate, and an out-of-cluster Kueue cannot write /etc. It also copies
# the CRDs and webhook configurations the test cluster installs into $dir/kueue-manifests, so
# that nothing reads the module cache at run time.
kueue_sources() {
  local mod="$root/hack/tools/kueue" moddir src
  # A fresh module cache has no copy yet: `go list -m` names a directory only once downloaded.
  (cd "$mod" && go mod download sigs.k8s.io/kueue) >&2
  moddir=$(cd "$mod" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
  if [ -z "$moddir" ] || [ ! -f "$moddir/cmd/kueue/main.go" ]; then
    echo "!! cannot find sigs.k8s.io/kueue's cmd/kueue/main.go in the module cache ($moddir)" >&2
    exit 1
  fi
  mkdir -p "$mod/patched"
  src="$mod/patched/main.go"
  sed 's|metricsCertPath := "/etc/kueue/metrics/certs"|metricsCertPath := os.Getenv("KUEUE_METRICS_CERT_DIR") // patched by hack/cluster-tools.sh|' \
    "$moddir/cmd/kueue/main.go" >"$src"
  if ! grep -q 'metricsCertPath := os.Getenv("KUEUE_METRICS_CERT_DIR")' "$src" || grep -q '/etc/kueue/metrics/certs' "$src"; then
    echo "!! hack/cluster-tools.sh: Kueue $KUEUE_VERSION's cmd/kueue/main.go no longer reads its metrics certificate from" >&2
    echo "!! the line the script patches (metricsCertPath := \"/etc/kueue/metrics/certs\"); update the sed in kueue_sources" >&2
    exit 1
  fi
  copy_manifests "$moddir" kueue-manifests
}

# copy_manifests MODULE-DIR NAME copies a controller module's CRDs (config/components/crd/
# bases) and webhook configurations (config/components/webhook/manifests.yaml) into $dir/NAME,
# unless they are there.
copy_manifests() {
  local moddir=$1 out="$dir/$2"
  [ ! -f "$out/webhook/manifests.yaml" ] || return 0
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp/crd" "$out.tmp/webhook"
  cp "$moddir"/config/components/crd/bases/*.yaml "$out.tmp/crd/"
  cp "$moddir/config/components/webhook/manifests.yaml" "$out.tmp/webhook/"
  chmod -R u+w "$out.tmp"
  rm -rf "$out"
  mv "$out.tmp" "$out"
}

# jobset_sources copies the JobSet CRD and webhook configurations that the test cluster
# installs (testcluster.Options.JobSet) from the module into $dir/jobset-manifests.
jobset_sources() {
  local mod="$root/hack/tools/kueue" moddir
  (cd "$mod" && go mod download sigs.k8s.io/jobset) >&2
  moddir=$(cd "$mod" && go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)
  if [ -z "$moddir" ] || [ ! -f "$moddir/config/components/webhook/manifests.yaml" ]; then
    echo "!! cannot find sigs.k8s.io/jobset's config/components in the module cache ($moddir)" >&2
    exit 1
  fi
  copy_manifests "$moddir" jobset-manifests
}

with_kubectl=${GPUCTL_WITH_KUBECTL:-} # 1 for `make bench` only: the peer it is compared with
want_kueue=0
if [ "${GPUCTL_WITHOUT_KUEUE:-}" != 1 ] && { [ ! -x "$dir/kueue" ] || [ ! -f "$dir/kueue-manifests/webhook/manifests.yaml" ] ||
  [ ! -x "$dir/jobset" ] || [ ! -f "$dir/jobset-manifests/webhook/manifests.yaml" ]; }; then
  want_kueue=1
fi
# The names the control-plane binary answers to (hack/tools/controlplane/main.go).
controlplane_names=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
have_controlplane=1
for n in "${controlplane_names[@]}"; do [ -x "$dir/$n" ] || have_controlplane=0; done
steps=() # what this run builds, in order
[ "$have_controlplane" = 1 ] || steps+=(controlplane)
[ "$want_kueue" = 0 ] || steps+=(kueue)
{ [ "$with_kubectl" = 1 ] && [ ! -x "$dir/kubectl" ]; } && steps+=(kubectl)

if [ "$have_controlplane" = 0 ]; then
  build controlplane controlplane "$k8s_ldflags" controlplane=github.com/gpuctl/gpuctl/hack/tools/controlplane
  for n in "${controlplane_names[@]}"; do ln -sfn controlplane "$dir/$n"; done
fi
if [ "$want_kueue" = 1 ]; then
  kueue_sources
  jobset_sources
  build kueue kueue "$kueue_ldflags" kueue=./patched jobset=sigs.k8s.io/jobset
fi
if [ "$with_kubectl" = 1 ]; then
  build controlplane kubectl "$k8s_ldflags" kubectl=k8s.io/kubernetes/cmd/kubectl
fi
echo "$dir"
