#!/bin/bash
# bench_tls.sh -- the sealed wire (issue 37): lors_upload and lors_download with TLS (the
# default, --tls auto) against --tls off on four loopback depots, same run; 4 KiB
# allocate+store+load with a warm pool and the handshake with and without resumption
# (bench_tls); whether the kernel's TLS was in use; CPU seconds per GB on each side.
#
#   tests/bench/bench_tls.sh BUILD_DIR            (make bench-tls runs it on build/release)
#
# Environment: BENCH_RUNS (rounds, default 5, at least 3), BENCH_SIZE (default 256M),
# BENCH_OPS (small-op triples per side and round, default 2000), BENCH_CALLS (handshakes per
# kind and round, default 200), TMPDIR (where the data lives, default /tmp), BENCH_LINK (e.g.
# 1gbit: the depots run in a network namespace of their own behind a veth capped by a tbf at
# that rate both ways; the clients stay on this side; needs root, ip and tc).
#
# Plain (A) is --tls off, TLS (B) the tools' default; rounds interleave them (A first in odd
# rounds, B first in even ones) and each ratio TLS/plain is computed per round; the summary
# gives the median of the per-round ratios and, in brackets, the ratio of the medians.  Each
# client runs under `bench_lors_dl time` (wall time of the whole process, its CPU from wait4);
# the depots' CPU is the sum of the four processes' utime + stime (/proc) before and after.
# CPU seconds per GB are per 10^9 file bytes.  Upload: a file in the page cache to the four
# depots, one copy in four fragments (one per depot).  Download: an exNode of the same shape
# (uploaded once with TLS, so its mappings carry the depots' pins; --tls off ignores them) to
# /dev/null, SHA-256 verified (the default).  The page cache is warm (one untimed round).
set -euo pipefail

. "$(dirname "$0")/lib.sh"
bench_runs 5
SIZE_ARG=${BENCH_SIZE:-256M}
OPS=${BENCH_OPS:-2000}
CALLS=${BENCH_CALLS:-200}
DRIVER=$BUILD/bench/bench_lors_dl
BT=$BUILD/bench/bench_tls
bench_need_built "$BIN/ibp_depot" "$BIN/lors_upload" "$BIN/lors_download" "$DRIVER" "$BT"
bench_need_tools "scripts/install-deps.sh" openssl
SIZE=$(bytes_of "$SIZE_ARG")

tls_cleanup() { # the namespace, then lib.sh's cleanup with the exit status
    local rc=$?
    set +e
    [ -z "${LINK_NS:-}" ] || bench_link_down
    (exit "$rc")
    bench_cleanup
}
bench_workdir
LINK_NS=""
trap tls_cleanup EXIT
: >"$WORK/empty.rc"
export LNS_RC=$WORK/empty.rc LNS_NO_REPORT=1 # no ~/.xndrc settings in the measurement

ADDR=127.0.0.1
[ -n "${BENCH_LINK:-}" ] && bench_link_up "$BENCH_LINK"

echo "== bench_tls: machine and command"
echo "command: BENCH_RUNS=$RUNS BENCH_SIZE=$SIZE_ARG BENCH_OPS=$OPS BENCH_CALLS=$CALLS${BENCH_LINK:+ BENCH_LINK=$BENCH_LINK} $0 $*"
bench_describe_machine
echo "openssl: $(openssl version)"

# ---- setup ----------------------------------------------------------------------------

echo "== setup"
head -c "$SIZE" /dev/urandom >"$WORK/data.bin"
# Room for every upload of the runs (two a round, the warm-up and the setup's), a quarter each.
ROOM=$(( (2 * RUNS + 4) * SIZE / 4 / 1048576 + (OPS * 2 * RUNS + 64) * 8 / 1024 + 64 ))
# --log-level info (the last one counts): the line that names kernel or user-space TLS.
for d in A B C D; do start_depot $d "$ROOM" --log-level info; done
ALL="$ADDR:$PORT_A,$ADDR:$PORT_B,$ADDR:$PORT_C,$ADDR:$PORT_D"
echo "depots: $ALL"
note=$(grep -h -o 'TLS 1.3 on the same port.*' "$WORK"/A/stderr | head -1)
[ -n "$note" ] || { echo "bench_tls: depot A logged no TLS line" >&2; exit 1; }
echo "depot A: $note"
echo "kernel TLS (KTLS): $(case $note in *user-space*) echo "not in use: OpenSSL encrypts in user space, the depot's LOAD is pread + SSL_write" ;; *) echo "in use" ;; esac)"
suite=$(openssl s_client -connect "$ADDR:$PORT_A" </dev/null 2>/dev/null |
    sed -n 's/^New, TLSv1.3, Cipher is //p' | head -1)
