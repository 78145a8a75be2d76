#!/bin/bash
# bench_depot.sh -- ibp_depot against nginx (LOAD) and socat (STORE) on loopback, same run.
#
#   tests/bench/bench_depot.sh BUILD_DIR          (make bench-depot runs it on build/release)
#
# Environment: BENCH_RUNS (rounds, default 5, at least 3), BENCH_SIZE (default 1G),
# BENCH_SMALL_SECONDS (length of one small-ops run, default 8), TMPDIR (where the data lives;
# it must be a real disk, not tmpfs, default /tmp).
#
# Every measurement is taken in rounds, and within a round the sides run one after the other
# (ours, peer, ours with events, ...), so slow phases of this shared machine hit both sides;
# each ratio is computed per round, and the median of those ratios is reported next to the
# ratio of the medians.  Page cache: the 1 GiB source file (served by nginx, sent by socat and
# by our STORE) and the depot's copy are both written just before the runs and then synced,
# so both sides read from a warm cache; nothing is dropped.  Everything runs on 127.0.0.1 on
# ports the kernel picks; the trap stops every process this script started and removes its
# temporary directory, also on failure or Ctrl-C.
set -euo pipefail

. "$(dirname "$0")/lib.sh"
bench_runs 5
SIZE_ARG=${BENCH_SIZE:-1G}
SMALL_SECONDS=${BENCH_SMALL_SECONDS:-8}

BENCH=$BUILD/bench/bench_ibp
bench_need_built "$BIN/ibp_depot" "$BENCH"
bench_need_tools scripts/install-deps.sh nginx curl socat
SIZE=$(bytes_of "$SIZE_ARG")

bench_workdir
now_ns() { date +%s%N; }

echo "== bench_depot: machine and command"
echo "command: BENCH_RUNS=$RUNS BENCH_SIZE=$SIZE_ARG BENCH_SMALL_SECONDS=$SMALL_SECONDS $0 $*"
bench_describe_machine
echo "tools: $("$NGINX" -v 2>&1 | sed 's/.*: //') $(curl --version | head -1 | cut -d' ' -f1-2) $(socat -V 2>/dev/null | sed -n 's/^socat version \([^ ]*\).*/socat\/\1/p')"

# ---- one measurement each -------------------------------------------------------------
#
# Besides its rate, each server-side measurement reports the CPU time the server process(es)
# used for it (cpu_ticks): the steadier figure for comparing two servers, or a depot with and
# without its event log.

# CPU ms per GB (10^9 bytes): cpu_per_gb TICKS BYTES
cpu_per_gb() { awk -v t="$1" -v b="$2" -v ms="$TICK_MS" 'BEGIN { printf "%.0f", t * ms * 1e9 / b }'; }

# ours_load PID PORT RCAP CONNS -> "MB/s depot_cpu_ms_per_GB"
# (1 connection: bench_ibp's own clock, as curl's for nginx; 4: wall time of the process, as
# for the 4 curls)
ours_load() {
    local out t0 t1 c0 c1 rate
    c0=$(cpu_ticks "$1")
    t0=$(now_ns)
    out=$("$BENCH" load 127.0.0.1 "$2" "$3" "$SIZE" --conns "$4" --req 8M)
    t1=$(now_ns)
    c1=$(cpu_ticks "$1")
    if [ "$4" -eq 1 ]; then rate=$(echo "$out" | kv mbps); else rate=$(mbps "$SIZE" "$(( t1 - t0 ))e-9"); fi
    echo "$rate $(cpu_per_gb $(( c1 - c0 )) "$SIZE")"
}

nginx_load1() {   # -> "MB/s nginx_cpu_ms_per_GB"
    local out c0 c1
    c0=$(cpu_ticks "$NGINX_PID")
    out=$(curl -s -o /dev/null -w '%{http_code} %{size_download} %{speed_download}' \
        "http://127.0.0.1:$NGINX_PORT/data.bin")
    set -- $out
    [ "$1" = 200 ] && [ "$2" = "$SIZE" ] || { echo "bench_depot: curl got $out" >&2; return 1; }
    c1=$(cpu_ticks "$NGINX_PID")
    echo "$(awk -v s="$3" 'BEGIN { printf "%.1f", s / 1e6 }') $(cpu_per_gb $(( c1 - c0 )) "$SIZE")"
}

