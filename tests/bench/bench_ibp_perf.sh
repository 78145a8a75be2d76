#!/bin/bash
# bench_ibp_perf.sh -- ACCRE's own benchmark client, ibp_perf (accre/lstore), against one lns
# depot and one ACCRE 1.4 depot in the same rounds: every figure it prints, the median of each
# side and the median of the per-round lns/ACCRE ratios (make bench-ibp-perf; docs/PERFORMANCE.md).
#
#   tests/bench/bench_ibp_perf.sh BUILD_DIR
#
#   LNS_INTEROP_PREFIX  where ACCRE is built (default /work/interop): accre/bin/{ibp_server,
#                       mkfs_resource,ibp_perf}; not built: SKIP (exit 77), docs/interop.md
#                       says how to build it
#   BENCH_RUNS          rounds (default 3, at least 3)
#   BENCH_PERF_ARGS     ibp_perf's counts after "nthreads timeout" (default below)
#   BENCH_PERF_MODES    which modes (default "plain network_chksum disk_chksum")
#   BENCH_LNS_ARGS      more ibp_depot flags, e.g. "--chksum-cache 0" (hash every read)
#
# Three modes, each run in every round against both depots, in alternating order: plain,
# -network_chksum MD5 64 and -disk_chksum MD5 64 (ACCRE's checksummed commands 22-32).  A
# figure one side did not print is "n/a" with why: for lns, the depot's answer to the
# checksummed command the mode needs ("lns: -25" while lns does not have them), else
# ibp_perf's exit status or error line.  Both depots run on 127.0.0.1 and are stopped by the
# EXIT trap.  ibp_perf's small random I/O phase now and then never ends (../shared/anchors/
# accre.md): each run is under a timeout, and what it printed before counts.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../interop/accre_conf.sh"

PREFIX=${LNS_INTEROP_PREFIX:-/work/interop}
ACCRE=$PREFIX/accre
for f in ibp_server mkfs_resource ibp_perf; do
    if [ ! -x "$ACCRE/bin/$f" ]; then
        echo "$BENCH_NAME: SKIP: $ACCRE/bin/$f is not built (ACCRE 1.4: make interop-build," \
             "docs/interop.md; LNS_INTEROP_PREFIX to look elsewhere)"
        exit 77
    fi
done
bench_need_built "$BIN/ibp_depot" "$BUILD/bench/bench_ibp"
bench_runs 3
export LD_LIBRARY_PATH=$ACCRE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# nthreads timeout proxy_createremove createremove rw_count rw_alloc_KB rw_block_KB read_mix
# smallio_count small_min_KB small_max_KB small_read_frac (accre.md's line, larger bulk files)
PERF_ARGS=${BENCH_PERF_ARGS:-8 30 1000 2000 8 16384 1024 0.5 5000 1 4 0.5}
RUN_TIMEOUT=120

bench_workdir
bench_describe_machine

# shellcheck disable=SC2086
start_depot lns 4096 ${BENCH_LNS_ARGS:-}
start_accre() {
    local dir=$WORK/accre port
    port=$("$BUILD/bench/bench_ibp" freeport)
    accre_conf "$dir" 127.0.0.1 "$port" "$ACCRE/bin/mkfs_resource" || {
        echo "$BENCH_NAME: mkfs_resource failed: $(tail -1 "$dir/mkfs.log")" >&2
        return 1
    }
    (cd "$dir" && exec "$ACCRE/bin/ibp_server" "$dir/ibp.cfg") >>"$dir/stderr" 2>&1 </dev/null &
    PIDS+=($!)
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && { PORT_accre=$port; return 0; }
        sleep 0.1
    done
    echo "$BENCH_NAME: the ACCRE depot did not listen" >&2
    return 1
}
start_accre
DEPOT_lns="127.0.0.1 $PORT_lns 0"
DEPOT_accre="127.0.0.1 $PORT_accre 1"
echo "ibp_perf: $ACCRE/bin/ibp_perf 1 HOST PORT RID $PERF_ARGS (timeout ${RUN_TIMEOUT}s a run)"
echo "depots: lns ibp_depot 127.0.0.1:$PORT_lns (RID 0), ACCRE ibp_server 127.0.0.1:$PORT_accre (RID 1)"

read -r -a MODES <<<"${BENCH_PERF_MODES:-plain network_chksum disk_chksum}"
for m in "${MODES[@]}"; do
    case $m in
    plain|network_chksum|disk_chksum) ;;
    *) echo "$BENCH_NAME: BENCH_PERF_MODES: '$m' is not plain, network_chksum or disk_chksum" >&2; exit 2 ;;
    esac
done
mode_flags() {
    case $1 in
    plain) ;;
    network_chksum) echo "-network_chksum MD5 64" ;;
    disk_chksum) echo "-disk_chksum MD5 64" ;;
    esac
}

