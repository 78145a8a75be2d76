#!/bin/bash
# check_limits.sh -- a self-check of the testbed's limits (limits.sh, ideal_time): small
# scenarios whose ideal times were worked out by hand, without the testbed (no root, no
# namespaces).  Run it by hand after touching limits.sh:
#
#   tests/wan/check_limits.sh          prints one line per case; exit 1 on any mismatch
#
# Rates are Mbit/s (10^6 bit/s), sizes MiB (2^20 bytes); expected values to the millisecond.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# testbed.sh only defines its functions when sourced (tb_mbit); limits.sh has ideal_time.
# shellcheck source=tests/wan/testbed.sh
. "$HERE/testbed.sh"
# shellcheck source=tests/wan/limits.sh
. "$HERE/limits.sh"

fails=0
# scenario "RATES" COPIES FRAGMENTS SIZE_MIB: the variables limits.sh reads.
scenario() {
    # shellcheck disable=SC2206
    RATES=($1)
    N=${#RATES[@]}; COPIES=$2; FRAGS=$3; SIZE=$(( $4 * 1048576 ))
}
# check NAME "RATES" COPIES FRAGMENTS SIZE_MIB FREE PLACED [EVENT...]: the placement-free and
# the placed ideal times must be FREE and PLACED seconds (EVENT: an "at" line without "at").
check() {
    local name=$1 free=$6 placed=$7 got_free got_placed t0 t1
    scenario "$2" "$3" "$4" "$5"
    shift 7
    EVENTS=("$@")
    t0=${EPOCHREALTIME//[!0-9]/}
    got_free=$(ideal_time)
    got_placed=$(PLACED=1 ideal_time)
    t1=${EPOCHREALTIME//[!0-9]/}
    if [ "$got_free" = "$free" ] && [ "$got_placed" = "$placed" ]; then
        printf 'ok    %-34s free %8s s, placed %9s s (%d ms)\n' "$name" "$got_free" "$got_placed" \
            $(( (t1 - t0) / 1000 ))
    else
        printf 'FAIL  %-34s free %8s s (want %s), placed %9s s (want %s)\n' "$name" "$got_free" "$free" \
            "$got_placed" "$placed"
        fails=$((fails + 1))
    fi
}

# Full replicas, no events: 60 MiB = 503316480 bits at 10+20+30 Mbit/s: 8.388608 s.
check "full replicas" "10mbit 20mbit 30mbit" 3 3 60 8.389 8.389
# 1 copy of 2 fragments: fragment 0 on host1 (10), fragment 1 on host2 (30).  Free: 67108864
# bits at 40 = 1.6777216 s; placed: host1's 4 MiB (33554432 bits) at 10 = 3.3554432 s.
check "1 copy, 2 fragments" "10mbit 30mbit" 1 2 8 1.678 3.355
# 2 copies of 4 fragments on 4 hosts: fragments 0 and 2 on hosts 1 and 2 (10+10), 1 and 3 on
# hosts 3 and 4 (40+40).  Placed: 4 MiB at 20 = 1.6777216 s; free: 8 MiB at 100 = 0.671 s.
check "2 copies, 2 fragment classes" "10mbit 10mbit 40mbit 40mbit" 2 4 8 0.671 1.678
# 2 copies of 5 fragments on 5 hosts: 0 on {1,2}, 1 on {3,4}, 2 on {5,1}, 3 on {2,3}, 4 on
# {4,5}; hosts 1-4 at 10, host5 at 100.  The worst set is {0,1,3}: 3 MiB from hosts 1-4
# (40 Mbit/s) = 25165824 / 40e6 = 0.6291456 s.  Free: 41943040 bits at 140 = 0.29959 s.
check "overlapping holders" "10mbit 10mbit 10mbit 10mbit 100mbit" 2 5 5 0.300 0.629
# A time event: 2 s at 20 Mbit/s (40e6 bits), then the other 43886080 bits at 40: 3.097152 s.
check "time event" "10mbit 10mbit" 2 2 10 3.097 3.097 "2s host1 rate 30mbit"
# A kill at 50%: 41943040 bits at 40 (1.048576 s), the rest at 20 (2.097152 s): 3.145728 s.
check "kill at 50%" "20mbit 20mbit" 2 2 10 3.146 3.146 "50% kill host1"
# Dead stays dead: the same, and a later rate event of the killed host changes nothing.
check "dead stays dead" "20mbit 20mbit" 2 2 10 3.146 3.146 "50% kill host1" "60% host1 rate 100mbit"
# A % event fires when the client (placed or not) has that share.  Free: 75% (50331648 bits)
# at 40 = 1.2582912 s, then 16777216 bits at 60: 1.5379115 s.  Placed (as in "1 copy, 2
# fragments"): host2's fragment is done at 1.1184811 s, 75% when host1 has sent 16777216 bits
# (1.6777216 s), then its other 16777216 bits at 30: 2.2369621 s.
check "% event under the placement" "10mbit 30mbit" 1 2 8 1.538 2.237 "75% host1 rate 30mbit"
# A time event listed after a % event fires first: at 1 s (40e6 bits, < 50%) host2 stops;
# 50% (41943040 bits) at 20 after 0.097152 s more, then the other half at 40: 2.145728 s.
check "time event before a % event" "20mbit 20mbit" 2 2 10 2.146 2.146 "50% host1 rate 40mbit" \
    "1s host2 rate 0mbit"
# Killing the only holder of a fragment: free, 10% (8388608 bits) at 20 = 0.4194304 s, then
# 75497472 bits at 10: 7.9691776 s; placed, fragment 0 is never complete (printed as 1e5 s).
check "only holder killed" "10mbit 10mbit" 1 2 10 7.969 100000.000 "10% kill host1"
# 16 fragments with 16 different holder sets (3 copies on 16 hosts; 2^16 sets): with equal
# rates every host holds 3 fragments, so placed = free = 134217728 bits at 160 = 0.8388608 s.
check "16 fragment classes (speed)" "$(printf '10mbit %.0s' $(seq 16))" 3 16 16 0.839 0.839

# check_fires NAME "RATES" COPIES FRAGMENTS SIZE_MIB WANT [EVENT...]: under the placement, the
# events must fire as WANT says ("K SECONDS" per fired event, in firing order, ";" between:
# FIRES_OUT, which run_scenario.sh's WAN_EVENT_ON=limit replays).
check_fires() {
    local name=$1 want=$6 got out
    scenario "$2" "$3" "$4" "$5"
    shift 6
    EVENTS=("$@")
    out=$(mktemp)
    PLACED=1 FIRES_OUT=$out ideal_time >/dev/null
    got=$(awk '{ printf "%s%d %.3f", (NR > 1 ? ";" : ""), $1, $2 }' "$out")
    rm -f "$out"
    if [ "$got" = "$want" ]; then
        printf 'ok    %-34s fires %s\n' "$name" "$got"
    else
        printf 'FAIL  %-34s fires %s (want %s)\n' "$name" "$got" "$want"
        fails=$((fails + 1))
    fi
}

# "% event under the placement": 75% when host1 has sent 16777216 bits, 1.6777216 s.
check_fires "fires: a % event" "10mbit 30mbit" 1 2 8 "1 1.678" "75% host1 rate 30mbit"
# "time event before a % event": the second event first (1 s), then the first (1.097152 s).
check_fires "fires: in firing order" "20mbit 20mbit" 2 2 10 "2 1.000;1 1.097" \
    "50% host1 rate 40mbit" "1s host2 rate 0mbit"
# An event due after the end never fires: 90% of 10 MiB at 20+20 is 1.887 s, the end 2.097 s.
check_fires "fires: not after the end" "20mbit 20mbit" 2 2 10 "1 1.887" "90% host1 rate 40mbit" \
    "5s host2 rate 1mbit"

# check_inorder NAME "RATES" COPIES FRAGMENTS SIZE_MIB BUFFER_MIB WANT [EVENT...]: the in-order
# reference (inorder_time, a fluid simulation in steps) must be WANT seconds within 0.5%.
check_inorder() {
    local name=$1 want=$7 got
    scenario "$2" "$3" "$4" "$5"
    local buf=$(( $6 * 1048576 ))
    shift 7
    EVENTS=("$@")
    got=$(inorder_time "$buf")
    if awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= w * 0.005) }'; then
        printf 'ok    %-34s in order %8s s (want %s)\n' "$name" "$got" "$want"
    else
        printf 'FAIL  %-34s in order %8s s (want %s)\n' "$name" "$got" "$want"
        fails=$((fails + 1))
    fi
}

# Every host holds every byte: the buffer costs nothing (the fluid hosts share the lowest
# bytes), as "full replicas" above.
check_inorder "in order, full replicas" "10mbit 20mbit 30mbit" 3 3 60 1 8.389
# A buffer as large as the file: the placement limit ("overlapping holders" above).
check_inorder "in order, buffer >= file" "10mbit 10mbit 10mbit 10mbit 100mbit" 2 5 5 8 0.629
# "1 copy, 2 fragments" through a 1 MiB buffer: host2 (30) may fetch fragment 1 only 1 MiB
# past the written prefix, which host1 (10) alone writes through fragment 0.  Fragment 0 is
# written at 3.3554432 s, and host2, faster than the window moves, has filled 1 MiB of
# fragment 1 by then; its other 3 MiB take 25165824 / 30e6 = 0.8388608 s: 4.194304 s.
check_inorder "in order, 1 MiB buffer" "10mbit 30mbit" 1 2 8 1 4.194
# Events fire as in ideal_time: "kill at 50%" through a 1 MiB buffer is still 3.146 s.
check_inorder "in order, kill at 50%" "20mbit 20mbit" 2 2 10 1 3.146 "50% kill host1"
# The only holder of fragment 0 killed at 10%: never complete (1e5 s), found without
# stepping the clock to 1e5 s.
check_inorder "in order, only holder killed" "10mbit 10mbit" 1 2 10 1 100000.000 "10% kill host1"

[ "$fails" -eq 0 ] || { echo "check_limits: $fails case(s) failed" >&2; exit 1; }
echo "check_limits: all cases agree with the hand-computed limits"
