#!/bin/sh
# run.sh -- run every test program of the given builds and print one summary line.
#   tests/run.sh build/release build/asan
# Each program prints "RESULT <name> <passed> <failed>"; a program that crashes, hangs past
# its time limit or prints no RESULT line counts as one failure.  A program that ran no test
# and printed a line "SKIP <name>: <why>" (e.g. test_wan_short without network namespaces)
# is listed as skipped, counted neither as passed nor as failed.
#
# The programs run LNS_TEST_JOBS at a time (default 2): they spend most of their time waiting
# on depots, timeouts and child processes (a run of the release build uses about a quarter of
# one core), and every one picks its own ports and directories.  Lines are printed as each
# program ends; the summary counts all of them.
set -u
limit=${LNS_TEST_TIMEOUT:-600}
jobs=${LNS_TEST_JOBS:-2}

# One program: its line (and, when it failed, the tail of its output) on stdout, and
# "<passed> <failed> <skipped 0|1> <name>" in a file of the directory $LNS_RUN_COUNTS.
if [ "${1:-}" = "--one" ]; then
    t=$2
    build=${t%/tests/*}
    name="$(basename "$build")/$(basename "$t")"
    out=$(mktemp)
    start=$(date +%s)
    LNS_BIN="$build/bin" ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
        timeout -k 10 "$limit" "$t" >"$out" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    line=$(grep '^RESULT ' "$out" | tail -1)
    if [ -n "$line" ]; then
        p=$(echo "$line" | awk '{print $3}')
        f=$(echo "$line" | awk '{print $4}')
    else
        p=0; f=1
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    skip=$(grep '^SKIP ' "$out" | tail -1)
    report=$(mktemp)
    s=0
    if [ "$f" -eq 0 ] && [ "$p" -eq 0 ] && [ -n "$skip" ]; then
        echo "skip $name (${skip#SKIP })" >"$report"
        s=1
    elif [ "$f" -ne 0 ]; then
        { echo "FAIL $name ($p passed, $f failed, exit $rc, ${secs}s)"
          sed 's/^/    /' "$out" | tail -60; } >"$report"
    else
        echo "ok   $name ($p passed, ${secs}s)" >"$report"
    fi
    cat "$report" # one write: the lines of programs ending together do not mix
    echo "$p $f $s $name" >"$LNS_RUN_COUNTS/$(echo "$name" | tr / _)"
    rm -f "$out" "$report"
    exit 0
fi

LNS_RUN_COUNTS=$(mktemp -d)
export LNS_RUN_COUNTS
for build in "$@"; do
    for t in "$build"/tests/test_*; do
        [ -x "$t" ] && echo "$t"
    done
done | xargs -P "$jobs" -n 1 "$0" --one
all=$(cat "$LNS_RUN_COUNTS"/* 2>/dev/null | sort -k4)
total_pass=$(echo "$all" | awk 'NF==4 {s+=$1} END{print s+0}')
total_fail=$(echo "$all" | awk 'NF==4 {s+=$2} END{print s+0}')
skipped=$(echo "$all" | awk 'NF==4 && $3==1 {printf " %s", $4}')
ran=$(echo "$all" | awk 'NF==4' | wc -l)
want=0
for build in "$@"; do
    for t in "$build"/tests/test_*; do
        [ -x "$t" ] && want=$((want + 1))
    done
done
# a program whose runner died without a report counts as one failure
[ "$ran" -ge "$want" ] || total_fail=$((total_fail + want - ran))
rm -rf "$LNS_RUN_COUNTS"
[ -z "$skipped" ] || echo "skipped:$skipped"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
