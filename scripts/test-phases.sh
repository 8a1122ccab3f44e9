#!/usr/bin/env bash
# Runs make's targets in the order given (make test's phases) and says how long each took, as
# it ends and again in a table at the end, so a slow CI run shows where its time went. Stops at
# the first phase that fails, naming it.
set -uo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
start=$SECONDS
declare -a lines=()
for phase in "$@"; do
	began=$SECONDS
	echo "== make $phase (at $((began - start)) s)"
	if ! "$MAKE" --no-print-directory "$phase"; then
		echo "== make $phase failed after $((SECONDS - began)) s"
		exit 1
	fi
	lines+=("$(printf '%-12s %6d s' "$phase" $((SECONDS - began)))")
	echo "== make $phase took $((SECONDS - began)) s"
done
echo "== make test: phases"
printf '   %s\n' "${lines[@]}"
printf '   %-12s %6d s\n' total $((SECONDS - start))
