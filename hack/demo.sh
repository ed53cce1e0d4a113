#!/usr/bin/env bash
# make demo: build gpuctl, start the local cluster with fake GPU nodes and Kueue, run
# gpuctl-reconciler against a copy of examples/ with queueing: kueue, show what it did and the
# GPU use of its jobs (made-up dcgm-exporter metrics in a real Prometheus), then commit a burst
# of jobs to one team and show its queue draining, the jobs and their logs (the local cluster
# writes made-up lines for every pod, in the words of its kind), and last one job that fails
# on purpose and explains itself. Re-runnable: it reuses the cluster, refreshes the copy and
# restarts the reconciler. `make demo-down` stops both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
demo=.cache/demo
mkdir -p "$demo"
bold() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

bold "building bin/gpuctl and bin/gpuctl-reconciler"
make --no-print-directory build cluster-helper >/dev/null
cluster=.cache/bin/cluster # hack/cluster, built by make cluster-helper with build's flags

# The control plane first; Kueue (about 5 more minutes on a fresh machine) after it, in the
# background, so that the first demo runs without queueing and the next one with it.
bold "building the local cluster's binaries (the first run builds Kubernetes, etcd and kwok from the Go module proxy into one binary: about 7 min on 2 cores)"
bindir=$(GPUCTL_WITHOUT_KUEUE=1 hack/cluster-tools.sh | tail -1)
kueue=0
if [ -x "$bindir/kueue" ] && [ -f "$bindir/kueue-manifests/webhook/manifests.yaml" ]; then
  kueue=1
elif ! pgrep -f "hack/cluster-tools.sh" >/dev/null; then
  nohup hack/cluster-tools.sh >"$demo/kueue-build.log" 2>&1 &
fi

if [ "$kueue" = 1 ]; then
  bold "starting the local cluster with Kueue"
  if ! "$cluster" up --dir .cache/cluster --kueue; then
    bold "restarting the local cluster with Kueue"
    "$cluster" down --dir .cache/cluster
    "$cluster" up --dir .cache/cluster --kueue
  fi
else
  bold "starting the local cluster (Kueue is building in the background: $demo/kueue-build.log)"
  if ! GPUCTL_WITHOUT_KUEUE=1 "$cluster" up --dir .cache/cluster; then
    bold "restarting the local cluster (one of an older hack/cluster, without pod logs)"
    "$cluster" down --dir .cache/cluster
    GPUCTL_WITHOUT_KUEUE=1 "$cluster" up --dir .cache/cluster
  fi
fi
export KUBECONFIG=$root/.cache/cluster/kubeconfig

# The reconciler's source: a copy of examples/ whose .gpuctl.yaml turns Kueue on
# (docs/queueing.md), refreshed on every run.
repo=$demo/repo
rm -rf "$repo" && mkdir -p "$repo" && cp -a examples/. "$repo/"
if [ "$kueue" = 1 ]; then
  printf '\n# make demo: the teams queue on Kueue (docs/queueing.md)\nqueueing: kueue\n' >> "$repo/.gpuctl.yaml"
fi

if [ -f "$demo/reconciler.pid" ] && kill -0 "$(cat "$demo/reconciler.pid")" 2>/dev/null; then
  bold "stopping the previous demo reconciler"
  kill "$(cat "$demo/reconciler.pid")"; sleep 1
fi
if [ -f "$demo/gpu-metrics.pid" ] && kill -0 "$(cat "$demo/gpu-metrics.pid")" 2>/dev/null; then
  kill "$(cat "$demo/gpu-metrics.pid")"; sleep 1
fi
# GPU metrics: a real Prometheus (Debian's, unpacked by hack/prometheus.sh) at this address,
# scraping made-up dcgm-exporter metrics of the demo's GPU pods (hack/cluster gpu-metrics,
# started below once the pods run). The reconciler is told the address now.
prometheus=127.0.0.1:9099
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$token,demo,admin" > "$demo/tokens"

bold "starting gpuctl-reconciler --source=dir:$repo (a copy of examples/$([ "$kueue" = 1 ] && echo ' with queueing: kueue'); log: $demo/reconciler.log)"
# --age-keys: the DEMO ONLY keys of hack/demo-keys (public in Git) decrypt
# teams/alice/hf-token.sops.yaml, the Secret whose HF_TOKEN alice's LoRA job reads.
nohup bin/gpuctl-reconciler --source=dir:"$repo" --kubeconfig "$KUBECONFIG" \
  --age-keys "$root/hack/demo-keys" \
  --listen 127.0.0.1:8089 --tokens-file "$demo/tokens" --interval 1m \
  --prometheus-url "http://$prometheus" >"$demo/reconciler.log" 2>&1 &