nginx_load4() {   # 4 curls with Range requests in parallel; total bytes / wall time
    local n=4 slice=$(( SIZE / 4 )) i from to t0 t1 pids=() got=0 p c0 c1
    c0=$(cpu_ticks "$NGINX_PID")
    t0=$(now_ns)
    for i in $(seq 0 $(( n - 1 ))); do
        from=$(( i * slice )); to=$(( i == n - 1 ? SIZE - 1 : from + slice - 1 ))
        curl -s -o /dev/null -w '%{http_code} %{size_download}\n' -r "$from-$to" \
            "http://127.0.0.1:$NGINX_PORT/data.bin" >"$WORK/curl.$i" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    t1=$(now_ns)
    for i in $(seq 0 $(( n - 1 ))); do
        set -- $(cat "$WORK/curl.$i")
        [ "$1" = 206 ] || { echo "bench_depot: range curl got $*" >&2; return 1; }
        got=$(( got + $2 ))
    done
    [ "$got" = "$SIZE" ] || { echo "bench_depot: range curls got $got bytes" >&2; return 1; }
    c1=$(cpu_ticks "$NGINX_PID")
    echo "$(mbps "$SIZE" "$(( t1 - t0 ))e-9") $(cpu_per_gb $(( c1 - c0 )) "$SIZE")"
}

ours_store() {   # ours_store PORT -> MB/s of one STORE of SIZE bytes sent with sendfile
    "$BENCH" store 127.0.0.1 "$1" "$SIZE" --from "$WORK/www/data.bin" | kv mbps
}

socat_store() {   # socat TCP -> file, timed from the sender's start to the receiver's exit
    local port out=$WORK/socat.out rpid t0 t1 hex i
    port=$("$BENCH" freeport)
    hex=$(printf '%04X' "$port")
    timeout 300 socat -u "TCP-LISTEN:$port,reuseaddr,bind=127.0.0.1" "OPEN:$out,creat,trunc" &
    rpid=$!
    PIDS+=($rpid)
    for i in $(seq 200); do
        grep -q "^ *[0-9]*: 0100007F:$hex 00000000:0000 0A" /proc/net/tcp && break
        sleep 0.02
    done
    t0=$(now_ns)
    timeout 300 socat -u "FILE:$WORK/www/data.bin" "TCP:127.0.0.1:$port"
    wait "$rpid"
    t1=$(now_ns)
    [ "$(stat -c %s "$out")" = "$SIZE" ] || { echo "bench_depot: socat wrote a short file" >&2; return 1; }
    rm -f "$out"
    mbps "$SIZE" "$(( t1 - t0 ))e-9"
}

# This machine is a VM whose free memory goes back to the host a few seconds after it is
# freed; the first touch of such a page then costs about ten times a warm one (a 256 MiB dd
# into the page cache ran at 350 MB/s cold and 3.8 GB/s warm).  A STORE fills SIZE bytes of
# new page cache, so each STORE side first frees a ballast file of SIZE bytes, written well
# before, and so gets warm pages; the ballast is rewritten (untimed) afterwards.
ballast_fill() { head -c "$SIZE" /dev/zero >"$WORK/ballast"; }
ballast_free() { rm -f "$WORK/ballast"; }

# ours_small PID PORT -> "triples_per_s p50_ms p99_ms depot_cpu_us_per_triple"
ours_small() {
    local out c0 c1
    c0=$(cpu_ticks "$1")
    out=$("$BENCH" smallops 127.0.0.1 "$2" --clients 16 --seconds "$SMALL_SECONDS" --size 4096)
    c1=$(cpu_ticks "$1")
    echo "$(echo "$out" | kv triples_per_s) $(echo "$out" | kv triple_p50_ms)" \
        "$(echo "$out" | kv triple_p99_ms)" \
        "$(awk -v t=$(( c1 - c0 )) -v n="$(echo "$out" | kv triples)" -v ms="$TICK_MS" \
            'BEGIN { printf "%.0f", (n > 0) ? t * ms * 1000 / n : 0 }')"
}