echo "negotiated (openssl s_client, its own preference AES-256 first, against depot A): TLSv1.3 ${suite:-unknown}"

UP=("$BIN/lors_upload" --no-rc -q --depot-list "$ALL" -c 1 -F 4 -d 1h)
"${UP[@]}" -o "$WORK/data.xnd" "$WORK/data.bin" 2>>"$WORK/client.err" ||
    { echo "bench_tls: upload failed" >&2; exit 1; }
for m in off auto; do # correctness once (untimed): both modes give the source's bytes
    "$BIN/lors_download" --no-rc --quiet --tls "$m" -o "$WORK/check.bin" "$WORK/data.xnd" 2>>"$WORK/client.err"
    cmp -s "$WORK/check.bin" "$WORK/data.bin" ||
        { echo "bench_tls: --tls $m downloads other bytes than the source" >&2; exit 1; }
    rm -f "$WORK/check.bin"
done
sync
echo "data.xnd: one copy in 4 fragments, one on each depot; downloads checked with cmp in both modes"

# ---- one measurement each -------------------------------------------------------------

# run MODE up|down -> "MB/s client_cpu_s_per_GB depot_cpu_s_per_GB"
run() {
    local m=$1 what=$2 out d0 d1 cmd
    if [ "$what" = up ]; then
        cmd=("${UP[@]}" --tls "$m" --force -o "$WORK/up.xnd" "$WORK/data.bin")
    else
        cmd=("$BIN/lors_download" --no-rc --quiet --tls "$m" -o /dev/null "$WORK/data.xnd")
    fi
    d0=$(cpu_ticks "$PID_A" "$PID_B" "$PID_C" "$PID_D")
    out=$("$DRIVER" time "${cmd[@]}" 2>>"$WORK/client.err") ||
        { echo "bench_tls: ${cmd[0]##*/} --tls $m failed: $(tail -1 "$WORK/client.err")" >&2; return 1; }
    d1=$(cpu_ticks "$PID_A" "$PID_B" "$PID_C" "$PID_D")
    awk -v s="$(echo "$out" | kv seconds)" -v c="$(echo "$out" | kv cpu_s)" \
        -v d="$(( (d1 - d0) * TICK_MS ))" -v b="$SIZE" \
        'BEGIN { printf "%.1f %.2f %.2f\n", b / s / 1e6, c * 1e9 / b, d / 1000 * 1e9 / b }'
}

echo "== warm-up round (not counted)"
for w in up down; do run off $w >/dev/null; run auto $w >/dev/null; done

# ---- rounds ---------------------------------------------------------------------------

