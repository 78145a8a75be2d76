#!/bin/bash
# scaling.sh -- scenario 6 of issue 5: throughput against the number of depots (1, 2, 4, 8, 16
# hosts at 50 Mbit/s, client uncapped), each point a run of tests/wan/scenarios/6-scaling-NN.scn,
# and the plot (docs/wan-scaling.png by default) drawn by plot_xy.py.
#
#   tests/wan/scaling.sh [OUT.png]       (environment as run_scenario.sh: TB_BIN, WAN_RUNS, ...)
#
# Key idea: the logs of the runs are kept (build/wan/6-scaling-NN.log, or $WAN_LOGS) and the plot
# is made from their "result:" lines, so a plot can be redrawn without rerunning
# (WAN_PLOT_ONLY=1).  The client's CPU time per round is in the logs (/usr/bin/time), which
# says what limits it at the top.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-$ROOT/docs/wan-scaling.png}
LOGS=${WAN_LOGS:-$ROOT/build/wan}
mkdir -p "$LOGS"
ideal=""; ours=""; peer=""
for scn in "$HERE"/scenarios/6-scaling-*.scn; do
    nn=$(basename "$scn" .scn); n=$((10#${nn##*-}))
    log=$LOGS/$nn.log
    if [ -z "${WAN_PLOT_ONLY:-}" ]; then
        echo "== $nn (log: $log)"
        "$HERE/run_scenario.sh" "$scn" >"$log" 2>&1 || echo "scaling: $nn: a round failed (see $log)" >&2
        grep '^result:\|^physical' "$log" || true
    fi
    # "result: ours median 5.6s = 383.1 Mbit/s, ..." and "result: aria2c (whole file) median 5.9s = 364.0 Mbit/s, ..."
    o=$(sed -n 's/^result: ours median [^=]*= \([0-9.]*\) Mbit.*/\1/p' "$log")
    p=$(sed -n 's/^result: aria2c[^=]* median [^=]*= \([0-9.]*\) Mbit.*/\1/p' "$log")
    ideal+="${ideal:+,}$n:$((n * 50))"
    [ -n "$o" ] && ours+="${ours:+,}$n:$o"
    [ -n "$p" ] && peer+="${peer:+,}$n:$p"
done
args=("limit: 50 Mbit/s x depots=$ideal" "lors_download=$ours")
[ -n "$peer" ] && args+=("aria2c=$peer")
python3 "$HERE/plot_xy.py" "$OUT" "Scenario 6: throughput vs depots (50 Mbit/s each, median)" \
    "depots" "Mbit/s" "${args[@]}"
echo "scaling: plot $OUT"
