#!/bin/bash
# bench_orig.sh -- lns's lors_download and lors_upload against the original LoRS 1.3.1 tools
# (issue 39): the same file, the same four lns depots, the same run, interleaved rounds.
#
#   tests/bench/bench_orig.sh BUILD_DIR           (make bench-orig runs it on build/release)
#
# Environment: BENCH_RUNS (rounds, default 5, at least 3), BENCH_SIZE (default 256M),
# LORS131 (the original tools' prefix, default /work/interop/lors131: built by
# ../shared/anchors/build-lors131.sh, make interop-build; exit 2 when it is missing),
# BENCH_HOSTS (four loopback addresses, one per depot, default 127.0.0.41 .. 44: the original
# tools tell depots apart by host name only, lors131.md), TMPDIR (a real disk, default /tmp).
#
# Four lns ibp_depot depots, each on its own loopback address (TLS and plain IBP on one port,
# their defaults; soft storage as large as hard: the original's depot check asks for the
# file's size in both).  The original tools get HOME=$WORK/home and an xndrc naming the four
# depots (E2E_ORDER none, as tests/interop/interop.sh runs them); lns's an empty rc file.
#
# Downloads, one layout for both (-c 1 -F 4: one copy in four fragments, one on each depot):
# lns's exNode (uploaded by lns lors_upload, BLAKE3 per 1 MiB, the default) and the original's
# (its lors_upload -n -M SIZE+64M: with its default 48 MiB buffer every fragment larger than
# that lands on the first depot) are uploaded once.  Each round then runs, to /dev/null: lns
# lors_download of lns's exNode with all defaults (every byte verified, TLS), the same with
# --tls off (verified, plaintext), the original lors_download (defaults; verifies nothing,
# plaintext) of its own exNode, and of lns's.  Uploads: lns
# lors_upload with its defaults (BLAKE3 checksums, TLS) -c 1 -F 4 and -c 2 -F 4 against the
# original's lors_upload -n (no e2e, so no checksum; plaintext) with the same -c and -F; each
# upload's allocations are freed (lors_trim -d, untimed) before the next.  Shown beside them,
# not targets: lns -c 1 --tls off, and the original's uploads with -M SIZE+64M (spread over the
# depots, as its defaults do not at this size).
#
# The machine's limit for the same bytes, measured in the same rounds: cat of the file to
# /dev/null (the page cache alone), and socat of the file through one loopback TCP connection to
# /dev/null (a download's work less every protocol) and to a file on the same disk (an upload's,
# one copy).  Each figure is also shown as a fraction of its limit.
#
# Every client runs under `bench_lors_dl time` (wall time of the whole process: start,
# connections, exit); rates are file bytes over that time (MB = 10^6 bytes).  The cases of a
# round run in an order rotated by one each round; each ratio is computed per round and the
# median of the per-round ratios is reported.  Correctness is checked once, untimed: each
# download exNode read by each tool gives the file's bytes, and lns reads back each upload.
# The trap stops every process this script started and removes its directory, also on failure.
set -euo pipefail
shopt -s inherit_errexit # a failed measurement in $(...) ends the run

. "$(dirname "$0")/lib.sh"
bench_runs 5
SIZE_ARG=${BENCH_SIZE:-256M}
LORS131=${LORS131:-/work/interop/lors131}
read -r -a HOSTS <<<"${BENCH_HOSTS:-127.0.0.41 127.0.0.42 127.0.0.43 127.0.0.44}"
DRIVER=$BUILD/bench/bench_lors_dl
bench_need_built "$BIN/ibp_depot" "$BIN/lors_upload" "$BIN/lors_download" "$BIN/lors_trim" \
    "$DRIVER" "$BUILD/bench/bench_ibp"
bench_need_tools "apt-get install socat" socat
for t in lors_upload lors_download; do
    [ -x "$LORS131/bin/$t" ] || {
        echo "bench_orig: $LORS131/bin/$t: not built (LORS131= the original LoRS 1.3.1 prefix;" \
            "build it with ../shared/anchors/build-lors131.sh or make interop-build)" >&2
        exit 2
    }
