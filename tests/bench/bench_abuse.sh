#!/bin/bash
# bench_abuse.sh -- issue 36's target for the servers under slowloris: 2,000 slow connections
# from 1,000 addresses (reopened as soon as they are cut), and 95% of legit GETs from another
# address still answered within 1 s, by lbone_server and by lors_serve.
#
#   tests/bench/bench_abuse.sh BUILD_DIR          (make bench-abuse runs it on build/release)
#
# It runs the abuse cases of the system tests (tests/system/test_lbone_robust.c,
# test_lors_serve_abuse.c) BENCH_RUNS times (default 3) with LNS_ABUSE_STRICT=1, which makes
# them judge the 1 s target as well (make test judges only that 95% are answered: a busy
# machine cannot promise a time), and prints each case's figures per round and the median
# fraction answered within 1 s of the target cases (the default limits against the 2,000);
# the others (tiny limits to show a mechanism) are printed by the tests but not judged here.
# Exit 1 if a round misses the target.
set -euo pipefail

. "$(dirname "$0")/lib.sh"
bench_runs 3
bench_need_built "$BUILD/tests/test_lbone_robust" "$BUILD/tests/test_lors_serve_abuse"
fail=0
declare -A frac
for r in $(seq 1 "$RUNS"); do
    for t in test_lbone_robust test_lors_serve_abuse; do
        out=$(LNS_BIN=$BIN LNS_ABUSE_STRICT=1 "$BUILD/tests/$t" 2>&1) || fail=1
        grep -q "^RESULT $t [0-9]* 0$" <<<"$out" || fail=1
        while read -r line; do
            what=${line%%:*}
            read -r tries fast < <(sed -E 's/^[^:]*: [0-9]+ of ([0-9]+) GETs answered, ([0-9]+) within 1 s.*/\1 \2/' <<<"$line")
            echo "round $r $t $line"
            frac["$t $what"]+="$(awk -v f="$fast" -v n="$tries" 'BEGIN{printf "%.3f ", f/n}')"
        done < <(grep -E '^  [a-z ]+: [0-9]+ of [0-9]+ GETs answered.*\(target\)' <<<"$out" |
                 sed 's/^  //')
    done
done
echo "median fraction of GETs answered within 1 s over $RUNS rounds (target 0.95):"
for k in "${!frac[@]}"; do
    m=$(tr ' ' '\n' <<<"${frac[$k]}" | grep . | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
    echo "  $k: $m"
done | sort
[ "$fail" -eq 0 ] || { echo "$BENCH_NAME: a round missed the target or failed" >&2; exit 1; }
