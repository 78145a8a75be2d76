#!/bin/bash
# bench_serve.sh -- random access (issue 15): lors_serve and lors_mount against lors_download
# and against IBP itself, on the same depots in the same run.
#
#   tests/bench/bench_serve.sh BUILD_DIR          (make bench-serve runs it on build/release)
#
# 1. Sequential: one file of BENCH_SIZE (256M) on 4 depots read whole by lors_download -o
#    /dev/null, by curl through a lors_serve started for the round, and by dd (bs=1M) from a
#    lors_mount mounted for the round (with the page cache, and with --direct-io) (a fresh cache each time, process start and connection
#    set-up included on every side); rates and the per-round ratios against lors_download.  On
#    plain loopback the gateway's bytes cross the loopback twice (depot -> gateway -> curl)
#    on the same 2 cores: the nginx -> curl line is what that second crossing alone costs.
# 2. Random reads of 4 KiB and 1 MiB, BENCH_READS (200) per kind and round, each in a 1 MiB
#    block of its own (no read finds another's bytes cached), each timed alone: through the
#    gateway (curl's library, one kept-alive connection), through the mount (pread; with the
#    page cache and with --direct-io), through
#    the reader in-process (no HTTP), and straight from the depot holding them: one IBP LOAD
#    of the bytes, and one LOAD of the 1 MiB checksum block around them plus its SHA-256 (what
#    a client that verifies what it reads must do); p50 and p99 medians over the rounds.  4 KiB
#    reads also of the same bytes uploaded with a 64 KiB checksum block (-E 64K).
# 3. Load, in the GigaView manner: a BENCH_LOAD_SIZE (1G) file on 4 depots, one lors_serve
#    with its defaults, BENCH_CLIENTS ("1 8 32 128") clients at once each reading random 1 MiB
#    windows for BENCH_LOAD_SECONDS (10); throughput and p50/p99 response time per count, and
#    the count at which p99 passes 10 x the single client's.  BENCH_PNG=FILE plots it.
#
# Environment: BENCH_RUNS (rounds, default 5, at least 3), BENCH_PARTS (which of 1 2 3 to run,
# default all), the sizes above, TMPDIR (where the
# depots keep their data; default /tmp), BENCH_LINK (e.g. 1gbit: the depots run in a network
# namespace of their own behind a veth whose depot side is capped by a tbf at that rate, as
# depots across a network are; the clients, gateway and mount stay on this side; needs root,
# ip and tc, as the WAN testbed).
set -euo pipefail

. "$(dirname "$0")/lib.sh"
bench_runs 5
SIZE_ARG=${BENCH_SIZE:-256M}
LOAD_SIZE_ARG=${BENCH_LOAD_SIZE:-1G}
READS=${BENCH_READS:-200}
CLIENTS=${BENCH_CLIENTS:-1 8 32 128}
LOAD_SECS=${BENCH_LOAD_SECONDS:-10}
PARTS=" ${BENCH_PARTS:-1 2 3} "
part() { case $PARTS in *" $1 "*) return 0 ;; esac; return 1; }
DRIVER=$BUILD/bench/bench_lors_dl
SB=$BUILD/bench/bench_serve
bench_need_built "$BIN/ibp_depot" "$BIN/lors_upload" "$BIN/lors_download" "$BIN/lors_serve" \
    "$BIN/lors_mount" "$DRIVER" "$SB" "$BUILD/bench/bench_ibp"
bench_need_tools "scripts/install-deps.sh" curl dd nginx
SIZE=$(bytes_of "$SIZE_ARG")
LOAD_SIZE=$(bytes_of "$LOAD_SIZE_ARG")
MOUNT_OK=1
{ [ -w /dev/fuse ] && command -v fusermount3 >/dev/null; } || MOUNT_OK=0

serve_cleanup() { # the mount and the namespace, then lib.sh's cleanup with the exit status
    local rc=$?
    set +e # a trap under errexit would stop at the first step that has nothing to undo
    fusermount3 -u -z "$WORK/mnt" 2>/dev/null
    [ -z "${LINK_NS:-}" ] || bench_link_down
    (exit "$rc")
    bench_cleanup
}
bench_workdir
LINK_NS=""
trap serve_cleanup EXIT
: >"$WORK/empty.rc"
export LNS_RC=$WORK/empty.rc LNS_NO_REPORT=1

