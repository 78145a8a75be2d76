#!/bin/bash
# bench_wan.sh -- make bench-wan: every issue scenario (tests/wan/scenarios/[0-9]*.scn) on the
# namespace testbed, one after the other, and a markdown results table.
#
#   tests/wan/bench_wan.sh BUILD_DIR        (environment: WAN_SIZE, WAN_RUNS, WAN_ONLY=glob)
#
# Each scenario's full log goes to build/wan/<scenario>.log, the table to build/wan/results.md
# (also printed), the scaling plot (scenario 6) to build/wan/wan-scaling.png.  A failing
# scenario is reported and the others still run; the exit status says whether all passed their
# byte checks (targets are judged by reading the table).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:?usage: bench_wan.sh BUILD_DIR}
export TB_BIN
TB_BIN=$(cd "$BUILD/bin" && pwd)
OUT=$(cd "$HERE/../.." && pwd)/build/wan
mkdir -p "$OUT"
export WAN_RESULTS=$OUT/results.md
{
    echo "machine: nproc=$(nproc) kernel=$(uname -r) cpu=\"$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)\" load=\"$(cut -d' ' -f1-3 /proc/loadavg)\"; $(date -u +%F)"
    echo
    echo "| scenario | hosts | size | rounds | physical limit (aggregate, ideal time) | lors_download median | fraction of ideal | aria2c median | speed ratio vs aria2c | failed rounds |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
} >"$WAN_RESULTS"
rc=0
for scn in "$HERE"/scenarios/${WAN_ONLY:-[0-9]*}.scn; do
    name=$(basename "$scn" .scn)
    echo "== $name (log: $OUT/$name.log)"
    if ! "$HERE/run_scenario.sh" "$scn" >"$OUT/$name.log" 2>&1; then
        echo "bench_wan: $name failed; its log ends:" >&2
        tail -8 "$OUT/$name.log" >&2
        rc=1
    fi
    grep '^result:\|^physical' "$OUT/$name.log" || true
done
# Scenario 6's plot from the logs just written (docs/wan-scaling.png is the committed one).
if ls "$OUT"/6-scaling-*.log >/dev/null 2>&1; then
    WAN_PLOT_ONLY=1 WAN_LOGS=$OUT "$HERE/scaling.sh" "$OUT/wan-scaling.png" || rc=1
fi
echo
cat "$WAN_RESULTS"
exit $rc
