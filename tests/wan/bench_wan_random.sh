#!/bin/bash
# bench_wan_random.sh -- make bench-wan-random: lors_download against aria2c on SEEDS random
# scenarios of the testbed (tests/wan/gen_scenario.sh, seeds 1..SEEDS), each output checked
# with sha256; per seed and overall, the fraction of the payload limit and of the placement
# limit for both and the ratio.  aria2c gets the exNode's placement where there are fewer
# copies than hosts (run_scenario.sh; WAN_PEER_FULL=1: the whole file from every host).
#
#   tests/wan/bench_wan_random.sh BUILD_DIR
#
# Environment: SEEDS (default 20), SEED0 (the first seed, default 1), WAN_SIZE (default 256M),
# TB_BIN (the programs, default BUILD_DIR/bin),
# WAN_RUNS (rounds per seed, default 3), WAN_PIPE=1 (lors_download to a pipe: in order, through
# the reorder buffer; aria2c still writes its file), WAN_EVENT_ON=limit (each % event at the
# time it fires for a client at the placement limit, the same for both clients:
# run_scenario.sh).  Logs and scenarios go to build/wan/random/ (random-pipe/, random-limit/),
# the table to results.md there (also printed).
# Targets (issue 16): to a file, median >= 0.92 and worst >= 0.80 of the placement limit and
# >= aria2c (same placement) on every seed; to a pipe, median >= 0.85 and worst >= 0.70 of the
# in-order reference (the placement written in order through the reorder buffer; pipe runs get
# that column).  The issue states them against the payload limit, which no client can reach
# where copies < hosts, nor in order where the buffer keeps slow holders from fetching ahead
# (docs/PERFORMANCE.md, "Random WAN scenarios").
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:?usage: bench_wan_random.sh BUILD_DIR}
export TB_BIN
TB_BIN=${TB_BIN:-$(cd "$BUILD/bin" && pwd)}
SEEDS=${SEEDS:-20}
SEED0=${SEED0:-1}
SIZE=${WAN_SIZE:-256M}
OUT=$(cd "$HERE/../.." && pwd)/build/wan/random${WAN_PIPE:+-pipe}${WAN_EVENT_ON:+-$WAN_EVENT_ON}
mkdir -p "$OUT"
T=$OUT/results.md
{
    echo "machine: nproc=$(nproc) kernel=$(uname -r); $(date -u +%F); seeds $SEED0..$((SEED0 + SEEDS - 1)), size $SIZE, output: ${WAN_PIPE:+a pipe}${WAN_PIPE:-a file}"
    echo
    echo "| seed | hosts | copies | events | lors_download (of the payload limit) | lors_download (of the placement limit) |${WAN_PIPE:+ lors_download (of the in-order reference) |} aria2c (of the payload limit) | aria2c (of the placement limit) | ratio |"
    echo "|---|---|---|---|---|---|${WAN_PIPE:+---|}---|---|---|"
} >"$T"
: >"$OUT/ours"
: >"$OUT/placed"
: >"$OUT/inorder"
: >"$OUT/peer_placed"
: >"$OUT/ratios"
rc=0
for seed in $(seq "$SEED0" $((SEED0 + SEEDS - 1))); do
    scn=$OUT/random-$seed.scn
    "$HERE/gen_scenario.sh" "$seed" "$SIZE" >"$scn"
    log=$OUT/random-$seed.log
    echo "== seed $seed (log: $log)"
    if ! WAN_SIZE=$SIZE "$HERE/run_scenario.sh" "$scn" >"$log" 2>&1; then
        echo "bench_wan_random: seed $seed failed; its log ends:" >&2
        tail -8 "$log" >&2
        rc=1
    fi
    ours=$(sed -n 's/^result: ours .*, \([0-9.]*\) of the payload limit.*/\1/p' "$log")
    placed=$(sed -n 's/^result: placement: ours \([0-9.-]*\) of the placement limit.*/\1/p' "$log")
    # "result: aria2c (same placement) median ..., X of the payload limit, Y of the placement
    # limit; ratio ..." (or "aria2c (whole file)")
    inorder=$(sed -n 's/^result: in order: ours \([0-9.-]*\) of the in-order reference.*/\1/p' "$log")
    peer=$(sed -n 's/^result: aria2c .*, \([0-9.-]*\) of the payload limit.*/\1/p' "$log")
    peer_placed=$(sed -n 's/^result: aria2c .*, \([0-9.-]*\) of the placement limit.*/\1/p' "$log")
    peer_kind=$(sed -n 's/^result: aria2c (\([^)]*\)).*/\1/p' "$log")
    ratio=$(sed -n 's/^result: aria2c .*(speed, median of per-round) \([0-9.-]*\).*/\1/p' "$log")
    hosts=$(grep -c '^host ' "$scn"); copies=$(sed -n 's/^copies //p' "$scn")
    events=$({ grep '^at ' "$scn" || true; } | sed 's/^at //' | paste -sd ';' -)
    echo "| $seed | $hosts | $copies | ${events:--} | ${ours:-fail} | ${placed:--} |${WAN_PIPE:+ ${inorder:--} |} ${peer:--} | ${peer_placed:--} | ${ratio:--} |" >>"$T"
    echo "seed $seed: ours ${ours:-fail} (placement: ${placed:--}${WAN_PIPE:+, in order: ${inorder:--}}), aria2c${peer_kind:+ ($peer_kind)} ${peer:--} (placement: ${peer_placed:--}), ratio ${ratio:--}"
    [ -n "$ours" ] && echo "$ours" >>"$OUT/ours"
    [ -n "$placed" ] && echo "$placed" >>"$OUT/placed"
    [ -n "$inorder" ] && [ "$inorder" != - ] && echo "$inorder" >>"$OUT/inorder"
    [ -n "$peer_placed" ] && [ "$peer_placed" != - ] && echo "$peer_placed" >>"$OUT/peer_placed"
    [ -n "$ratio" ] && echo "$ratio" >>"$OUT/ratios"
done
med() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (!NR) print "-"; else if (NR % 2) print v[(NR + 1) / 2];
                                                 else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
worst() { sort -g "$1" | head -1; }
{
    echo
    echo "overall: lors_download median $(med "$OUT/ours"), worst $(worst "$OUT/ours") of the payload limit;" \
         "median $(med "$OUT/placed"), worst $(worst "$OUT/placed") of the placement limit;" \
         "${WAN_PIPE:+median $(med "$OUT/inorder"), worst $(worst "$OUT/inorder") of the in-order reference;}" \
         "aria2c median $(med "$OUT/peer_placed") of the placement limit;" \
         "ratio to aria2c median $(med "$OUT/ratios"), lowest $(worst "$OUT/ratios");" \
         "$(awk '$1 < 1 { n++ } END { print n + 0 }' "$OUT/ratios") of $(wc -l <"$OUT/ratios") seeds below aria2c"
} >>"$T"
echo
cat "$T"
exit "$rc"