ADDR=127.0.0.1
# the depots behind a shaped veth; only their side is capped: this benchmark only reads
[ -z "${BENCH_LINK:-}" ] || bench_link_up "$BENCH_LINK" depots

echo "== bench_serve: machine and command"
echo "command: BENCH_RUNS=$RUNS BENCH_SIZE=$SIZE_ARG BENCH_READS=$READS BENCH_LOAD_SIZE=$LOAD_SIZE_ARG BENCH_CLIENTS='$CLIENTS' BENCH_LOAD_SECONDS=$LOAD_SECS${BENCH_LINK:+ BENCH_LINK=$BENCH_LINK} $0 $*"
bench_describe_machine

ROOM=$(( (2 * SIZE + LOAD_SIZE) / 1048576 / 4 + 128 ))
for i in 1 2 3 4; do start_depot "d$i" "$ROOM"; done
L="$ADDR:$PORT_d1,$ADDR:$PORT_d2,$ADDR:$PORT_d3,$ADDR:$PORT_d4"
mkdir -p "$WORK/x" "$WORK/mnt" "$WORK/www"
head -c "$SIZE" /dev/urandom >"$WORK/www/data.bin"
"$BIN/lors_upload" --no-rc -q -d 2h -F 4 --depot-list "$L" -o "$WORK/x/data.bin.xnd" \
    "$WORK/www/data.bin"
XND=$WORK/x/data.bin.xnd
# the same bytes with a 64 KiB checksum block (lors_upload -E 64K), for small random reads
"$BIN/lors_upload" --no-rc -q -d 2h -F 4 -E 64K --depot-list "$L" -o "$WORK/x/data64.bin.xnd" \
    "$WORK/www/data.bin"

timed() { # CMD... -> seconds
    local out
    out=$("$DRIVER" time "$@" 2>>"$WORK/client.err") ||
        { echo "bench_serve: $1 failed: $(tail -1 "$WORK/client.err")" >&2; return 1; }
    echo "$out" | kv seconds
}

SPID=
serve_start() { # lors_serve on $WORK/x with extra flags; SURL once it listens
    rm -f "$WORK/serve.port"
    "$BIN/lors_serve" --no-rc -q -p 0 --port-file "$WORK/serve.port" "$@" "$WORK/x" \
        2>>"$WORK/serve.err" &
    SPID=$!
    PIDS+=("$SPID")
    for _ in $(seq 200); do [ -s "$WORK/serve.port" ] && break; sleep 0.02; done
    SURL="http://127.0.0.1:$(cat "$WORK/serve.port")"
}
serve_stop() { kill "$SPID"; wait "$SPID" 2>/dev/null || true; }
mount_start() {
    "$BIN/lors_mount" --no-rc "$@" "$WORK/x" "$WORK/mnt"
}
mount_stop() { fusermount3 -u "$WORK/mnt"; }

# ---- 1. sequential --------------------------------------------------------------------------
start_nginx ng
if part 1; then
echo
echo "== 1. sequential: $SIZE_ARG on 4 depots, MB/s (ratio: against lors_download, same round)"
printf '%5s %10s %10s %7s %10s %7s %10s %7s %12s\n' round download gateway ratio mount ratio \
    "mount dio" ratio "nginx->curl"
