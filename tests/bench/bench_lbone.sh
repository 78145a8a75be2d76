#!/bin/bash
# bench_lbone.sh -- lbone_server with 10,000 registered depots: query latency, heartbeat rate.
#
#   tests/bench/bench_lbone.sh BUILD_DIR        (make bench-lbone runs it on build/release)
#
# Environment: BENCH_DEPOTS (default 10000), BENCH_SECONDS (length of each heartbeat phase,
# default 10), BENCH_HB_THREADS (default 2), BENCH_HB_RATE (heartbeats/s asked for while
# queries run, default 1500: above the 1000/s target, so that a generator that falls a little
# behind on a busy machine does not hide the server's room), BENCH_QUERIES (idle-phase
# queries, default 2000), BENCH_RUNS (default 3; the median of each figure is printed).
#
# The server runs with --probe-interval 0: the 10,000 depots are made-up names, so STATUS
# probes would only mark them unreachable (and hide them from queries); probing is a
# background thread pool whose cost does not depend on the request load.  Each run starts a
# fresh server on a fresh database in a temporary directory on 127.0.0.1 and a port the
# kernel picks; the trap stops it and removes the directory, also on failure or Ctrl-C.
set -euo pipefail

BUILD=${1:?usage: bench_lbone.sh BUILD_DIR}
DEPOTS=${BENCH_DEPOTS:-10000}
SECONDS_EACH=${BENCH_SECONDS:-10}
HB_THREADS=${BENCH_HB_THREADS:-2}
HB_RATE=${BENCH_HB_RATE:-1500}
QUERIES=${BENCH_QUERIES:-2000}
RUNS=${BENCH_RUNS:-3}

SERVER=$BUILD/bin/lbone_server
BENCH=$BUILD/bench/bench_lbone
for f in "$SERVER" "$BENCH"; do
    [ -x "$f" ] || { echo "bench_lbone: $f: not built (make benchprogs)" >&2; exit 2; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/lns-bench-lbone.XXXXXX")
SPID=""
cleanup() {
    rc=$?
    set +e
    [ -n "$SPID" ] && { kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; }
    if [ "$rc" -ne 0 ] && [ -s "$WORK/server.log" ]; then
        echo "bench_lbone: failed (exit $rc); last lines of the server log:" >&2
        tail -5 "$WORK/server.log" >&2
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$WORK/token"
echo >> "$WORK/token"

echo "bench_lbone: $DEPOTS depots, $RUNS runs, heartbeat phases ${SECONDS_EACH}s with" \
     "$HB_THREADS connections, ${HB_RATE}/s asked for while querying; $(nproc) cores"
for run in $(seq 1 "$RUNS"); do
    rm -f "$WORK"/lbone.db* "$WORK/port"
    # --plain-http: bench_lbone writes its HTTP requests to raw sockets
    "$SERVER" --listen 127.0.0.1 --port 0 --port-file "$WORK/port" --db "$WORK/lbone.db" \
        --token-file "$WORK/token" --probe-interval 0 --heartbeat 1h --log-level warn --plain-http \
        2>"$WORK/server.log" &
    SPID=$!
    for _ in $(seq 1 500); do [ -s "$WORK/port" ] && break; sleep 0.01; done
    [ -s "$WORK/port" ] || { echo "bench_lbone: the server did not start" >&2; exit 1; }
    "$BENCH" --port "$(cat "$WORK/port")" --token-file "$WORK/token" --depots "$DEPOTS" \
        --seconds "$SECONDS_EACH" --hb-threads "$HB_THREADS" --hb-rate "$HB_RATE" \
        --queries "$QUERIES" > "$WORK/run$run.txt"
    rss=$(awk '/VmHWM/ {print $2}' "/proc/$SPID/status")
    echo "server_peak_rss_kb=$rss" >> "$WORK/run$run.txt"
    kill "$SPID"
    wait "$SPID" || true
    SPID=""
    echo "run $run: $(tr '\n' ' ' < "$WORK/run$run.txt")"
done

# Median of each key over the runs.
echo "--- median of $RUNS runs"
cut -d= -f1 "$WORK/run1.txt" | while read -r key; do
    grep -h "^$key=" "$WORK"/run*.txt | cut -d= -f2 | sort -g |
        awk -v k="$key" '{v[NR]=$1} END {printf "%-28s %s\n", k, v[int((NR+1)/2)]}'
done
p99=$(grep -h '^mixed_query_ms_p99=' "$WORK"/run*.txt | cut -d= -f2 | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
hb=$(grep -h '^mixed_heartbeats_per_s=' "$WORK"/run*.txt | cut -d= -f2 | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
idle=$(grep -h '^idle_query_ms_p99=' "$WORK"/run*.txt | cut -d= -f2 | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
verdict() { awk -v x="$1" -v lim="$2" -v op="$3" 'BEGIN {ok = op == "<" ? x < lim : x >= lim; print ok ? "ok" : "MISSED"}'; }
echo "target: query p99 < 10 ms idle: $idle ms $(verdict "$idle" 10 "<"); under heartbeats:" \
     "$p99 ms $(verdict "$p99" 10 "<"); heartbeats >= 1000/s while querying: $hb/s" \
     "$(verdict "$hb" 1000 ">=")"
