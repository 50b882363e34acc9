#!/usr/bin/env bash
# The fuzz campaign of issue 13: every libFuzzer target under ASan+UBSan (fuzz/run.sh) to
# at least 10 million executions in all, with the minimized corpus merged back into
# fuzz/corpus. Per target: executions, rate, coverage, findings; then the total.
# Budget (executions): FUZZ_RUNS_READER (default 1,000,000), FUZZ_RUNS_PROBES (3,000,000),
# FUZZ_RUNS_LISTEN (3,500,000), FUZZ_RUNS_CTL (3,000,000); FUZZ_SECONDS caps each target
# (default 3600).
set -uo pipefail
cd "$(dirname "$0")/.."
export FUZZ_RUNS_READER=${FUZZ_RUNS_READER:-1000000} FUZZ_RUNS_PROBES=${FUZZ_RUNS_PROBES:-3000000}
export FUZZ_RUNS_LISTEN=${FUZZ_RUNS_LISTEN:-3500000} FUZZ_RUNS_CTL=${FUZZ_RUNS_CTL:-3000000}
export FUZZ_SECONDS=${FUZZ_SECONDS:-3600} FUZZ_MERGE=${FUZZ_MERGE:-1} FUZZ_FULL=1
fuzz/run.sh | tee bench/out/fuzz.txt
rc=${PIPESTATUS[0]}
awk '/^fuzz [a-z]*: / { n += $3; f += $(NF - 3) }
     END { printf "fuzz total: %d executions, %d findings\n", n, f }' bench/out/fuzz.txt
exit "$rc"