for r in $(seq "$RUNS"); do
    td=$(timed "$BIN/lors_download" --no-rc --quiet -o /dev/null "$XND")
    serve_start
    tg=$(timed curl -sf -o /dev/null "$SURL/data.bin")
    serve_stop
    tm=0 to=0
    if [ "$MOUNT_OK" = 1 ]; then
        mount_start
        tm=$(timed dd if="$WORK/mnt/data.bin" of=/dev/null bs=1M status=none)
        mount_stop
        mount_start --direct-io
        to=$(timed dd if="$WORK/mnt/data.bin" of=/dev/null bs=1M status=none)
        mount_stop
    fi
    tn=$(timed curl -sf -o /dev/null "http://127.0.0.1:$NGPORT_ng/data.bin")
    d=$(mbps "$SIZE" "$td"); g=$(mbps "$SIZE" "$tg"); m=$(mbps "$SIZE" "$tm")
    o=$(mbps "$SIZE" "$to"); n=$(mbps "$SIZE" "$tn")
    record seq.d "$d"; record seq.g "$g"; record seq.m "$m"; record seq.o "$o"; record seq.n "$n"
    record seq.rg "$(ratio "$g" "$d")"; record seq.rm "$(ratio "$m" "$d")"
    record seq.ro "$(ratio "$o" "$d")"
    printf '%5s %10s %10s %7s %10s %7s %10s %7s %12s\n' "$r" "$d" "$g" "$(ratio "$g" "$d")" \
        "$m" "$(ratio "$m" "$d")" "$o" "$(ratio "$o" "$d")" "$n"
done
printf '%5s %10s %10s %7s %10s %7s %10s %7s %12s\n' median "$(med seq.d)" "$(med seq.g)" \
    "$(med seq.rg)" "$(med seq.m)" "$(med seq.rm)" "$(med seq.o)" "$(med seq.ro)" "$(med seq.n)"
echo "target: ratio >= 0.8: gateway $(verdict "$(med seq.rg)" 0.8), mount" \
    "$(verdict "$(med seq.rm)" 0.8), mount --direct-io $(verdict "$(med seq.ro)" 0.8)"
fi

# ---- 2. random reads -------------------------------------------------------------------------
if part 2; then
echo
echo "== 2. random reads, $READS per kind and round, each in a block of its own: p50 / p99 ms"
printf '%5s %8s %14s %14s %14s %14s %14s %14s\n' round size:file gateway mount "mount dio" \
    reader "ibp LOAD" "LOAD+sha256"
