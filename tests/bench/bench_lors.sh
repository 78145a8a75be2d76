#!/bin/bash
# bench_lors.sh -- lors_download against curl (one depot / one nginx) and aria2c (four depots /
# four nginx mirrors) on loopback, same run; and the peak memory of a large download.
#
#   tests/bench/bench_lors.sh BUILD_DIR           (make bench-lors runs it on build/release)
#
# Environment: BENCH_RUNS (rounds, default 7, at least 3), BENCH_SIZE (default 512M),
# BENCH_BIG (the memory case's file, default 4G; 0 skips it), TMPDIR (where the data lives; a
# real disk, not tmpfs, default /tmp), BENCH_OURS1 / BENCH_OURS4 (lors_download flags for the
# one- and four-depot cases), BENCH_ARIA2 (aria2c's split flags).
#
# Ours is $BUILD/bin/lors_upload + lors_download when both are built, else the engine driver
# $BUILD/bench/bench_lors_dl (same flags, same library calls).  Every client, ours and the
# peers, runs under `bench_lors_dl time`, which reports the wall time of the whole process
# (start, connections and exit included) and its peak RSS from wait4; rates are file bytes
# over that time.  Output goes to /dev/null on both sides.  Checksum verification is on for
# ours (the default: every byte is hashed with SHA-256 against the exNode's digests);
# curl and aria2c check nothing.  Rounds interleave the sides (ours first in odd rounds, the
# peer first in even ones); each ratio is computed per round and the median of the per-round
# ratios is reported next to the ratio of the medians; curl's own figure (speed_download, which
# leaves out its start and connection) is shown beside it, as a stricter peer.  Page cache: the source file (served by
# nginx) is written, uploaded to the depots and synced before the runs, and one untimed
# warm-up round reads everything once, so every side reads from a warm cache.  The trap
# stops every process this script started and removes its directory, also on failure.
set -euo pipefail

. "$(dirname "$0")/lib.sh"
bench_runs 7
SIZE_ARG=${BENCH_SIZE:-512M}
BIG_ARG=${BENCH_BIG:-4G}
OURS1=${BENCH_OURS1:--t 4 -a 4}
OURS4=${BENCH_OURS4:--t 4 -a 2}
# aria2c's best on this machine: 4 mirrors, 4 connections each, 1 MiB pieces, and no disk
# cache (with one, every byte is copied once more before the write to /dev/null).
ARIA2=${BENCH_ARIA2:--s4 -x4 -k1M --disk-cache=0}
DEFAULT_BUFFER_MB=64 # lors_download_opts_init: buffer_bytes = 64 MiB

DRIVER=$BUILD/bench/bench_lors_dl
bench_need_built "$BIN/ibp_depot" "$DRIVER" "$BUILD/bench/bench_ibp"
bench_need_tools "scripts/install-deps.sh --bench" nginx curl aria2c
if [ -x "$BIN/lors_upload" ] && [ -x "$BIN/lors_download" ]; then
    UPLOAD=("$BIN/lors_upload"); DOWNLOAD=("$BIN/lors_download"); OURS_NAME=lors_download
else
    UPLOAD=("$DRIVER" upload); DOWNLOAD=("$DRIVER" download); OURS_NAME="bench_lors_dl download"
fi
SIZE=$(bytes_of "$SIZE_ARG")
BIG=$(bytes_of "$BIG_ARG")

bench_workdir
: >"$WORK/empty.rc"
export LNS_RC=$WORK/empty.rc # no ~/.xndrc settings in the measurement

echo "== bench_lors: machine and command"
echo "command: BENCH_RUNS=$RUNS BENCH_SIZE=$SIZE_ARG BENCH_BIG=$BIG_ARG BENCH_OURS1='$OURS1' BENCH_OURS4='$OURS4' BENCH_ARIA2='$ARIA2' $0 $*"
bench_describe_machine
echo "ours: $OURS_NAME; peers: $("$NGINX" -v 2>&1 | sed 's/.*: //') $(curl --version | head -1 | cut -d' ' -f1-2) $(aria2c --version | head -1 | sed 's/ version /\//')"

# ---- one measurement each -------------------------------------------------------------

# timed CMD...: run it under the driver's timer; prints "seconds maxrss_kb cpu_s" (cpu: user +
# system of the client process); fails if it does.
timed() {
    local out
    out=$("$DRIVER" time "$@" 2>>"$WORK/client.err") ||
        { echo "bench_lors: $1 failed: $(tail -1 "$WORK/client.err")" >&2; return 1; }
    echo "$(echo "$out" | kv seconds) $(echo "$out" | kv maxrss_kb) $(echo "$out" | kv cpu_s)"
}

