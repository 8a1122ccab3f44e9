#!/usr/bin/env bash
# make sim: a campaign of SEEDS seeds from FIRST_SEED. By default the stepped simulation
# (server/sim/stepped: member cores stepped by one goroutine on the cluster's clock), where a seed
# replays byte for byte, so a failing seed replays to the same failure. WHOLE=1: the whole-member
# simulation (server/sim: each member the real etcdserver with its WAL, transport and loops, on
# the wall clock; a seed replays its faults and requests, not Go's interleaving), in PARALLEL
# processes at once (a run spends most of its time waiting on timers, so two per CPU keep the
# machine busy), VIRTUAL=1 in virtual time (testing/synctest). Prints every run's summary and,
# for a failing seed, its reasons and the command that replays it; exits 1 when a seed failed.
set -euo pipefail
seeds=${SEEDS:-100} first=${FIRST_SEED:-1} parallel=${PARALLEL:-1} go=${GO:-go} virtual=${VIRTUAL:-} whole=${WHOLE:-}
cd "$(dirname "$0")/../server"
if [[ $whole != 1 ]]; then
	start=$(date +%s)
	status=0
	STEPPED_SEEDS=$seeds STEPPED_FIRST_SEED=$first "$go" test -count=1 -timeout=0 -run '^TestSteppedCampaign$' ./sim/stepped || status=1
	echo "sim (stepped): $seeds seeds from $first: $([[ $status == 0 ]] && echo "none failed" || echo "failures above (replay one: STEPPED_FIRST_SEED=N STEPPED_SEEDS=1 STEPPED_HISTORY=1 go test -run TestSteppedCampaign -v ./sim/stepped in server/)"), $(($(date +%s) - start)) s"
	exit $status
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# In virtual time the failpoints stay out: a failpoint's sleep holds the locks it is reached
# with, and a goroutine waiting on a lock keeps the bubble from ever being idle, so its clock,
# and the sleep, would never move on.
tags=-tags=failpoints
[[ $virtual == 1 ]] && tags=
"$go" test -c $tags -o "$tmp/sim.test" ./sim
start=$(date +%s)
per=$(((seeds + parallel - 1) / parallel))
pids=()
for ((p = 0; p < parallel; p++)); do
	from=$((first + p * per))
	n=$((seeds - p * per))
	((n > per)) && n=$per
	((n > 0)) || break
	(cd sim && SIM_VIRTUAL=$virtual SIM_SEEDS=$n SIM_FIRST_SEED=$from "$tmp/sim.test" -test.count=1 -test.timeout=0 -test.run '^TestSimulation$' -test.v >"$tmp/shard$p.log" 2>&1) &
	pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for log in "$tmp"/shard*.log; do
	grep -E '^(---|ok|FAIL|PASS)|sim_test.go|^          |replay:' "$log" || true
done
failed=$(cat "$tmp"/shard*.log | grep -c 'FAILED:' || true)
echo "sim: $seeds seeds from $first in $parallel processes: $failed failed, $(($(date +%s) - start)) s"
exit $status
