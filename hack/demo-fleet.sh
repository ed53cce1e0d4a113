#!/usr/bin/env bash
# make demo-fleet: the fleet of docs/fleet.md on three local clusters side by side — hub, a
# Kueue MultiKueue manager with a CPU node only, and the GPU clusters gpu-a (2 x 8 A100) and
# gpu-b (2 x 8 H100), each with the real Kueue — and one gpuctl-reconciler --cluster NAME per
# cluster over a copy of examples-fleet/. Shows the fleet's status, a job committed to hub
# running in a worker, one worker filling and the next job going to the other, and describe
# and logs of a dispatched job read in its worker. Re-runnable: it reuses the clusters,
# refreshes the copy and restarts the reconcilers. `make demo-fleet-down` stops them all.
# `make demo` (one cluster) is separate and unchanged.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
demo=.cache/demo-fleet
mkdir -p "$demo"
bold() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
clusters=(hub gpu-a gpu-b)
declare -A port=([hub]=8091 [gpu-a]=8092 [gpu-b]=8093)

bold "building bin/gpuctl and bin/gpuctl-reconciler"
make --no-print-directory build cluster-helper >/dev/null
cluster=.cache/bin/cluster # hack/cluster, built by make cluster-helper with build's flags

# Kueue is what the fleet is about, so it is built now, not in the background as make demo
# does; kubectl creates the workers' Secrets in hub, as an admin would.
bold "building the local clusters' binaries with Kueue and kubectl (the first run builds them from the Go module proxy: about 15 min on 2 cores)"
bindir=$(GPUCTL_WITH_KUBECTL=1 hack/cluster-tools.sh | tail -1)
kubectl() { "$bindir/kubectl" "$@"; }

# The nodes of each cluster (the format of test/testcluster/testdata/nodes.yaml): hub has no
# GPU, so it runs no job; each worker has two nodes of 8 GPUs, whose names the pools of
# examples-fleet/clusters/NAME/pools.yaml list.
cat > "$demo/nodes-hub.yaml" <<'YAML'
- {name: cpu-0, cpu: "32", memory: 128Gi}
YAML
for c in gpu-a gpu-b; do
  if [ "$c" = gpu-a ]; then kind=a100 product=NVIDIA-A100-SXM4-80GB type=a100-80g; else kind=h100 product=NVIDIA-H100-80GB-HBM3 type=h100-80g; fi
  : > "$demo/nodes-$c.yaml"
  for i in 0 1; do
    echo "- {name: gpu-$kind-$i, gpus: 8, gpuProduct: $product, gpuType: $type, cpu: \"128\", memory: 1Ti}" >> "$demo/nodes-$c.yaml"
  done
done

bold "starting the three local clusters with Kueue (hub's with MultiKueue's configuration, deploy/kueue/multikueue_manager_config.yaml)"
up() { # up NAME: start the cluster in $demo/NAME, or reuse the running one
  local args=(up --dir "$demo/$1" --nodes "$demo/nodes-$1.yaml" --kueue)
  [ "$1" = hub ] && args+=(--kueue-config deploy/kueue/multikueue_manager_config.yaml)
  if ! "$cluster" "${args[@]}" >"$demo/$1.up.log" 2>&1; then
    "$cluster" down --dir "$demo/$1" >>"$demo/$1.up.log" 2>&1
    "$cluster" "${args[@]}" >>"$demo/$1.up.log" 2>&1 || { cat "$demo/$1.up.log"; return 1; }
  fi
  grep -E 'cluster up|already running' "$demo/$1.up.log" | tail -1 | sed "s/^/$1: /"
}
pids=()
for c in "${clusters[@]}"; do up "$c" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done
kc() { echo "$root/$demo/$1/kubeconfig"; }

