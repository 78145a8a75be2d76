#!/bin/bash
# sim_random.sh -- the scheduler on the random WAN family in simulated time (bench_sched_wan):
# seeds 1..SEEDS of gen_scenario.sh, each run with 7 seeds of jitter, its median judged against
# the placement limit of limits.sh (to a file, in place) or the in-order reference (WAN_PIPE=1),
# the references issue 16's targets are judged by on the testbed (docs/wan-testbed.md).
# No root, no namespaces: a run of the 20 seeds takes seconds, where the testbed takes an hour,
# so a scheduler change can be tried on the whole family first.  make test runs it as a
# regression check (test_wan_sim); exit 1 when the median or the worst seed falls below the
# floors.
#
#   tests/wan/sim_random.sh BIN_DIR        BIN_DIR/../bench/bench_sched_wan
# Environment: SEEDS (20), SEED0 (1), SIM_MEDIAN and SIM_WORST (the floors, 0.90 and 0.80 of
# the reference), WAN_PIPE=1 (to a pipe, in order through the 64 MiB reorder buffer).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${1:?usage: sim_random.sh BIN_DIR}
SIM=$(cd "$BIN/../bench" 2>/dev/null && pwd)/bench_sched_wan
[ -x "$SIM" ] || { echo "sim_random: no $SIM (make tests builds it)" >&2; exit 2; }
# shellcheck source=tests/wan/testbed.sh
. "$HERE/testbed.sh"
# shellcheck source=tests/wan/limits.sh
. "$HERE/limits.sh"

SEEDS=${SEEDS:-20}; SEED0=${SEED0:-1}
FLOOR_MEDIAN=${SIM_MEDIAN:-0.90}; FLOOR_WORST=${SIM_WORST:-0.80}
PIPE=()
[ -n "${WAN_PIPE:-}" ] && PIPE=(--pipe)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

what="placement limit"
[ -n "${WAN_PIPE:-}" ] && what="in-order reference"
printf '%-5s %-7s %-10s %-10s %-8s %s\n' seed hosts "ref (s)" "sim (s)" "of ref" "(7 runs: worst - best)"
for seed in $(seq "$SEED0" $((SEED0 + SEEDS - 1))); do
    scn=$work/$seed.scn
    "$HERE/gen_scenario.sh" "$seed" >"$scn"
    # the scenario as limits.sh reads it (run_scenario.sh does the same)
    RATES=(); EVENTS=()
    while read -r key rest; do
        case $key in
        size) SIZE=$(bytes_of "$rest") ;;
        copies) COPIES=$rest ;;
        fragments) FRAGS=$rest ;;
        host) RATES+=("${rest%% *}") ;;
        at) EVENTS+=("$rest") ;;
        esac
    done <"$scn"
    N=${#RATES[@]}
    if [ -n "${WAN_PIPE:-}" ]; then
        ref=$(inorder_time $((64 << 20)))
    else
        ref=$(PLACED=1 ideal_time)
    fi
    ref=$(awk -v t="$ref" -v e="$PAYLOAD_EFF" 'BEGIN { printf "%.3f", t / e }')
    for j in 1 2 3 4 5 6 7; do
        "$SIM" "${PIPE[@]}" --seed "$j" "$scn" | awk '/^time/ { print $2 }'
    done | sort -n | awk -v s="$seed" -v n="$N" -v r="$ref" '{ t[NR] = $1 }
        END { printf "%-5d %-7d %-10.3f %-10.3f %-8.3f (%.3f - %.3f)\n", s, n, r, t[4], r / t[4],
              r / t[7], r / t[1] }'
done | tee "$work/table"
sort -k5 -n "$work/table" | awk -v m="$FLOOR_MEDIAN" -v w="$FLOOR_WORST" -v what="$what" '
    { f[NR] = $5; s[NR] = $1 }
    END {
        med = NR % 2 ? f[(NR + 1) / 2] : (f[NR / 2] + f[NR / 2 + 1]) / 2
        printf "simulated: median %.3f, worst %.3f (seed %d) of the %s; floors %.2f and %.2f\n",
            med, f[1], s[1], what, m, w
        exit !(med >= m && f[1] >= w)
    }'