# ---- setup ----------------------------------------------------------------------------

echo "== setup"
head -c "$SIZE" /dev/urandom >"$WORK/www/data.bin"
# Hard storage of each depot: three times the file and 4 GiB.
HARD_MB=$(( SIZE / 1048576 * 3 + 4096 ))
# A: the depot measured against the peers, event log on, sampling 0 (off); B: every event.
start_depot A "$HARD_MB" --event-log "$WORK/A/events.log" --event-sample 0
start_depot B "$HARD_MB" --event-log "$WORK/B/events.log" --event-sample 1
start_nginx nginx
NGINX_PORT=$NGPORT_nginx NGINX_PID=$PID_nginx
echo "depot A: port $PORT_A --event-sample 0; depot B: port $PORT_B --event-sample 1; nginx: port $NGINX_PORT (worker_processes auto, sendfile on)"
for d in A B; do
    port_var=PORT_$d
    out=$("$BENCH" fill 127.0.0.1 "${!port_var}" "$SIZE" --from "$WORK/www/data.bin")
    printf -v "RCAP_$d" '%s' "$(echo "$out" | sed -n 's/^rcap=//p')"
    echo "fill $d: $(echo "$out" | head -1)"
    rcap_var=RCAP_$d
    # Correctness once (untimed): every byte LOADed equals the source file.
    "$BENCH" load 127.0.0.1 "${!port_var}" "${!rcap_var}" "$SIZE" --conns 4 \
        --verify "$WORK/www/data.bin" >/dev/null
done
ballast_fill
sync
echo "page cache: source file and both depot copies written and synced just before the runs (warm for all sides)"

# One untimed round of every case first: the first touch of each path (fresh memory, the
# depots' SQLite pages and threads, nginx's workers) is not what is being compared.
echo "== warm-up round (not counted)"
ours_load "$PID_A" "$PORT_A" "$RCAP_A" 1 >/dev/null; nginx_load1 >/dev/null
ours_load "$PID_B" "$PORT_B" "$RCAP_B" 1 >/dev/null
nginx_load4 >/dev/null; ours_load "$PID_A" "$PORT_A" "$RCAP_A" 4 >/dev/null
ballast_free; ours_store "$PORT_A" >/dev/null; ballast_fill
ballast_free; socat_store >/dev/null; ballast_fill
SMALL_WARM=$SMALL_SECONDS; SMALL_SECONDS=1
ours_small "$PID_A" "$PORT_A" >/dev/null; ours_small "$PID_B" "$PORT_B" >/dev/null
SMALL_SECONDS=$SMALL_WARM

# ---- rounds ---------------------------------------------------------------------------

