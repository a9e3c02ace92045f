#!/usr/bin/env bash
# Runs a scenario as SHARDS pods and merges them: the whole sequence of docs/distributed.md.
# Usage: deploy/kubernetes/run.sh SCENARIO.json SHARDS TARGET-URL [RUN-NAME]
# Needs kubectl pointed at the cluster, the image pushed, and reports-volume.yaml applied once.
set -euo pipefail
scenario=$1 shards=$2 target=$3 run=${4:-pushswarm-$(date -u +%Y%m%d-%H%M%S)}
here=$(cd "$(dirname "$0")" && pwd)
start=$(date -u -d '+90 seconds' +%Y-%m-%dT%H:%M:%SZ)   # time for every pod to be scheduled

kubectl delete job pushswarm-shards pushswarm-merge --ignore-not-found
kubectl create configmap pushswarm-scenario --from-file=scenario.json="$scenario" --dry-run=client -o yaml | kubectl apply -f -
sed -e "s|completions: 4 |completions: $shards |; s|parallelism: 4 |parallelism: $shards |" \
    -e "s|+ 1))/4\"|+ 1))/$shards\"|" \
    -e "s|nightly-20261122|$run|; s|https://push-ingest.staging.example.internal|$target|; s|2026-11-22T02:00:00Z|$start|" \
    "$here/shards-job.yaml" | kubectl apply -f -
kubectl wait --for=condition=complete job/pushswarm-shards --timeout=24h
sed -e "s|nightly-20261122|$run|" "$here/merge-job.yaml" | kubectl apply -f -
kubectl wait --for=condition=complete job/pushswarm-merge --timeout=30m || true
kubectl logs job/pushswarm-merge
status=$(kubectl get job pushswarm-merge -o jsonpath='{.status.succeeded}')
[ "$status" = "1" ] || { echo "the merged run failed its thresholds or could not be merged"; exit 1; }
echo "merged report: /reports/$run/merged on the pushswarm-reports volume"
