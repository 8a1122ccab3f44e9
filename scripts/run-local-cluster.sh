#!/usr/bin/env bash
# Starts a local 3-member cluster from bin/etcd: one process per member, data and logs under
# .run/, endpoints printed. Ctrl-C stops all three (SIGTERM, so a leader hands over first).
set -euo pipefail
bin=${BIN:-bin}
run=${RUN_DIR:-.run}
mkdir -p "$run/logs"
cluster="local1=http://127.0.0.1:12380,local2=http://127.0.0.1:22380,local3=http://127.0.0.1:32380"
pids=()
stop() {
	echo "stopping local cluster"
	kill -TERM "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
}
trap stop INT TERM EXIT
for i in 1 2 3; do
	"$bin/etcd" --name "local$i" --data-dir "$run/local$i.etcd" \
		--listen-client-urls "http://127.0.0.1:${i}2379" --advertise-client-urls "http://127.0.0.1:${i}2379" \
		--listen-peer-urls "http://127.0.0.1:${i}2380" --initial-advertise-peer-urls "http://127.0.0.1:${i}2380" \
		--initial-cluster "$cluster" --initial-cluster-token local-cluster \
		--listen-metrics-urls "http://127.0.0.1:${i}2381" 2>"$run/logs/local$i.log" &
	pids+=($!)
done
echo "client endpoints: http://127.0.0.1:12379,http://127.0.0.1:22379,http://127.0.0.1:32379"
echo "peer endpoints:   http://127.0.0.1:12380,http://127.0.0.1:22380,http://127.0.0.1:32380"
echo "metrics:          http://127.0.0.1:12381/metrics (and 22381, 32381)"
echo "logs:             $run/logs/"
echo "try: curl -s http://127.0.0.1:12379/version"
wait "${pids[@]}"