# CPU time of a server and its children, in ms (see cpu_ticks): CPU per GB is the steadier
# figure of the work each side does (ours hashes every byte; curl does not).
server_ms() { echo $(( $(cpu_ticks "$1") * TICK_MS )); }
# CPU ms per GB (10^9 bytes) of client seconds $1 and server ms $2 for SIZE bytes.
cpu_per_gb() { awk -v c="$1" -v s="$2" -v b="$SIZE" 'BEGIN { printf "%.0f", (c * 1000 + s) * 1e9 / b }'; }

ours1() { # -> "MB/s cpu_ms_per_GB(client + depot)"
    local s0 s1
    s0=$(server_ms "$PID_A")
    set -- $(timed "${DOWNLOAD[@]}" -o /dev/null $OURS1 "$WORK/one.xnd")
    s1=$(server_ms "$PID_A")
    echo "$(mbps "$SIZE" "$1") $(cpu_per_gb "$3" $(( s1 - s0 )))"
}
ours4() { set -- $(timed "${DOWNLOAD[@]}" -o /dev/null $OURS4 "$WORK/four.xnd"); mbps "$SIZE" "$1"; }

curl1() { # -> "MB/s (wall) MB/s (curl's own clock) cpu_ms_per_GB(curl + nginx)"
    local out s0 s1
    s0=$(server_ms "$PID_N0")
    out=$("$DRIVER" time curl -s -o /dev/null -w '%{http_code} %{size_download} %{speed_download}\n' \
        "http://127.0.0.1:$NGPORT_N0/data.bin")
    s1=$(server_ms "$PID_N0")
    set -- $out
    [ "$1" = 200 ] && [ "$2" = "$SIZE" ] || { echo "bench_lors: curl got $1 $2" >&2; return 1; }
    echo "$(mbps "$SIZE" "$(echo "$out" | kv seconds)") $(awk -v s="$3" 'BEGIN { printf "%.1f", s / 1e6 }')" \
        "$(cpu_per_gb "$(echo "$out" | kv cpu_s)" $(( s1 - s0 )))"
}

aria4() {
    local urls=() n
    for n in N0 N1 N2 N3; do
        local v=NGPORT_$n
        urls+=("http://127.0.0.1:${!v}/data.bin")
    done
    set -- $(timed aria2c -q -d /dev -o null --allow-overwrite=true --file-allocation=none \
        --auto-save-interval=0 $ARIA2 "${urls[@]}")
    mbps "$SIZE" "$1"
}

# ---- setup ----------------------------------------------------------------------------

echo "== setup"
head -c "$SIZE" /dev/urandom >"$WORK/www/data.bin"
# Room for the bench file's copy and the big file's on each depot.
for d in A B C D; do start_depot $d $(( (SIZE + BIG) / 1048576 + 1024 )); done
for n in N0 N1 N2 N3; do start_nginx $n; done
ALL="127.0.0.1:$PORT_A,127.0.0.1:$PORT_B,127.0.0.1:$PORT_C,127.0.0.1:$PORT_D"
echo "depots: $ALL; nginx: 127.0.0.1:$NGPORT_N0 $NGPORT_N1 $NGPORT_N2 $NGPORT_N3 (worker_processes auto, sendfile on)"
"${UPLOAD[@]}" --depot-list "127.0.0.1:$PORT_A" -c 1 -F 4 -d 1h -o "$WORK/one.xnd" \
    "$WORK/www/data.bin" >/dev/null 2>>"$WORK/client.err" ||
    { echo "bench_lors: upload to one depot failed" >&2; exit 1; }
"${UPLOAD[@]}" --depot-list "$ALL" -c 4 -F 4 -d 1h -o "$WORK/four.xnd" \
    "$WORK/www/data.bin" >/dev/null 2>>"$WORK/client.err" ||
    { echo "bench_lors: upload to four depots failed" >&2; exit 1; }
echo "one.xnd: 1 copy in 4 fragments on depot A; four.xnd: 4 copies in 4 fragments, a full replica on each depot"
# Correctness once (untimed): both downloads give the source's bytes.
for x in one four; do
    "${DOWNLOAD[@]}" -o "$WORK/check.bin" "$WORK/$x.xnd" >/dev/null 2>>"$WORK/client.err"
    cmp -s "$WORK/check.bin" "$WORK/www/data.bin" ||
        { echo "bench_lors: $x.xnd downloads other bytes than the source" >&2; exit 1; }
    rm -f "$WORK/check.bin"
done
sync
echo "page cache: source file and depot copies written and synced; one warm-up round follows"

echo "== warm-up round (not counted)"
ours1 >/dev/null; curl1 >/dev/null; ours4 >/dev/null; aria4 >/dev/null

# ---- rounds ---------------------------------------------------------------------------