done
[ "${#HOSTS[@]}" -eq 4 ] || { echo "bench_orig: BENCH_HOSTS needs four addresses" >&2; exit 2; }
SIZE=$(bytes_of "$SIZE_ARG")
ORIG=$LORS131/bin

bench_workdir
: >"$WORK/empty.rc"
export LNS_RC=$WORK/empty.rc # no ~/.xndrc settings for lns
mkdir -p "$WORK/home"
export HOME=$WORK/home # the original reads ~/.xndrc and falls back to utk.edu without one

echo "== bench_orig: machine and command"
echo "command: BENCH_RUNS=$RUNS BENCH_SIZE=$SIZE_ARG LORS131=$LORS131" \
    "BENCH_HOSTS='${HOSTS[*]}' $0 $*"
bench_describe_machine
echo "ours: $("$BIN/lors_download" --version 2>&1 | head -1); original: $LORS131" \
    "($(cat "$LORS131/.lors131-built" 2>/dev/null | cut -c1-12 || echo '?'))"

# ---- one measurement each -------------------------------------------------------------

# timed CMD...: the wall seconds of the whole process; fails (with its last stderr line) if it does.
timed() {
    local out
    out=$("$DRIVER" time "$@" 2>>"$WORK/client.err" </dev/null) ||
        { echo "bench_orig: $* failed: $(tail -1 "$WORK/client.err")" >&2; return 1; }
    echo "$out" | kv seconds
}
now_ns() { date +%s%N; }

# The rate of each case, MB/s of the file's bytes.
rate() { local s; s=$(timed "$@"); mbps "$SIZE" "$s"; } # rate CMD...: MB/s
dl_lns() { rate "$BIN/lors_download" -o /dev/null "$WORK/lns.xnd"; }
dl_lns_plain() { rate "$BIN/lors_download" --tls off -o /dev/null "$WORK/lns.xnd"; }
dl_orig() { rate "$ORIG/lors_download" "$WORK/orig.xnd" -o /dev/null; }
dl_orig_lnsx() { rate "$ORIG/lors_download" "$WORK/lns.xnd" -o /dev/null; }

# free XND: free the allocations of an upload (untimed) and remove its exNode.
free_xnd() {
    "$BIN/lors_trim" --tls off -d --force $TRIM_DEPOTS "$1" >/dev/null 2>>"$WORK/client.err" ||
        { echo "bench_orig: lors_trim -d of $1: $(tail -1 "$WORK/client.err")" >&2; return 1; }
    rm -f "$1"
}
# up_lns COPIES [FLAGS...] / up_orig COPIES [FLAGS...]: upload the file with -c COPIES -F 4,
# free it; MB/s.
up_lns() {
    local s c=$1
    shift
    rm -f "$WORK/up_lns.xnd"
    s=$(timed "$BIN/lors_upload" --depot-list "$LIST" -c "$c" -F 4 -d 1h "$@" \
        -o "$WORK/up_lns.xnd" "$WORK/data.bin")
    [ -n "${CHECK_UP:-}" ] && check_read "$WORK/up_lns.xnd" "lns lors_upload -c $c $*"
    free_xnd "$WORK/up_lns.xnd"
    mbps "$SIZE" "$s"
}
up_orig() {
    local s c=$1
    shift
    rm -f "$WORK/up_orig.xnd"
    s=$(timed "$ORIG/lors_upload" "$WORK/data.bin" --xndrc="$WORK/xndrc" --depot-list -n \
        -c "$c" -F 4 "$@" -o "$WORK/up_orig.xnd")
    [ -s "$WORK/up_orig.xnd" ] ||
        { echo "bench_orig: the original's upload wrote no exNode" >&2; return 1; }
    [ -n "${CHECK_UP:-}" ] && check_read "$WORK/up_orig.xnd" "original lors_upload -c $c $*"
    free_xnd "$WORK/up_orig.xnd"
    mbps "$SIZE" "$s"
}
up_lns1() { up_lns 1; }
up_lns2() { up_lns 2; }
up_orig1() { up_orig 1; }
up_orig2() { up_orig 2; }
# Not targets, to tell the costs apart: lns without TLS; the original with a buffer that holds
# the whole file (ORIG_M), the only way its fragments spread over the depots at this size.
up_lns1_plain() { up_lns 1 --tls off; }
up_orig1_spread() { up_orig 1 -M "$ORIG_M"; }
up_orig2_spread() { up_orig 2 -M "$ORIG_M"; }