# What an admin does once per worker: the Secret in hub's kueue-system that holds a kubeconfig
# of the worker (the local clusters' carry their CA and token inline, as Kueue wants), never in
# Git. The manager's MultiKueueClusters (rendered from multiKueue: in .gpuctl.yaml) read them.
bold "the workers' kubeconfig Secrets in hub: kubectl --kubeconfig hub -n kueue-system create secret generic multikueue-gpu-a|b"
for w in gpu-a gpu-b; do
  kubectl --kubeconfig "$(kc hub)" -n kueue-system create secret generic "multikueue-$w" \
    --from-file=kubeconfig="$(kc "$w")" --dry-run=client -o yaml | kubectl --kubeconfig "$(kc hub)" apply -f - | sed 's/^/  /'
done

# The client's config, in the demo's own XDG_CONFIG_HOME: the three clusters as kubeconfig
# contexts, named as hub names its MultiKueueClusters, so that describe and logs of hub's jobs
# read their pods in the worker.
export XDG_CONFIG_HOME=$root/$demo/xdg
mkdir -p "$XDG_CONFIG_HOME/gpuctl"
{
  echo "clusters:"
  for c in "${clusters[@]}"; do printf '  - name: %s\n    context: gpuctl-local\n    kubeconfig: %s\n' "$c" "$(kc "$c")"; done
} > "$XDG_CONFIG_HOME/gpuctl/config"
export KUBECONFIG=$(kc hub)

# The reconcilers' source: one copy of examples-fleet/, refreshed on every run.
repo=$demo/repo
for c in "${clusters[@]}"; do
  if [ -f "$demo/reconciler-$c.pid" ] && kill -0 "$(cat "$demo/reconciler-$c.pid")" 2>/dev/null; then
    kill "$(cat "$demo/reconciler-$c.pid")"
  fi
  rm -f "$demo/reconciler-$c.pid"
done
rm -rf "$repo" && mkdir -p "$repo" && cp -a examples-fleet/. "$repo/"
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$token,demo,admin" > "$demo/tokens"

bold "starting one gpuctl-reconciler per cluster: --cluster NAME --source=dir:$repo (logs: $demo/reconciler-NAME.log)"
for c in gpu-a gpu-b hub; do # the workers first: their queues exist before hub dispatches
  nohup bin/gpuctl-reconciler --cluster "$c" --source=dir:"$repo" --kubeconfig "$(kc "$c")" \
    --listen "127.0.0.1:${port[$c]}" --tokens-file "$demo/tokens" --interval 1m \
    >"$demo/reconciler-$c.log" 2>&1 &
  echo $! > "$demo/reconciler-$c.pid"
  echo "  $c: pid $!, API and page at http://127.0.0.1:${port[$c]}/"
done
for c in "${clusters[@]}"; do # until each has finished its first sync
  for _ in $(seq 1 240); do
    grep -qE 'synced|sync not applied' "$demo/reconciler-$c.log" && break
    sleep 0.5
  done
done

# jobs NAME PATTERN STATE: wait (up to 90 s) until gpuctl get jobs --all-clusters has a row of
# NAME whose line matches PATTERN, e.g. the worker that runs it.
wait_job() {
  for _ in $(seq 1 180); do
    bin/gpuctl get jobs --all-clusters -A 2>/dev/null | grep -E "$1" | grep -qE "$2" && return 0
    sleep 0.5
  done
  echo "(still waiting for $1 to match $2 after 90 s)"
}

bold "gpuctl status --all-clusters (the client config $XDG_CONFIG_HOME/gpuctl/config lists the three clusters)"
bin/gpuctl status --all-clusters || true

bold "hub's MultiKueueClusters (rendered from multiKueue: of .gpuctl.yaml, reaching the workers with the Secrets)"
for _ in $(seq 1 120); do
  [ "$(kubectl get multikueueclusters -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Active")].status}{end}' 2>/dev/null)" = TrueTrue ] && break
  sleep 0.5
done
kubectl get multikueueclusters

for _ in $(seq 1 180); do # both replicas of alice's chat service run in gpu-a, holding her 8 GPUs there
  [ "$(bin/gpuctl get jobs --clusters gpu-a -n alice 2>/dev/null | grep -c 'llama3-8b-chat .*Running')" = 2 ] && break
  sleep 0.5
