#!/bin/bash
# bench_ec.sh -- erasure coding (issue 14): ISA-L's raw rates, and lns's upload and download
# with --ec against a replicated upload that stores the same number of bytes, on the same
# loopback depots, in the same run; a download with M pieces lost against a healthy one; the
# storage per byte of file of each layout.
#
#   tests/bench/bench_ec.sh BUILD_DIR          (make bench-ec runs it on build/release)
#
# Environment: BENCH_RUNS (rounds, default 5, at least 3), BENCH_SIZE (the erasure-coded file,
# default 256M), BENCH_LAYOUTS (default "4+2 6+3 10+4"), BENCH_CHECKSUM (lors_upload -k for
# both sides, default sha256; "none" shows the engines' cost without the digests), TMPDIR
# (where the depots keep their data; a real disk, not tmpfs, default /tmp), BENCH_LINK (e.g.
# 1gbit: run everything inside a network namespace of its own whose loopback is capped by a
# tbf at that rate, one link shared by every byte both ways, so the bytes moved decide and not
# the CPU; needs root and tc, as the WAN testbed; default unset: plain loopback).
#
# For a layout K+M on K+M depots: the erasure-coded file has F bytes and stores F(K+M)/K; the
# replicated one (-c 2, the alternative a user would pick) has F(K+M)/(2K) bytes, so it stores
# the same number of bytes on the same depots.  Upload rates are stored bytes per second (the
# work both do for the depots), download rates file bytes per second; everything runs under
# `bench_lors_dl time` (the whole process: start, connections, exit), output to /dev/null,
# SHA-256 verification on (the default) on both sides.  The degraded download reads an exNode
# whose data columns 0..M-1 point at a dead depot (127.0.0.1:1, connection refused), digests
# kept, so every stripe is decoded from parity and checked as after a real loss.  Each
# ratio is computed per round; the medians of the per-round ratios are what the targets judge:
# upload and download cost at most 15% (ratio >= 0.85), degraded >= 0.8 of healthy.
set -euo pipefail

# BENCH_LINK: the same script again inside a namespace whose loopback is the capped link.
if [ -n "${BENCH_LINK:-}" ] && [ -z "${BENCH_EC_NS:-}" ]; then
    ns=lnsbec$$
    ip netns add "$ns" || { echo "bench_ec: BENCH_LINK needs ip netns (root)" >&2; exit 2; }
    trap 'ip netns delete "$ns" 2>/dev/null' EXIT
    # tbf's bucket must hold a loopback packet (64 KiB) and 4 ms of traffic
    tbf=$(awk -v r="$BENCH_LINK" 'BEGIN { v = r + 0; if (r ~ /gbit$/) v *= 1000;
        else if (r ~ /kbit$/) v /= 1000; b = v * 1e6 / 8 * 0.004; if (b < 262144) b = 262144;
        printf "rate %gmbit burst %d latency 100ms", v, b }')
    ip netns exec "$ns" ip link set lo up
    # shellcheck disable=SC2086 # tbf holds several words
    ip netns exec "$ns" tc qdisc add dev lo root tbf $tbf ||
        { echo "bench_ec: tc tbf on the namespace's loopback failed" >&2; exit 2; }
    echo "== bench_ec: inside namespace $ns, loopback capped: tbf $tbf"
    BENCH_EC_NS=$ns ip netns exec "$ns" "$0" "$@"
    exit
fi

. "$(dirname "$0")/lib.sh"
bench_runs 5
SIZE_ARG=${BENCH_SIZE:-256M}
LAYOUTS=${BENCH_LAYOUTS:-4+2 6+3 10+4}
CHECKSUM=${BENCH_CHECKSUM:-sha256}
DRIVER=$BUILD/bench/bench_lors_dl
EC=$BUILD/bench/bench_ec
bench_need_built "$BIN/ibp_depot" "$BIN/lors_upload" "$BIN/lors_download" "$DRIVER" "$EC"
SIZE=$(bytes_of "$SIZE_ARG")

bench_workdir
: >"$WORK/empty.rc"
export LNS_RC=$WORK/empty.rc LNS_NO_REPORT=1

echo "== bench_ec: machine and command"
echo "command: BENCH_RUNS=$RUNS BENCH_SIZE=$SIZE_ARG BENCH_LAYOUTS='$LAYOUTS' BENCH_CHECKSUM=$CHECKSUM${BENCH_LINK:+ BENCH_LINK=$BENCH_LINK} $0 $*"
bench_describe_machine

echo "== ISA-L raw rates (one core, from memory, 1 MiB pieces; MB/s of file data)"
"$EC" codec -s 256M | tee "$WORK/codec"