# The machine's limits: the page cache, and one loopback TCP connection (socat, 1 MiB reads and
# writes) to /dev/null or to a file on $WORK's disk, timed from the sender's start to the
# receiver's exit.
# shellcheck disable=SC2016
lim_cat() { rate sh -c 'cat "$1" >/dev/null' sh "$WORK/data.bin"; }
socat_to() { # OPEN_ADDRESS
    local port hex rpid t0 t1 i
    port=$("$BUILD/bench/bench_ibp" freeport)
    hex=$(printf '%04X' "$port")
    timeout 300 socat -b 1048576 -u "TCP-LISTEN:$port,reuseaddr,bind=127.0.0.1" "$1" &
    rpid=$!
    PIDS+=("$rpid")
    for i in $(seq 200); do
        grep -q "^ *[0-9]*: 0100007F:$hex 00000000:0000 0A" /proc/net/tcp 2>/dev/null && break
        sleep 0.02
    done
    t0=$(now_ns)
    timeout 300 socat -b 1048576 -u "FILE:$WORK/data.bin" "TCP:127.0.0.1:$port"
    wait "$rpid"
    t1=$(now_ns)
    mbps "$SIZE" "$(( t1 - t0 ))e-9"
}
lim_tcp() { socat_to OPEN:/dev/null; }
lim_tcpfile() {
    local r
    r=$(socat_to "OPEN:$WORK/socat.out,creat,trunc")
    [ "$(stat -c %s "$WORK/socat.out")" = "$SIZE" ] ||
        { echo "bench_orig: socat wrote a short file" >&2; return 1; }
    rm -f "$WORK/socat.out"
    echo "$r"
}

# check_read XND WHAT: lns lors_download of XND gives the file's bytes (untimed).
check_read() {
    "$BIN/lors_download" --tls off -o "$WORK/check.bin" "$1" >/dev/null 2>>"$WORK/client.err" &&
        cmp -s "$WORK/check.bin" "$WORK/data.bin" ||
        { echo "bench_orig: $2: its exNode does not read back as the file" >&2; exit 1; }
    rm -f "$WORK/check.bin"
}

# ---- setup ----------------------------------------------------------------------------

echo "== setup"
head -c "$SIZE" /dev/urandom >"$WORK/data.bin"
# Room on each depot for the two download exNodes and one upload of two copies, twice over
# (the original may put two fragments on one depot).
ROOM=$(( SIZE * 4 / 1048576 + 256 ))
# The original's upload buffer (-M, default 48 MiB) is filled and stored one at a time, and each
# fill starts again at the first depot of its list: with a fragment larger than the buffer, every
# fragment lands on one depot.  The download exNode orig.xnd gets a buffer for the whole file.
ORIG_M=$(( SIZE / 1048576 + 64 ))M
LIST="" TRIM_DEPOTS=""
{
    echo "LBONE_SERVER 127.0.0.1 1"
    echo "E2E_ORDER none"
    echo "DURATION_DAYS 1"
    echo "STORAGE_TYPE HARD"
} >"$WORK/xndrc"
i=0
for d in A B C D; do
    DEPOT_ADDR=${HOSTS[$i]} DEPOT_SOFT_MB=$ROOM start_depot $d "$ROOM"
    p=PORT_$d
    LIST+="${LIST:+,}${HOSTS[$i]}:${!p}"
    TRIM_DEPOTS+=" --depot ${HOSTS[$i]}:${!p}"
    echo "DEPOT ${HOSTS[$i]} ${!p}" >>"$WORK/xndrc"
    i=$(( i + 1 ))
