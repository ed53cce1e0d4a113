#!/usr/bin/env bash
# make demo: build gpuctl, start the local cluster with fake GPU nodes, run gpuctl-reconciler
# against examples/, and show what it did. Re-runnable: it reuses the cluster and restarts the
# reconciler. `make demo-down` stops both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
demo=.cache/demo
mkdir -p "$demo"
bold() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

bold "building bin/gpuctl and bin/gpuctl-reconciler"
make --no-print-directory build >/dev/null

bold "starting the local cluster (the first run builds Kubernetes from the Go module proxy: 10-20 min)"
go run ./hack/cluster up --dir .cache/cluster
export KUBECONFIG=$root/.cache/cluster/kubeconfig

if [ -f "$demo/reconciler.pid" ] && kill -0 "$(cat "$demo/reconciler.pid")" 2>/dev/null; then
  bold "stopping the previous demo reconciler"
  kill "$(cat "$demo/reconciler.pid")"; sleep 1
fi
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$token,demo,admin" > "$demo/tokens"

bold "starting gpuctl-reconciler --source=dir:examples (log: $demo/reconciler.log)"
nohup bin/gpuctl-reconciler --source=dir:examples --kubeconfig "$KUBECONFIG" \
  --listen 127.0.0.1:8089 --tokens-file "$demo/tokens" --interval 1m >"$demo/reconciler.log" 2>&1 &
echo $! > "$demo/reconciler.pid"

for _ in $(seq 1 120); do # until this reconciler has finished its first sync
  if grep -qE 'synced|sync not applied' "$demo/reconciler.log"; then break; fi
  sleep 0.5
done

bold "gpuctl status"
bin/gpuctl status

bold "what the reconciler logged"
grep -E 'synced|not applied|starting' "$demo/reconciler.log" | tail -5

bold "gpuctl diff examples/ (nothing left to do)"
bin/gpuctl diff examples/ || true

bold "gpuctl drift (where the cluster differs from Git; nothing yet)"
sleep 1 # the first report is written within a quarter of a second of the first sync
bin/gpuctl drift || true

bold "the API: GET /api/v1/jobs (bearer token in $demo/tokens)"
curl -s -H "Authorization: Bearer $token" "http://127.0.0.1:8089/api/v1/jobs?pageSize=5" | head -c 1200; echo

cat <<MSG

Try next:
  export KUBECONFIG=$KUBECONFIG
  sed -i 's/replicas: 2/replicas: 3/' examples/inference/llama3-8b-inference.yaml   # edit a file...
  tail -f $demo/reconciler.log                                                       # ...it is applied within a second
  bin/gpuctl status                      # revision, result, summary
  bin/gpuctl diff examples/              # what a sync would change
  bin/gpuctl sync                        # ask the daemon to sync now, wait for the result
  bin/gpuctl drift                       # after a hand edit (kubectl edit/scale/label): who changed what
  open http://demo:$token@127.0.0.1:8089/   # the web page: status, drift, GPUs vs quota (Basic auth: the token)
  curl -H "Authorization: Bearer $token" http://127.0.0.1:8089/api/v1/pools
  git checkout examples/                 # undo your edits
  make demo-down                         # stop the reconciler and the cluster
MSG