for r in $(seq "$RUNS"); do
    echo "== round $r/$RUNS"
    if [ $(( r % 2 )) -eq 1 ]; then a=$(ours1); c=$(curl1); else c=$(curl1); a=$(ours1); fi
    set -- $a $c
    record one_ours "$1"; record one_curl "$3"; record one_ratio "$(ratio "$1" "$3")"
    record one_curl_self "$4"; record one_ratio_self "$(ratio "$1" "$4")"
    record one_ours_cpu "$2"; record one_curl_cpu "$5"
    echo "run=$r case=one_depot ours_mbps=$1 curl_mbps=$3 curl_own_clock_mbps=$4" \
        "cpu_ms_per_gb ours(client+depot)=$2 curl(curl+nginx)=$5"
    if [ $(( r % 2 )) -eq 1 ]; then a=$(ours4); c=$(aria4); else c=$(aria4); a=$(ours4); fi
    record four_ours "$a"; record four_aria "$c"; record four_ratio "$(ratio "$a" "$c")"
    echo "run=$r case=four_depots ours_mbps=$a aria2_mbps=$c"
done

echo "== ours, four depots, once more with -V (not counted): where the bytes came from"
"${DOWNLOAD[@]}" -o /dev/null $OURS4 -V "$WORK/four.xnd" 2>&1 | sed 's/^/  /'

# ---- memory: a big download with the default reorder buffer ------------------------------
#
# Twice: to /dev/null (the writer never waits, so the buffer holds little), and into a pipe
# whose reader starts 3 s late, so the reorder buffer fills up before anything leaves.  The
# peak RSS (wait4: the largest process of the pipeline) must stay under the buffer + 64 MiB.

MEM_LINE="memory       skipped (BENCH_BIG=0)"
if [ "$BIG" -gt 0 ]; then
    echo "== memory: $BIG_ARG over the four depots, default options"
    head -c "$BIG" /dev/urandom >"$WORK/big.bin"
    "${UPLOAD[@]}" --depot-list "$ALL" -c 4 -F 4 -d 1h -o "$WORK/big.xnd" "$WORK/big.bin" \
        >/dev/null 2>>"$WORK/client.err" || { echo "bench_lors: upload of $BIG_ARG failed" >&2; exit 1; }
    rm -f "$WORK/big.bin" # the depots' copies and the exNode's digests are all that is needed
    limit_kb=$(( (DEFAULT_BUFFER_MB + 64) * 1024 ))
    set -- $(timed "${DOWNLOAD[@]}" -o /dev/null "$WORK/big.xnd")
    null_s=$1 null_kb=$2
    echo "run=big_devnull bytes=$BIG seconds=$1 mbps=$(mbps "$BIG" "$1") maxrss_kb=$2"
    # shellcheck disable=SC2016
    set -- $(timed sh -c '"$@" | (sleep 3; cat >/dev/null)' sh "${DOWNLOAD[@]}" -o - "$WORK/big.xnd")
    late_kb=$2
    echo "run=big_late_reader bytes=$BIG seconds=$1 maxrss_kb=$2"
    peak=$(( null_kb > late_kb ? null_kb : late_kb ))
    verdict=$([ "$peak" -lt "$limit_kb" ] && echo met || echo "NOT met")
    MEM_LINE="memory       $BIG_ARG, default options, buffer ${DEFAULT_BUFFER_MB} MiB: peak_rss_mb devnull=$(( null_kb / 1024 )) late_reader=$(( late_kb / 1024 )) target<$(( limit_kb / 1024 )) $verdict; devnull mbps=$(mbps "$BIG" "$null_s")"
fi

# ---- summary --------------------------------------------------------------------------

echo "== summary: medians of $RUNS rounds (MB = 10^6 bytes; ratio = median of per-round ratios, [ratio of medians]); output /dev/null; ours verifies SHA-256"
oa=$(med one_ours); oc=$(med one_curl); orr=$(med one_ratio); os=$(med one_curl_self)
echo "one_depot    ours_mbps=$oa curl_mbps=$oc ratio=$orr [$(ratio "$oa" "$oc")] target>=1.0 $(verdict "$orr" 1.0)   (ours: $OURS1)"
echo "             curl_own_clock_mbps=$os ratio=$(med one_ratio_self) [$(ratio "$oa" "$os")]"
echo "             cpu_ms_per_gb ours(client+depot)=$(med one_ours_cpu) curl(curl+nginx)=$(med one_curl_cpu)"
fa=$(med four_ours); fc=$(med four_aria); fr=$(med four_ratio)
echo "four_depots  ours_mbps=$fa aria2_mbps=$fc ratio=$fr [$(ratio "$fa" "$fc")] target>=1.0 $(verdict "$fr" 1.0)   (ours: $OURS4; aria2c: $ARIA2)"
echo "$MEM_LINE"