done
wait_job 'llama3-8b-sft' 'hub→gpu-[ab]'
bold "every job of the fleet: gpuctl get jobs --all-clusters -A (hub's llama3-8b-sft ran in the worker of CLUSTER; alice's chat service holds her 8 GPUs of gpu-a)"
bin/gpuctl get jobs --all-clusters -A || true

# Jobs that hold their GPUs for an hour: GPUCTL_DEMO_RUN_FOR is DEMO ONLY, the local cluster's
# kwok keeps the pods of a container that has it Running that long (test/testcluster/kwok.yaml);
# on a real cluster it does nothing. New names on every run, as make demo's burst.
run=$(date +%M%S)
sweep() { # sweep N: commit a 8-GPU training job of alice to hub
  cat > "$repo/clusters/hub/teams/alice/lr-sweep-$run-$1.yaml" <<YAML
# DEMO ONLY: GPUCTL_DEMO_RUN_FOR keeps this job Running for an hour in the local cluster.
kind: training
version: v0.1
job:
  name: lr-sweep-$run-$1
  description: "Llama-3-8B SFT, learning rate sweep point $1"
environment:
  image: registry.example.com/llama-factory-deepspeed:v0.8.0
  env:
    - name: GPUCTL_DEMO_RUN_FOR
      value: 1h
resources:
  pool: gpu-pool
  gpu: 8
YAML
}
bold "filling gpu-b: lr-sweep-$run-1 (8 GPUs) committed to clusters/hub/teams/alice/ — gpu-a has no room for alice, so it goes to gpu-b"
sweep 1
wait_job "lr-sweep-$run-1" 'hub→gpu-[ab].*Running'
bin/gpuctl get jobs --all-clusters -A | awk -v j="lr-sweep-$run-" 'NR == 1 || index($0, j)'

bold "gpu-a frees: alice scales her chat service there to 1 replica (replicas: 1 in clusters/gpu-a/teams/alice/llama3-8b-chat.yaml); lr-sweep-$run-2 goes to gpu-a (her 4 GPUs left there and bob's idle 4), gpu-b being full"
sed -i 's/replicas: 2/replicas: 1/' "$repo/clusters/gpu-a/teams/alice/llama3-8b-chat.yaml"
for _ in $(seq 1 120); do # gpu-a's reconciler applies it, and Kueue releases the quota of the pod that goes
  [ "$(bin/gpuctl get jobs --clusters gpu-a -n alice 2>/dev/null | grep -c 'llama3-8b-chat ')" = 1 ] && break
  sleep 0.5
done
sweep 2
wait_job "lr-sweep-$run-2" 'hub→gpu-a.*Running'
bin/gpuctl get jobs --all-clusters -A | awk -v j="lr-sweep-$run-" 'NR == 1 || index($0, j)'

bold "a dispatched job, read in its worker: gpuctl describe job alice.lr-sweep-$run-1 (hub's job; the pods of gpu-b)"
bin/gpuctl describe job "alice.lr-sweep-$run-1" || true

sleep 2 # the local cluster writes a pod's made-up lines every 2 s
bold "its logs, read in gpu-b through the client config's entry gpu-b: gpuctl logs alice.lr-sweep-$run-1 --tail 3"
bin/gpuctl logs "alice.lr-sweep-$run-1" --tail 3 --color never || true

cat <<MSG

Try next:
  export XDG_CONFIG_HOME=$XDG_CONFIG_HOME KUBECONFIG=$KUBECONFIG   # the demo's client config; hub by default
  bin/gpuctl get jobs --all-clusters -A         # the fleet's jobs, CLUSTER first
  bin/gpuctl get pools --all-clusters           # each cluster's gpu-pool
  bin/gpuctl status --all-clusters              # each reconciler's revision and result
  bin/gpuctl validate $repo --cluster gpu-a     # what gpu-a renders: the shared files and clusters/gpu-a/
  ls $repo/clusters/hub/teams/alice/            # edit or add a job there: hub's reconciler applies it within a second
  open http://demo:$token@127.0.0.1:${port[hub]}/   # hub's page (gpu-a ${port[gpu-a]}, gpu-b ${port[gpu-b]}; Basic auth: the token)
  make demo-fleet-down                          # stop the reconcilers and the clusters
MSG
