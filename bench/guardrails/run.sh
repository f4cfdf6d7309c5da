#!/bin/sh
# Times whole `lookout check` processes (start, read and decode the file,
# parse and check the policy, check every trace, print) over tau-bench
# airline (200 traces, 4 MB), for the three rules of BenchmarkTauBench.
# Prints, per rule, each run as real/user/sys seconds.
# Usage: bench/guardrails/run.sh [runs]   (from the repository root)
set -eu
runs=${1:-10}
tau=../shared/corpus/openai/tau-bench/gpt-4o-airline.json
bin=$(mktemp -d)/lookout
CGO_ENABLED=0 go build -o "$bin" ./cmd/lookout  # as make build
for rule in tool-name flow regex; do
	printf '%-10s' "$rule"
	i=0
	while [ "$i" -lt "$runs" ]; do
		# exit 1 means violations were found, which is expected
		/usr/bin/time -q -f '%e/%U/%S' "$bin" check --policy "bench/guardrails/$rule.iv" "$tau" 2>&1 >/dev/null | tr '\n' ' '
		i=$((i + 1))
	done
	echo
done
printf '%-10s' "--help"
i=0
while [ "$i" -lt "$runs" ]; do
	/usr/bin/time -q -f '%e/%U/%S' "$bin" --help 2>&1 >/dev/null | tr '\n' ' '
	i=$((i + 1))
done
echo
rm -f "$bin"
