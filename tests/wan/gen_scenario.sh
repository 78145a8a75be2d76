#!/bin/bash
# gen_scenario.sh -- a random WAN scenario for the testbed (issue 16), drawn from a family by a
# seed, so that the download targets are judged on scenarios nobody tuned for.
#
#   tests/wan/gen_scenario.sh SEED [SIZE]        the .scn on stdout (SIZE default 256M)
#
# The family: 3 to 12 hosts; rates 5 to 200 Mbit/s (log-uniform); latencies 5 to 200 ms
# (log-uniform) with jitter up to a tenth of it; 2 to 4 copies (never more than hosts),
# fragments one per host; 0 to 4 events at random fractions of the bytes received, in order:
# a host's rate dropping to a tenth or less (and, half the time, coming back later), a depot
# killed, a host crashing silently (its link down, no reset).  At most copies - 1 hosts are
# killed or crashed, so every byte keeps a live copy wherever the upload put it.  The same
# seed always gives the same scenario (mawk's srand and rand, Debian's awk, always installed;
# gawk's draw other numbers, so mawk is asked for by name), whatever the machine.
set -euo pipefail
SEED=${1:?usage: gen_scenario.sh SEED [SIZE]}
SIZE=${2:-256M}
case $SEED in *[!0-9]*|'') echo "gen_scenario: SEED must be a number" >&2; exit 2 ;; esac

AWK=$(command -v mawk || command -v awk)
"$AWK" -v seed="$SEED" -v size="$SIZE" '
function uni(a, b) { return a + (b - a) * rand() }
function logu(a, b) { return exp(uni(log(a), log(b))) }
function pick(n) { return 1 + int(rand() * n) }
BEGIN {
    srand(seed)
    hosts = 3 + int(rand() * 10)
    copies = 2 + int(rand() * 3)
    if (copies > hosts) copies = hosts
    printf "# Random scenario, seed %d (tests/wan/gen_scenario.sh %d %s)\n", seed, seed, size
    printf "name random-%d\nsize %s\ncopies %d\nfragments %d\n", seed, size, copies, hosts
    for (h = 1; h <= hosts; h++) {
        rate[h] = int(logu(5, 200) + 0.5)
        lat = int(logu(5, 200) + 0.5)
        jit = int(rand() * lat / 10)
        printf "host %dmbit latency=%dms jitter=%dms\n", rate[h], lat, jit
    }
    nev = int(rand() * 5)
    down = 0
    n = 0
    for (e = 0; e < nev; e++) {
        kind = rand()
        h = pick(hosts)
        if (gone[h])
            continue
        at = int(uni(5, 80))
        if (kind < 0.5) {                       # a rate drop, maybe a recovery
            slow = int(rate[h] / uni(10, 40))
            if (slow < 1) slow = 1
            ev[n] = at; txt[n++] = sprintf("host%d rate %dmbit", h, slow)
            if (rand() < 0.5 && at + 10 < 95) {
                ev[n] = int(uni(at + 5, 95)); txt[n++] = sprintf("host%d rate %dmbit", h, rate[h])
            }
        } else if (down < copies - 1) {         # a kill or a silent crash
            gone[h] = 1
            down++
            ev[n] = at; txt[n++] = sprintf("%s host%d", kind < 0.75 ? "kill" : "crash", h)
        }
    }
    for (i = 0; i < n; i++)                     # in order of their fractions (stable)
        for (j = i + 1; j < n; j++)
            if (ev[j] < ev[i]) {
                t = ev[i]; ev[i] = ev[j]; ev[j] = t
                t = txt[i]; txt[i] = txt[j]; txt[j] = t
            }
    for (i = 0; i < n; i++)                     # "at 30% kill host3", "at 40% host2 rate 3mbit"
        printf "at %d%% %s\n", ev[i], txt[i]
    printf "runs 3\n"
}'