for r in $(seq "$RUNS"); do
    echo "== round $r/$RUNS"
    set -- $(ours_load "$PID_A" "$PORT_A" "$RCAP_A" 1) $(nginx_load1) \
        $(ours_load "$PID_B" "$PORT_B" "$RCAP_B" 1)
    record load1_ours "$1"; record load1_nginx "$3"; record load1_ev "$5"
    record load1_ratio "$(ratio "$1" "$3")"; record load1_evratio "$(ratio "$5" "$1")"
    record load1_ours_cpu "$2"; record load1_nginx_cpu "$4"; record load1_ev_cpu "$6"
    record load1_cpuratio "$(ratio "$2" "$4")"; record load1_evcpuratio "$(ratio "$6" "$2")"
    echo "run=$r case=load1 ours_mbps=$1 nginx_mbps=$3 ours_ev1_mbps=$5" \
        "ours_cpu_ms_per_gb=$2 nginx_cpu_ms_per_gb=$4 ours_ev1_cpu_ms_per_gb=$6"

    set -- $(nginx_load4) $(ours_load "$PID_A" "$PORT_A" "$RCAP_A" 4)
    record load4_ours "$3"; record load4_nginx "$1"; record load4_ratio "$(ratio "$3" "$1")"
    record load4_ours_cpu "$4"; record load4_nginx_cpu "$2"; record load4_cpuratio "$(ratio "$4" "$2")"
    echo "run=$r case=load4 ours_mbps=$3 nginx_mbps=$1 ours_cpu_ms_per_gb=$4 nginx_cpu_ms_per_gb=$2"

    if [ $(( r % 2 )) -eq 1 ]; then
        ballast_free; a=$(ours_store "$PORT_A"); ballast_fill
        ballast_free; s=$(socat_store); ballast_fill
    else
        ballast_free; s=$(socat_store); ballast_fill
        ballast_free; a=$(ours_store "$PORT_A"); ballast_fill
    fi
    record store_ours "$a"; record store_socat "$s"; record store_ratio "$(ratio "$a" "$s")"
    echo "run=$r case=store ours_mbps=$a socat_mbps=$s"

    set -- $(ours_small "$PID_A" "$PORT_A") $(ours_small "$PID_B" "$PORT_B")
    record small_ours "$1"; record small_p50 "$2"; record small_p99 "$3"; record small_cpu "$4"
    record small_ev "$5"; record small_ev_p50 "$6"; record small_ev_p99 "$7"; record small_ev_cpu "$8"
    record small_evratio "$(ratio "$5" "$1")"; record small_evcpuratio "$(ratio "$8" "$4")"
    echo "run=$r case=smallops ours_triples_per_s=$1 p50_ms=$2 p99_ms=$3 depot_cpu_us_per_triple=$4" \
        "ours_ev1_triples_per_s=$5 ev1_p50_ms=$6 ev1_p99_ms=$7 ev1_depot_cpu_us_per_triple=$8"
done

# ---- summary --------------------------------------------------------------------------

echo "== summary: medians of $RUNS rounds (MB = 10^6 bytes; ratio = median of per-round ratios, [ratio of medians])"
l1a=$(med load1_ours); l1n=$(med load1_nginx); l1r=$(med load1_ratio)
echo "load_1conn   ours_mbps=$l1a nginx_mbps=$l1n ratio=$l1r [$(ratio "$l1a" "$l1n")] target>=1.0 $(verdict "$l1r" 1.0)"
echo "             server_cpu_ms_per_gb ours=$(med load1_ours_cpu) nginx=$(med load1_nginx_cpu) ours/nginx=$(med load1_cpuratio)"
l4a=$(med load4_ours); l4n=$(med load4_nginx); l4r=$(med load4_ratio)
echo "load_4conn   ours_mbps=$l4a nginx_mbps=$l4n ratio=$l4r [$(ratio "$l4a" "$l4n")] target>=1.0 $(verdict "$l4r" 1.0)"
echo "             server_cpu_ms_per_gb ours=$(med load4_ours_cpu) nginx=$(med load4_nginx_cpu) ours/nginx=$(med load4_cpuratio)"
sa=$(med store_ours); ss=$(med store_socat); sr=$(med store_ratio)
echo "store_1conn  ours_mbps=$sa socat_mbps=$ss ratio=$sr [$(ratio "$sa" "$ss")] target>=0.9 $(verdict "$sr" 0.9)"
so=$(med small_ours)
echo "smallops_16  triples_per_s=$so triple_p50_ms=$(med small_p50) triple_p99_ms=$(med small_p99) depot_cpu_us_per_triple=$(med small_cpu) target>=5000 $(verdict "$so" 5000)"
le=$(med load1_evratio); se=$(med small_evratio)
echo "event_sample load_1conn ev1_mbps=$(med load1_ev) ev0_mbps=$l1a ev1/ev0=$le" \
    "depot_cpu_ms_per_gb ev1=$(med load1_ev_cpu) ev0=$(med load1_ours_cpu) ev1/ev0=$(med load1_evcpuratio)"
echo "event_sample smallops   ev1_triples_per_s=$(med small_ev) ev0_triples_per_s=$so ev1/ev0=$se" \
    "ev1_p50_ms=$(med small_ev_p50) ev1_p99_ms=$(med small_ev_p99)" \
    "depot_cpu_us_per_triple ev1=$(med small_ev_cpu) ev0=$(med small_cpu) ev1/ev0=$(med small_evcpuratio)"
echo "event lines written by depot B: $(wc -l <"$WORK/B/events.log" 2>/dev/null || echo 0)"