# figures FILE: "name value" per figure ibp_perf printed, in its order.
figures() {
    awk '
    /^Proxy create :/        { print "proxy_create/s", $4 }
    /^Proxy remove :/        { print "proxy_remove/s", $4 }
    /^Create :/              { print "create/s", $3 }
    /^Remove :/              { print "remove/s", $3 }
    /^Creating allocations/  { print "bulk_create/s", $3 }
    /^Write:/                { print "write_MB/s", $2 }
    /^Read:/                 { print "read_MB/s", $2 }
    /^Random:/               { print "random_MB/s", $2 }
    /^Small Random Write:/   { print "small_write_MB/s", $4; print "small_write_ops/s", $(NF-1) }
    /^Small Random Read:/    { print "small_read_MB/s", $4; print "small_read_ops/s", $(NF-1) }
    /^Small Random R\/W:/    { print "small_rw_MB/s", $4; print "small_rw_ops/s", $(NF-1) }
    /^Removing allocations/  { print "bulk_remove/s", $3 }' "$1"
}
ALL_FIGURES="proxy_create/s proxy_remove/s create/s remove/s bulk_create/s write_MB/s read_MB/s
random_MB/s small_write_MB/s small_write_ops/s small_read_MB/s small_read_ops/s small_rw_MB/s
small_rw_ops/s bulk_remove/s"

# The depot's first answer to a request line of ACCRE's command N (29 checksummed ALLOCATE,
# 27 checksummed WRITE): "-25" while the depot does not have the command.
answer_to() {
    local port=$1 cmd=$2 line
    exec 3<>"/dev/tcp/127.0.0.1/$port" || return 0
    printf '1 %s 1 65536 0 2 1 3600 1024 10\n' "$cmd" >&3
    read -r -t 5 line <&3 || true
    exec 3<&-
    printf '%s' "${line%% *}"
}

# run ROUND MODE SIDE: ibp_perf once; its output in $WORK/out/ROUND.MODE.SIDE
mkdir -p "$WORK/out"
run_perf() {
    local f=$WORK/out/$1.$2.$3 dep rc=0
    dep=DEPOT_$3
    # shellcheck disable=SC2046,SC2086
    (timeout -k 5 "$RUN_TIMEOUT" "$ACCRE/bin/ibp_perf" $(mode_flags "$2") 1 ${!dep} $PERF_ARGS \
        >"$f" 2>&1 </dev/null; exit $?) 2>/dev/null || rc=$? # no "Segmentation fault" line from bash
    echo "$rc" >"$f.rc"
    figures "$f" >"$f.fig"
}

for ((r = 1; r <= RUNS; r++)); do
    for m in "${MODES[@]}"; do
        if ((r % 2)); then order="lns accre"; else order="accre lns"; fi
        for s in $order; do run_perf "$r" "$m" "$s"; done
        echo "round $r $m: lns $(wc -l <"$WORK/out/$r.$m.lns.fig") figures (exit $(cat "$WORK/out/$r.$m.lns.rc")), ACCRE $(wc -l <"$WORK/out/$r.$m.accre.fig") figures (exit $(cat "$WORK/out/$r.$m.accre.rc"))"
    done
done

# why_na MODE SIDE: why SIDE printed no figure in MODE (from the first round's run).
why_na() {
    local f=$WORK/out/1.$1.$2 rc e a
    rc=$(cat "$f.rc")
    if [ "$2" = lns ] && [ "$1" != plain ]; then
        a=$(answer_to "$PORT_lns" "$([ "$1" = disk_chksum ] && echo 29 || echo 27)")
        [ "$a" = -25 ] && { echo "lns: -25"; return; }
    fi
    e=$(grep -o -m1 'ibp_errno=-[0-9]*' "$f" || true)
    case $rc in
    124|137) echo "$2: timed out${e:+, $e}" ;;
    0) echo "$2: not printed${e:+, $e}" ;;
    *) echo "$2: ibp_perf exit $rc${e:+, $e}" ;;
    esac
}

echo
echo "Run $(date -u +%Y-%m-%d): $RUNS rounds; medians; ratio = median of the per-round lns/ACCRE ratios."
echo
echo "| mode | figure | lns | ACCRE | lns / ACCRE |"
echo "|---|---|---|---|---|"
for m in "${MODES[@]}"; do
    for fig in $ALL_FIGURES; do
        k=$m.${fig//\//_} # a file name
        : >"$WORK/res/$k.lns"; : >"$WORK/res/$k.accre"; : >"$WORK/res/$k.ratio"
        for ((r = 1; r <= RUNS; r++)); do
            a=$(awk -v k="$fig" '$1 == k { print $2; exit }' "$WORK/out/$r.$m.lns.fig")
            b=$(awk -v k="$fig" '$1 == k { print $2; exit }' "$WORK/out/$r.$m.accre.fig")
            [ -z "$a" ] || echo "$a" >>"$WORK/res/$k.lns"
            [ -z "$b" ] || echo "$b" >>"$WORK/res/$k.accre"
            if [ -n "$a" ] && [ -n "$b" ]; then echo "$(ratio "$a" "$b")" >>"$WORK/res/$k.ratio"; fi
        done
        if [ -s "$WORK/res/$k.lns" ]; then la=$(med "$k.lns" | awk '{ printf "%.1f", $1 }'); else la="n/a ($(why_na "$m" lns))"; fi
        if [ -s "$WORK/res/$k.accre" ]; then ac=$(med "$k.accre" | awk '{ printf "%.1f", $1 }'); else ac="n/a ($(why_na "$m" accre))"; fi
        if [ -s "$WORK/res/$k.ratio" ]; then ra=$(med "$k.ratio" | awk '{ printf "%.2f", $1 }'); else ra="-"; fi
        # a figure neither side printed in this mode (the phase was skipped) is left out
        [ "${la:0:3}" = n/a ] && [ "${ac:0:3}" = n/a ] && continue
        echo "| $m | $fig | $la | $ac | $ra |"
    done
done