done
echo "depots: $LIST (lns ibp_depot, TLS and plain IBP on each port; hard=soft=${ROOM} MiB)"
"$BIN/lors_upload" --depot-list "$LIST" -c 1 -F 4 -d 1h -o "$WORK/lns.xnd" "$WORK/data.bin" \
    >/dev/null 2>>"$WORK/client.err" || { echo "bench_orig: lns lors_upload failed" >&2; exit 1; }
"$ORIG/lors_upload" "$WORK/data.bin" --xndrc="$WORK/xndrc" --depot-list -n -c 1 -F 4 \
    -M "$ORIG_M" -o "$WORK/orig.xnd" >"$WORK/orig_upload.out" 2>>"$WORK/client.err" </dev/null ||
    { echo "bench_orig: the original lors_upload: $(tail -1 "$WORK/client.err")" >&2; exit 1; }
echo "lns.xnd: lns lors_upload -c 1 -F 4 (BLAKE3 per 1 MiB);" \
    "orig.xnd: original lors_upload -n -c 1 -F 4 -M $ORIG_M"
# on_host XND HOST: how many mappings of XND are on HOST (read capabilities naming it)
on_host() { grep -o "ibp://$2:[0-9]*/[^<\"]*READ" "$1" | wc -l; }
echo "mappings per depot (lns.xnd / orig.xnd):"
for h in "${HOSTS[@]}"; do
    echo "  $h: $(on_host "$WORK/lns.xnd" "$h") / $(on_host "$WORK/orig.xnd" "$h")"
done
# Correctness once (untimed): each exNode read by each tool gives the file's bytes.
check_read "$WORK/lns.xnd" "lns.xnd"
check_read "$WORK/orig.xnd" "orig.xnd (read by lns)"
ORIG_READS_LNS=yes
for x in orig lns; do
    rm -f "$WORK/check.bin"
    if "$ORIG/lors_download" "$WORK/$x.xnd" -o "$WORK/check.bin" >/dev/null 2>>"$WORK/client.err" \
        </dev/null && cmp -s "$WORK/check.bin" "$WORK/data.bin"; then
        :
    elif [ $x = orig ]; then
        echo "bench_orig: the original lors_download does not read its own exNode back:" \
            "$(tail -1 "$WORK/client.err")" >&2
        exit 1
    else
        ORIG_READS_LNS="no: $(tail -1 "$WORK/client.err")"
    fi
done
rm -f "$WORK/check.bin"
echo "the original lors_download reads lns.xnd: $ORIG_READS_LNS"
sync
echo "page cache: the file and the depots' copies written and synced; one warm-up round follows"

DL_CASES=(dl_lns dl_lns_plain dl_orig)
[ "$ORIG_READS_LNS" = yes ] && DL_CASES+=(dl_orig_lnsx)
UP_CASES=(up_lns1 up_orig1 up_lns2 up_orig2 up_lns1_plain up_orig1_spread up_orig2_spread)
LIM_CASES=(lim_cat lim_tcp lim_tcpfile)

echo "== warm-up round (not counted; lns reads back each upload)"
for c in "${DL_CASES[@]}" "${LIM_CASES[@]}"; do $c >/dev/null; done
CHECK_UP=1
for c in "${UP_CASES[@]}"; do $c >/dev/null; done
CHECK_UP=

# ---- rounds ---------------------------------------------------------------------------

# run_rotated ROUND CASE...: each case once, starting at the (ROUND-1 mod N)-th; records its
# rate under its name and prints it.
run_rotated() {
    local r=$1 n i c v line=""
    shift
    n=$#
    local cases=("$@")
    for (( i = 0; i < n; i++ )); do
        c=${cases[$(( (i + r - 1) % n ))]}
        v=$($c)
        record "$c" "$v"
        line+=" $c=$v"
    done
    echo "run=$r$line"
}
# per_round_ratio NAME A B: the ratio of the last recorded A to the last recorded B.
per_round_ratio() {
    record "$1" "$(ratio "$(tail -1 "$WORK/res/$2")" "$(tail -1 "$WORK/res/$3")")"
}