lat() { # "p50 p99" of a bench_serve line
    local out
    out=$(BENCH_SEED=$1 "${@:2}" 2>>"$WORK/client.err") ||
        { echo "bench_serve: $2 $3 failed: $(tail -1 "$WORK/client.err")" >&2; return 1; }
    echo "$(echo "$out" | kv p50_ms) $(echo "$out" | kv p99_ms)"
}
KINDS="4K:data 1M:data 4K:data64"   # size:file; data64 has 64 KiB checksum blocks
for r in $(seq "$RUNS"); do
    ki=0
    for kind in $KINDS; do
        s=${kind%:*} f=${kind#*:} ki=$(( ki + 1 ))
        seed=$(( r * 100 + ki * 10 ))
        serve_start
        g=$(lat "$seed" "$SB" http "$SURL/$f.bin" "$SIZE" "$s" "$READS")
        serve_stop
        m="0 0" o="0 0"
        if [ "$MOUNT_OK" = 1 ]; then
            mount_start
            m=$(lat $(( seed + 1 )) "$SB" file "$WORK/mnt/$f.bin" "$s" "$READS")
            mount_stop
            mount_start --direct-io
            o=$(lat $(( seed + 5 )) "$SB" file "$WORK/mnt/$f.bin" "$s" "$READS")
            mount_stop
        fi
        rd=$(lat $(( seed + 2 )) "$SB" reader "$WORK/x/$f.bin.xnd" "$s" "$READS")
        i=$(lat $(( seed + 3 )) "$SB" ibp "$WORK/x/$f.bin.xnd" "$s" "$READS")
        v=$(lat $(( seed + 4 )) "$SB" ibpv "$WORK/x/$f.bin.xnd" "$s" "$READS")
        s=$kind
        for k in g m o rd i v; do
            record "r50.$k.$s" "${!k% *}"; record "r99.$k.$s" "${!k#* }"
        done
        record "rr.g.$s" "$(ratio "${g% *}" "${i% *}")"; record "rv.g.$s" "$(ratio "${g% *}" "${v% *}")"
        record "rr.m.$s" "$(ratio "${m% *}" "${i% *}")"; record "rv.m.$s" "$(ratio "${m% *}" "${v% *}")"
        record "rr.o.$s" "$(ratio "${o% *}" "${i% *}")"; record "rv.o.$s" "$(ratio "${o% *}" "${v% *}")"
        printf '%5s %8s %14s %14s %14s %14s %14s %14s\n' "$r" "$s" "${g/ / / }" "${m/ / / }" \
            "${o/ / / }" "${rd/ / / }" "${i/ / / }" "${v/ / / }"
    done
done
for s in $KINDS; do
    printf '%5s %8s %14s %14s %14s %14s %14s %14s\n' median "$s" \
        "$(med "r50.g.$s") / $(med "r99.g.$s")" "$(med "r50.m.$s") / $(med "r99.m.$s")" \
        "$(med "r50.o.$s") / $(med "r99.o.$s")" \
        "$(med "r50.rd.$s") / $(med "r99.rd.$s")" "$(med "r50.i.$s") / $(med "r99.i.$s")" \
        "$(med "r50.v.$s") / $(med "r99.v.$s")"
done
for s in $KINDS; do
    echo "p50 $s: gateway $(med "rr.g.$s") x one LOAD, $(med "rv.g.$s") x LOAD+sha256;" \
        "mount $(med "rr.m.$s") x, $(med "rv.m.$s") x; mount --direct-io $(med "rr.o.$s") x," \
        "$(med "rv.o.$s") x   (target: within 1.5 x)"
done
# a 4 KiB read checked through the outboard (one VEC_READ of a few KiB) against one bare LOAD
echo "p50 4K:data against one bare 4 KiB LOAD: gateway $(med "rr.g.4K:data") x," \
    "mount --direct-io $(med "rr.o.4K:data") x: $(verdict_max "$(med "rr.g.4K:data")" 3)" \
    "(target: at most 3 x)"
# the HTTP floor: the same kind of random 4 KiB ranges from nginx serving the local file, with
# the same client (one kept-alive connection): what an HTTP exchange costs on this machine
for r in $(seq "$RUNS"); do
    n=$(lat $(( r * 100 + 7 )) "$SB" http "http://127.0.0.1:$NGPORT_ng/data.bin" "$SIZE" 4K \
        "$READS")
    record r50.ng "${n% *}"
done
echo "p50 4K from nginx (local file, no checks): $(med r50.ng) ms; the gateway" \
    "$(ratio "$(med "r50.g.4K:data")" "$(med r50.ng)") x that"
fi

# ---- 3. load --------------------------------------------------------------------------------
part 3 || exit 0
echo
echo "== 3. load: random 1 MiB windows of a $LOAD_SIZE_ARG file on 4 depots, ${LOAD_SECS} s per count"
head -c "$LOAD_SIZE" /dev/urandom >"$WORK/big.bin"
"$BIN/lors_upload" --no-rc -q -d 2h -F 4 --depot-list "$L" -o "$WORK/x/big.bin.xnd" \
    "$WORK/big.bin"
rm -f "$WORK/big.bin"
serve_start
printf '%8s %10s %9s %9s %9s\n' clients "MB/s" requests "p50 ms" "p99 ms"
: >"$WORK/load.dat"
knee=""
p99_1=""
for c in $CLIENTS; do
    out=$("$SB" load "$SURL/big.bin" "$LOAD_SIZE" 1M "$c" "$LOAD_SECS")
    mb=$(echo "$out" | kv MBps); p50=$(echo "$out" | kv p50_ms); p99=$(echo "$out" | kv p99_ms)
    printf '%8s %10s %9s %9s %9s\n' "$c" "$mb" "$(echo "$out" | kv requests)" "$p50" "$p99"
    echo "$c $mb $p50 $p99" >>"$WORK/load.dat"
    [ -z "$p99_1" ] && p99_1=$p99
    if [ -z "$knee" ] && awk -v a="$p99" -v b="$p99_1" 'BEGIN { exit !(a > 10 * b) }'; then
        knee=$c
    fi
done
serve_stop
if [ -n "$knee" ]; then
    echo "p99 passes 10 x the single client's ($p99_1 ms) at $knee clients"
else
    echo "p99 stays under 10 x the single client's ($p99_1 ms) up to the last count"
fi
if [ -n "${BENCH_PNG:-}" ]; then
    "$SB" plot "$BENCH_PNG" "$WORK/load.dat" && echo "plot: $BENCH_PNG"
fi