echo $! > "$demo/reconciler.pid"

for _ in $(seq 1 120); do # until this reconciler has finished its first sync
  if grep -qE 'synced|sync not applied' "$demo/reconciler.log"; then break; fi
  sleep 0.5
done

bold "gpuctl status"
bin/gpuctl status

bold "what the reconciler logged"
grep -E 'synced|not applied|starting' "$demo/reconciler.log" | tail -5

bold "gpuctl diff $repo (nothing left to do)"
bin/gpuctl diff "$repo" || true

bold "gpuctl drift (where the cluster differs from Git; nothing yet)"
sleep 1 # the first report is written within a quarter of a second of the first sync
bin/gpuctl drift || true

bold "GPU utilization: made-up dcgm-exporter metrics of the running GPU pods in a real Prometheus (log: $demo/gpu-metrics.log)"
nohup "$cluster" gpu-metrics --dir .cache/cluster --listen "$prometheus" --history 3h >"$demo/gpu-metrics.log" 2>&1 &
echo $! > "$demo/gpu-metrics.pid"
for _ in $(seq 1 120); do # Prometheus has scraped once (about 6 s; the first time unpacks Debian's package)
  if grep -q 'scraped by Prometheus' "$demo/gpu-metrics.log"; then break; fi
  sleep 0.5
done
export GPUCTL_PROMETHEUS_URL=http://$prometheus
echo "$ gpuctl top jobs -A"
bin/gpuctl top jobs -A || true
echo; echo "$ gpuctl top pools"
bin/gpuctl top pools || true
echo; echo "$ gpuctl idle -A   # the notebook holds its GPU at 0% (3 h of made-up history)"
bin/gpuctl idle -A || true

if [ "$kueue" = 1 ]; then
  bold "a queue draining: 6 jobs of 4 A100s committed at once to team alice (8 GPUs of her own, bob's idle 4 to borrow)"
  # New names on every run: Kueue takes a few seconds to queue a Job that has the name of one
  # deleted a moment ago (the previous run's, pruned by this run's first sync).
  run=$(date +%M%S)
  for i in 1 2 3 4 5 6; do
    cat > "$repo/teams/alice/burst-$i.yaml" <<YAML
kind: training
version: v0.1
job:
  name: burst-$run-$i
  priority: $([ "$i" = 6 ] && echo high || echo medium)
environment:
  image: registry.example.com/train:v1
resources:
  pool: training-pool
  gpu: 4
YAML
  done
  echo "(burst-$run-6 is high priority: it goes first among those that wait, and may preempt a medium one)"
  for _ in $(seq 1 40); do # the reconciler applies the files within a second
    bin/gpuctl get jobs -n alice 2>/dev/null | grep -q "burst-$run-6" && break
    sleep 0.25
  done
  for round in 1 2 3 4 5 6 7 8; do
    echo; echo "--- after ${round}s (kwok finishes a job about a second after it starts)"
    # NAME, STATUS, NODE, QUEUE and REASON of `get jobs -o wide`, cut at the header's columns
    bin/gpuctl get jobs -n alice -o wide | awk -v run="burst-$run-" '
      NR == 1 { n = index($0, " NAME ") + 1; ns = index($0, "NAMESPACE"); s = index($0, "STATUS"); r = index($0, "READY")
                d = index($0, "NODE"); ip = index($0, " IP ") + 1; q = index($0, "QUEUE") }
      NR == 1 || index($0, run) { print substr($0, n, ns - n) substr($0, s, r - s) substr($0, d, ip - d) substr($0, q) }'
    bin/gpuctl get jobs -n alice 2>/dev/null | grep "burst-$run-" | grep -qE 'Queued|Pending|Running|Preempted' || break
    sleep 1
  done
else
  bold "queueing on Kueue: not yet — Kueue is still building in the background ($demo/kueue-build.log, about 5 min on a fresh machine); run make demo again when it is done to see a queue drain"
fi

bold "every job: gpuctl get jobs -A"
bin/gpuctl get jobs -A

