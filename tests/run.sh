#!/bin/sh
# run.sh -- run every test program of the given builds and print one summary line.
#   tests/run.sh build/release build/asan
# Each program prints "RESULT <name> <passed> <failed>"; a program that crashes, hangs past
# its time limit or prints no RESULT line counts as one failure.  A program that ran no test
# and printed a line "SKIP <name>: <why>" (e.g. test_wan_short without network namespaces)
# is listed as skipped, counted neither as passed nor as failed.
set -u
total_pass=0
total_fail=0
skipped=""
limit=${LNS_TEST_TIMEOUT:-600}
for build in "$@"; do
    for t in "$build"/tests/test_*; do
        [ -x "$t" ] || continue
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
        total_pass=$((total_pass + p))
        total_fail=$((total_fail + f))
        skip=$(grep '^SKIP ' "$out" | tail -1)
        if [ "$f" -eq 0 ] && [ "$p" -eq 0 ] && [ -n "$skip" ]; then
            echo "skip $name (${skip#SKIP })"
            skipped="$skipped $name"
        elif [ "$f" -ne 0 ]; then
            echo "FAIL $name ($p passed, $f failed, exit $rc, ${secs}s)"
            sed 's/^/    /' "$out" | tail -60
        else
            echo "ok   $name ($p passed, ${secs}s)"
        fi
        rm -f "$out"
    done
done
[ -z "$skipped" ] || echo "skipped:$skipped"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