# the most depots a layout needs, each with room for a round's two files
MAXN=0
for l in $LAYOUTS; do n=$(( ${l%+*} + ${l#*+} )); [ "$n" -gt "$MAXN" ] && MAXN=$n; done
ROOM=$(( SIZE * 3 / 1048576 / 2 + 64 ))
for i in $(seq "$MAXN"); do start_depot "d$i" "$ROOM"; done
depots() { # the first $1 depots
    local i list=""
    for i in $(seq "$1"); do v=PORT_d$i; list="$list${list:+,}127.0.0.1:${!v}"; done
    echo "$list"
}

head -c "$SIZE" /dev/urandom >"$WORK/ec.bin"

timed() { # CMD... -> "seconds cpu_s" (cpu: the client's user + system)
    local out
    out=$("$DRIVER" time "$@" 2>>"$WORK/client.err") ||
        { echo "bench_ec: $1 failed: $(tail -1 "$WORK/client.err")" >&2; return 1; }
    echo "$(echo "$out" | kv seconds) $(echo "$out" | kv cpu_s)"
}
# client CPU ms per GB (10^9) stored: $1 cpu seconds, $2 bytes
cpu_gb() { awk -v c="$1" -v b="$2" 'BEGIN { printf "%.0f", c * 1000 * 1e9 / b }'; }

printf '\n%-6s %5s %9s %9s %7s %9s %9s %7s %9s %7s %8s %8s\n' layout round "ec_up" "rep_up" \
    ratio "ec_down" "rep_down" ratio "degraded" ratio "ec_B/B" "rep_B/B"
echo "       (upload: MB/s of bytes stored; download: MB/s of file bytes)"
for l in $LAYOUTS; do
    k=${l%+*}; m=${l#*+}; n=$(( k + m ))
    L=$(depots "$n")
    RSIZE=$(( SIZE * n / (2 * k) ))
    head -c "$RSIZE" /dev/urandom >"$WORK/rep.bin"
    cat "$WORK/ec.bin" "$WORK/rep.bin" >/dev/null # warm the page cache
    : >"$WORK/res/up.$l"; : >"$WORK/res/down.$l"; : >"$WORK/res/deg.$l"
    for r in $(seq "$RUNS"); do
        up=(--no-rc -q --force --depot-list "$L" -d 1h -k "$CHECKSUM")
        # interleave the sides: erasure coding first in odd rounds
        if [ $(( r % 2 )) = 1 ]; then
            te=$(timed "$BIN/lors_upload" "${up[@]}" --ec "$l" -o "$WORK/ec.xnd" "$WORK/ec.bin")
            tr=$(timed "$BIN/lors_upload" "${up[@]}" -c 2 -o "$WORK/rep.xnd" "$WORK/rep.bin")
        else
            tr=$(timed "$BIN/lors_upload" "${up[@]}" -c 2 -o "$WORK/rep.xnd" "$WORK/rep.bin")
            te=$(timed "$BIN/lors_upload" "${up[@]}" --ec "$l" -o "$WORK/ec.xnd" "$WORK/ec.bin")
        fi
        es=$("$EC" storage "$WORK/ec.xnd"); rs=$("$EC" storage "$WORK/rep.xnd")
        eb=$(echo "$es" | kv allocated); rb=$(echo "$rs" | kv allocated)
        record "ecc.$l" "$(cpu_gb "${te#* }" "$eb")"; record "repc.$l" "$(cpu_gb "${tr#* }" "$rb")"
        te=${te% *}; tr=${tr% *}
        ecu=$(mbps "$eb" "$te"); repu=$(mbps "$rb" "$tr")
        "$EC" drop "$WORK/ec.xnd" "$m" "$WORK/deg.xnd"
        dl=(--no-rc --quiet -o /dev/null)
        if [ $(( r % 2 )) = 1 ]; then
            de=$(timed "$BIN/lors_download" "${dl[@]}" "$WORK/ec.xnd")
            dr=$(timed "$BIN/lors_download" "${dl[@]}" "$WORK/rep.xnd")
            dg=$(timed "$BIN/lors_download" "${dl[@]}" "$WORK/deg.xnd")
        else
            dg=$(timed "$BIN/lors_download" "${dl[@]}" "$WORK/deg.xnd")
            dr=$(timed "$BIN/lors_download" "${dl[@]}" "$WORK/rep.xnd")
            de=$(timed "$BIN/lors_download" "${dl[@]}" "$WORK/ec.xnd")
        fi
        de=${de% *}; dr=${dr% *}; dg=${dg% *}
        ecd=$(mbps "$SIZE" "$de"); repd=$(mbps "$RSIZE" "$dr"); deg=$(mbps "$SIZE" "$dg")
        ru=$(ratio "$ecu" "$repu"); rd=$(ratio "$ecd" "$repd"); rg=$(ratio "$deg" "$ecd")
        record "up.$l" "$ru"; record "down.$l" "$rd"; record "deg.$l" "$rg"
        record "ecu.$l" "$ecu"; record "repu.$l" "$repu"; record "ecd.$l" "$ecd"
        record "repd.$l" "$repd"; record "dg.$l" "$deg"
        printf '%-6s %5s %9s %9s %7s %9s %9s %7s %9s %7s %8s %8s\n' "$l" "$r" "$ecu" "$repu" \
            "$ru" "$ecd" "$repd" "$rd" "$deg" "$rg" "$(echo "$es" | kv per_byte)" \
            "$(echo "$rs" | kv per_byte)"
        "$EC" free "$WORK/ec.xnd"; "$EC" free "$WORK/rep.xnd"
    done
done

echo
echo "== medians of $RUNS rounds (ratios: median of the per-round ratios)"
printf '%-6s %9s %9s %8s %9s %9s %8s %9s %8s  %s\n' layout ec_up rep_up "up x" ec_down \
    rep_down "down x" degraded "deg x" "targets (up >= 0.85, down >= 0.85, degraded >= 0.8)"
for l in $LAYOUTS; do
    printf '%-6s %9s %9s %8s %9s %9s %8s %9s %8s  %s / %s / %s\n' "$l" "$(med "ecu.$l")" \
        "$(med "repu.$l")" "$(med "up.$l")" "$(med "ecd.$l")" "$(med "repd.$l")" \
        "$(med "down.$l")" "$(med "dg.$l")" "$(med "deg.$l")" \
        "$(verdict "$(med "up.$l")" 0.85)" "$(verdict "$(med "down.$l")" 0.85)" \
        "$(verdict "$(med "deg.$l")" 0.8)"
done
echo
echo "== upload client CPU (user + system) per GB stored, medians: where the loopback time goes"
for l in $LAYOUTS; do
    printf '%-6s erasure coded %5s ms/GB   copies %5s ms/GB\n' "$l" "$(med "ecc.$l")" "$(med "repc.$l")"
done