bold "one running job: gpuctl describe job default.llama3-8b-inference"
bin/gpuctl describe job default.llama3-8b-inference || true

bold "its logs as they are written: gpuctl logs -f default.llama3-8b-inference --tail 2 (4 s; the local cluster writes made-up lines for every pod)"
timeout 4 bin/gpuctl logs -f default.llama3-8b-inference --tail 2 --color never || true
echo; echo "$ gpuctl logs alice.qwen25-7b-medical-lora --tail 3   # a training job that has finished"
bin/gpuctl logs alice.qwen25-7b-medical-lora --tail 3 --color never || true

# One job that fails on purpose, after the healthy part. GPUCTL_DEMO_FAIL is DEMO ONLY: the
# local cluster's kwok fails the pods of a container that has it (OOMKilled: reason OOMKilled,
# exit code 137; see the Stage pod-demo-fail of test/testcluster/kwok.yaml), and its made-up
# log ends with the lines that explain it. On a real cluster the variable does nothing.
oom=sft-bigbatch-$(date +%M%S) # a new name each run, as the burst's
bold "a job that fails on purpose: teams/alice/$oom.yaml (a fine-tune whose data loader outgrows its 64Gi)"
cat > "$repo/teams/alice/$oom.yaml" <<YAML
# DEMO ONLY: GPUCTL_DEMO_FAIL=OOMKilled makes the local cluster (kwok) kill this job's pod
# with OOMKilled, exit code 137, a second after it starts (hack/demo.sh). Not for real clusters.
kind: training
version: v0.1
job:
  name: $oom
  description: "Qwen2.5-7B SFT, batch 64, 32 data loader workers"
environment:
  image: registry.example.com/train:v1
  env:
    - name: GPUCTL_DEMO_FAIL
      value: OOMKilled
resources:
  pool: training-pool
  gpu: 1
  memory: 64Gi
YAML
for _ in $(seq 1 80); do # applied within a second, queued by Kueue, failed a second after it runs
  bin/gpuctl get jobs -n alice 2>/dev/null | grep "$oom" | grep -qE 'Failed|OOMKilled' && break
  sleep 0.25
done
sleep 2 # the log's last lines are written within 2 s
echo "$ gpuctl get jobs -n alice -o wide   # REASON says why"
bin/gpuctl get jobs -n alice -o wide | awk -v job="$oom" 'NR == 1 || index($0, job)'
echo; echo "$ gpuctl describe job alice.$oom"
bin/gpuctl describe job "alice.$oom" || true
echo; echo "$ gpuctl logs alice.$oom --tail 4   # the last lines before the kill"
bin/gpuctl logs "alice.$oom" --tail 4 --color never || true

bold "the same through the API: GET /api/v1/jobs (bearer token in $demo/tokens; first 400 bytes)"
curl -s -H "Authorization: Bearer $token" "http://127.0.0.1:8089/api/v1/jobs?pageSize=2" | head -c 400; echo

cat <<MSG

Try next:
  export KUBECONFIG=$KUBECONFIG
  sed -i 's/replicas: 2/replicas: 3/' $repo/inference/llama3-8b-inference.yaml   # edit a file...
  tail -f $demo/reconciler.log                                                       # ...it is applied within a second
  bin/gpuctl status                      # revision, result, summary
  bin/gpuctl diff $repo         # what a sync would change
  bin/gpuctl get jobs -A -o wide         # every job, its queue place (Kueue) and why it waits
  bin/gpuctl logs -f default.llama3-8b-inference   # a job's logs as they are written (made-up lines), until Ctrl-C
  bin/gpuctl describe job alice.$oom   # the job that failed on purpose: attempts, reason, events
  bin/gpuctl sync                        # ask the daemon to sync now, wait for the result
  bin/gpuctl drift                       # after a hand edit (kubectl edit/scale/label): who changed what
  GPUCTL_PROMETHEUS_URL=http://$prometheus bin/gpuctl top nodes    # GPU use per node (made-up metrics)
  GPUCTL_PROMETHEUS_URL=http://$prometheus bin/gpuctl describe job default.llama3-8b-inference   # with usage curves
  open http://demo:$token@127.0.0.1:8089/   # the web page: status, drift, GPUs vs quota (Basic auth: the token)
  curl -H "Authorization: Bearer $token" http://127.0.0.1:8089/api/v1/pools
  make demo-down                         # stop the reconciler and the cluster
MSG