for r in $(seq "$RUNS"); do
    echo "== round $r/$RUNS (load $(cut -d' ' -f1-3 /proc/loadavg))"
    run_rotated "$r" "${LIM_CASES[@]}"
    run_rotated "$r" "${DL_CASES[@]}"
    run_rotated "$r" "${UP_CASES[@]}"
    per_round_ratio r_dl_default dl_lns dl_orig
    per_round_ratio r_dl_plain dl_lns_plain dl_orig
    if [ "$ORIG_READS_LNS" = yes ]; then
        per_round_ratio r_dl_default_lnsx dl_lns dl_orig_lnsx
        per_round_ratio r_dl_plain_lnsx dl_lns_plain dl_orig_lnsx
    fi
    per_round_ratio r_up1 up_lns1 up_orig1
    per_round_ratio r_up2 up_lns2 up_orig2
    per_round_ratio r_up1_spread up_lns1 up_orig1_spread
    per_round_ratio r_up1_plain up_lns1_plain up_orig1
    per_round_ratio r_up2_spread up_lns2 up_orig2_spread
done

# ---- summary --------------------------------------------------------------------------

frac() { ratio "$(med "$1")" "$(med "$2")"; }
line() { # CASE LIMIT TEXT: the median MB/s of CASE, its fraction of the median LIMIT
    printf '  %-44s %8s MB/s  %5s of %s\n' "$3" "$(med "$1")" "$(frac "$1" "$2")" "$2"
}
echo "== summary: medians of $RUNS rounds, $SIZE_ARG, 4 depots on loopback; MB = 10^6 bytes;" \
    "ratio = median of per-round ratios; load now $(cut -d' ' -f1-3 /proc/loadavg)"
echo "limits:"
printf '  %-44s %8s MB/s\n' "cat FILE >/dev/null (lim_cat)" "$(med lim_cat)"
printf '  %-44s %8s MB/s\n' "socat FILE -> TCP -> /dev/null (lim_tcp)" "$(med lim_tcp)"
printf '  %-44s %8s MB/s\n' "socat FILE -> TCP -> FILE (lim_tcpfile)" "$(med lim_tcpfile)"
echo "downloads (to /dev/null, -c 1 -F 4 exNodes):"
line dl_lns lim_tcp "lns lors_download (verified, TLS)"
line dl_lns_plain lim_tcp "lns lors_download --tls off (verified)"
line dl_orig lim_tcp "original lors_download of its exNode"
[ "$ORIG_READS_LNS" = yes ] && line dl_orig_lnsx lim_tcp "original lors_download of lns's exNode"
echo "uploads (-F 4; lns: BLAKE3, TLS; original: -n, plaintext):"
line up_lns1 lim_tcpfile "lns lors_upload -c 1"
line up_orig1 lim_tcpfile "original lors_upload -n -c 1"
line up_lns2 lim_tcpfile "lns lors_upload -c 2"
line up_orig2 lim_tcpfile "original lors_upload -n -c 2"
echo "  not targets:"
line up_lns1_plain lim_tcpfile "lns lors_upload -c 1 --tls off"
line up_orig1_spread lim_tcpfile "original lors_upload -n -c 1 -M $ORIG_M"
line up_orig2_spread lim_tcpfile "original lors_upload -n -c 2 -M $ORIG_M"
echo "ratios (lns / original):"
x=$(med r_dl_plain)
echo "  download, verified, --tls off / original     $x  target>=1.3 $(verdict "$x" 1.3)"
x=$(med r_dl_default)
echo "  download, lns defaults (verified, TLS) / orig $x  target>=1.1 $(verdict "$x" 1.1)"
if [ "$ORIG_READS_LNS" = yes ]; then
    echo "  (against the original reading lns's exNode: --tls off $(med r_dl_plain_lnsx)," \
        "defaults $(med r_dl_default_lnsx))"
fi
x=$(med r_up1)
echo "  upload -c 1, verified / original unverified  $x  target>=1.3 $(verdict "$x" 1.3)"
x=$(med r_up2)
echo "  upload -c 2, verified / original unverified  $x  target>=1.3 $(verdict "$x" 1.3)"
echo "  (against the original with -M $ORIG_M: -c 1 $(med r_up1_spread)," \
    "-c 2 $(med r_up2_spread); lns -c 1 --tls off against the original: $(med r_up1_plain))"
