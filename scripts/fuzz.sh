#!/usr/bin/env bash
# Runs every fuzz target for a bounded number of executions, starting from the seed corpora
# committed under each package's testdata/fuzz. A crash fails the run, a hang fails it at -timeout,
# and Go writes the input that caused it into that package's testdata/fuzz for the fix's test.
#
# The budget is a count, not a duration: with a duration, Go 1.26's fuzz coordinator can report
# its own deadline as "context deadline exceeded" and fail a target that found nothing
# (golang/go#75804). Each count is about 5 s of work on a 2-core machine (make test's budget:
# building each target's instrumented test binary costs as much again). FUZZTIME (e.g. 60s or
# 500000x) replaces every count for a longer run by hand.
# Minimization is kept short: on inputs of tens of kilobytes (database files) it would take the
# whole budget.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(
  "server ./wal FuzzSegment 3000x"
  "server ./wal FuzzRecordPayloads 50000x"
  "server ./snap FuzzLoad 10000x"
  "server ./v3rpc FuzzRequestChecks 25000x"
  "server ./httpapi FuzzGatewayBody 20000x"
  "etcdutl ./offline FuzzGetStatus 2500x"
)
for t in "${targets[@]}"; do
  read -r mod pkg name budget <<<"$t"
  budget=${FUZZTIME:-$budget}
  echo "== fuzz $mod/$pkg $name for $budget"
  (cd "$mod" && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$budget" -fuzzminimizetime 1s -timeout 5m "$pkg" 2>&1 | grep -v '^fuzz: elapsed' || { echo "fuzz $name failed"; exit 1; })
done