for r in $(seq "$RUNS"); do
    echo "== round $r/$RUNS"
    for w in up down; do
        if [ $(( r % 2 )) -eq 1 ]; then a=$(run off $w); b=$(run auto $w)
        else b=$(run auto $w); a=$(run off $w); fi
        set -- $a $b
        record ${w}_plain "$1"; record ${w}_tls "$4"; record ${w}_ratio "$(ratio "$4" "$1")"
        record ${w}_plain_ccpu "$2"; record ${w}_plain_dcpu "$3"
        record ${w}_tls_ccpu "$5"; record ${w}_tls_dcpu "$6"
        echo "run=$r case=$w plain_mbps=$1 tls_mbps=$4 ratio=$(ratio "$4" "$1")" \
            "cpu_s_per_gb plain(client,depots)=$2,$3 tls(client,depots)=$5,$6"
    done
    first=$([ $(( r % 2 )) -eq 1 ] && echo "" || echo --tls-first)
    s=$("$BT" smallops "$ADDR" "$PORT_A" --ops "$OPS" $first 2>>"$WORK/client.err") ||
        { echo "bench_tls: bench_tls smallops failed: $(tail -1 "$WORK/client.err")" >&2; exit 1; }
    echo "run=$r case=small4k ${s#op=smallops }"
    record small_plain "$(echo "$s" | kv plain_triples_per_s)"
    record small_tls "$(echo "$s" | kv tls_triples_per_s)"
    record small_ratio "$(echo "$s" | kv ratio)"
    record small_plain_us "$(echo "$s" | kv plain_p50_us)"
    record small_tls_us "$(echo "$s" | kv tls_p50_us)"
    record small_ratio_p50 "$(echo "$s" | kv ratio_p50)"
    h=$("$BT" handshake "$ADDR" "$PORT_A" --calls "$CALLS" 2>>"$WORK/client.err") ||
        { echo "bench_tls: bench_tls handshake failed: $(tail -1 "$WORK/client.err")" >&2; exit 1; }
    echo "run=$r case=handshake ${h#op=handshake }"
    for k in plain_us tls_resumed_us tls_full_us ctx_us full_minus_ctx_us cpu_plain_us \
        cpu_resumed_us cpu_full_us cpu_ctx_us; do
        record "hs_$k" "$(echo "$h" | kv "$k")"
    done
done

# ---- this CPU's own limit -------------------------------------------------------------

echo "== openssl speed, one core, 16 KiB blocks (a TLS record's size)"
for c in aes-128-gcm aes-256-gcm chacha20-poly1305; do
    v=$(nice openssl speed -elapsed -seconds 1 -bytes 16384 -evp "$c" 2>/dev/null |
        awk -v c="$c" 'tolower($1) == c { v = $2; sub(/k$/, "", v); printf "%.0f", v * 1000 / 1e6 }')
    echo "speed $c mbps=$v"
done
v=$(nice openssl speed -elapsed -seconds 1 -bytes 16384 -evp sha256 2>/dev/null |
    awk 'tolower($1) == "sha256" { v = $2; sub(/k$/, "", v); printf "%.0f", v * 1000 / 1e6 }')
echo "speed sha256 mbps=$v (what lors_download's verification hashes at)"

# ---- summary --------------------------------------------------------------------------

echo "== summary: medians of $RUNS rounds (MB = 10^6 bytes; ratio TLS/plain = median of per-round ratios, [ratio of medians])"
for w in up down; do
    p=$(med ${w}_plain); t=$(med ${w}_tls); q=$(med ${w}_ratio)
    name=$([ $w = up ] && echo "upload  " || echo "download")
    echo "$name $SIZE_ARG x4 depots  plain_mbps=$p tls_mbps=$t ratio=$q [$(ratio "$t" "$p")] target>=0.85 $(verdict "$q" 0.85)"
    echo "         cpu_s_per_gb client: plain=$(med ${w}_plain_ccpu) tls=$(med ${w}_tls_ccpu); depots: plain=$(med ${w}_plain_dcpu) tls=$(med ${w}_tls_dcpu)"
done
p=$(med small_plain); t=$(med small_tls); q=$(med small_ratio)
echo "small 4K alloc+store+load, warm pool  plain_triples_per_s=$p tls_triples_per_s=$t ratio=$q [$(ratio "$t" "$p")] target>=0.8 $(verdict "$q" 0.8)"
echo "         p50_us plain=$(med small_plain_us) tls=$(med small_tls_us); ratio of p50s (plain/tls) per round=$(med small_ratio_p50)"
echo "handshake (STATUS on a fresh connection, median us)  plain=$(med hs_plain_us) tls_resumed=$(med hs_tls_resumed_us) tls_full(new client)=$(med hs_tls_full_us) of which TLS context=$(med hs_ctx_us), full_minus_ctx=$(med hs_full_minus_ctx_us)"
echo "         client cpu_us per call: plain=$(med hs_cpu_plain_us) resumed=$(med hs_cpu_resumed_us) full=$(med hs_cpu_full_us) context=$(med hs_cpu_ctx_us)"
echo "kernel TLS: $(case $note in *user-space*) echo "no: $(echo "$note" | sed -n 's/.*\(user-space TLS ([^)]*)\).*/\1/p')" ;; *) echo yes ;; esac)"
