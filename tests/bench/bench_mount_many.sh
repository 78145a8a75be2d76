#!/bin/bash
# bench_mount_many.sh -- a directory of many exNodes through lors_mount (issue 36): `ls -l`
# of BENCH_FILES (100000) exNodes, against the target "listed in under 2 s, memory bounded".
#
#   tests/bench/bench_mount_many.sh BUILD_DIR     (make bench-mount runs it on build/release)
#
# One real ibp_depot, one tiny file uploaded by lors_upload, and its exNode copied byte for
# byte to NAME00000.xnd ... in $WORK/x.  Each round mounts $WORK/x afresh with lors_mount
# (in the foreground, so its pid is known), times `ls -l MOUNT | wc -l` on the fresh mount
# (cold: the kernel knows no name, lors_mount reads every exNode) and at once again (warm:
# the kernel's dentries kept, the attributes asked again), reads lors_mount's peak RSS
# (VmHWM), and unmounts.  The same `ls -l` over $WORK/x on the local disk (its inodes in the
# kernel's cache) is the machine's own limit: ratio = mount / local, per round.  Medians of
# rounds.  Then the same rounds over BENCH_SMALL (10000) of them (hard links in $WORK/s):
# memory is bounded when the peak RSS at BENCH_FILES is not twice that at BENCH_SMALL; the
# bytes it grows by per exNode are printed either way.
#
# Environment: BENCH_RUNS (rounds, default 3, at least 3), BENCH_FILES, BENCH_SMALL, TMPDIR
# (where the exNodes and the depot's data go; default /tmp).  Needs /dev/fuse and
# fusermount3 (exit 2 without them).
set -euo pipefail

. "$(dirname "$0")/lib.sh"
bench_runs 3
FILES=${BENCH_FILES:-100000}
SMALL=${BENCH_SMALL:-10000}
[ "$SMALL" -lt "$FILES" ] ||
    { echo "bench_mount_many: BENCH_SMALL must be below BENCH_FILES" >&2; exit 2; }
bench_need_built "$BIN/ibp_depot" "$BIN/lors_upload" "$BIN/lors_mount"
bench_need_tools "scripts/install-deps.sh" fusermount3 perl
{ [ -w /dev/fuse ] && command -v fusermount3 >/dev/null; } ||
    { echo "bench_mount_many: needs a writable /dev/fuse and fusermount3" >&2; exit 2; }

many_cleanup() { # the mount, then lib.sh's cleanup with the exit status
    local rc=$?
    set +e
    fusermount3 -u -z "$WORK/mnt" 2>/dev/null
    (exit "$rc")
    bench_cleanup
}
bench_workdir
trap many_cleanup EXIT
: >"$WORK/empty.rc"
export LNS_RC=$WORK/empty.rc LNS_NO_REPORT=1

echo "== bench_mount_many: machine and command"
echo "command: BENCH_RUNS=$RUNS BENCH_FILES=$FILES $0 $*"
bench_describe_machine

start_depot d1 16
mkdir -p "$WORK/x" "$WORK/mnt" "$WORK/one"
head -c 1000 /dev/urandom >"$WORK/one/tiny.bin"
"$BIN/lors_upload" --no-rc -q -d 2h --depot-list "127.0.0.1:$PORT_d1" \
    -o "$WORK/one/tiny.bin.xnd" "$WORK/one/tiny.bin"
# FILES byte-for-byte copies, written by one process (a cp per file takes minutes)
perl -e 'local $/; open(my $i, "<", $ARGV[0]) or die "$ARGV[0]: $!\n"; my $b = <$i>;
    for my $n (0 .. $ARGV[2] - 1) {
        my $p = sprintf("%s/NAME%05d.xnd", $ARGV[1], $n);
        open(my $o, ">", $p) or die "$p: $!\n"; print $o $b; close($o) or die "$p: $!\n";
    }' "$WORK/one/tiny.bin.xnd" "$WORK/x" "$FILES"
echo "exNodes: $FILES copies of one of $(stat -c %s "$WORK/one/tiny.bin.xnd") bytes in $WORK/x"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
MPID=
mount_start() { # DIR
    "$BIN/lors_mount" --no-rc -q -f "$1" "$WORK/mnt" 2>>"$WORK/mount.err" &
    MPID=$!
    PIDS+=("$MPID")
    for _ in $(seq 400); do
        mountpoint -q "$WORK/mnt" && return 0
        kill -0 "$MPID" 2>/dev/null || { echo "bench_mount_many: lors_mount died" >&2; return 1; }
        sleep 0.05
    done
    echo "bench_mount_many: lors_mount did not mount" >&2
    return 1
}
mount_stop() { fusermount3 -u "$WORK/mnt"; wait "$MPID" 2>/dev/null || true; }
list() { # DIR -> "seconds lines" of ls -l DIR | wc -l
    local t0 t1 n
    t0=$(now)
    n=$(ls -l "$1" | wc -l)
    t1=$(now)
    echo "$(secs "$t0" "$t1") $n"
}

# rounds DIR TAG: the table of rounds over DIR, results recorded as TAG-METRIC
rounds() {
    local d=$1 tag=$2 r tl nl tc nc tw nw hwm
    ls -l "$d" >/dev/null   # the local inodes into the kernel's cache
    echo
    echo "== ls -l of $(find "$d" -name '*.xnd' | wc -l) exNodes: seconds (lines);" \
        "lors_mount's peak RSS; ratio against local"
    printf '%5s %14s %14s %14s %10s %8s %8s\n' round "local" "mount cold" "mount warm" \
        "VmHWM kB" "cold/lo" "warm/lo"
    for r in $(seq "$RUNS"); do
        read -r tl nl < <(list "$d")
        mount_start "$d"
        read -r tc nc < <(list "$WORK/mnt")
        read -r tw nw < <(list "$WORK/mnt")
        hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$MPID/status")
        mount_stop
        [ "$nc" = "$nl" ] && [ "$nw" = "$nl" ] ||
            { echo "bench_mount_many: the mount listed $nc / $nw lines, the disk $nl" >&2; exit 1; }
        record "$tag-local" "$tl"; record "$tag-cold" "$tc"; record "$tag-warm" "$tw"
        record "$tag-hwm" "$hwm"
        record "$tag-rc" "$(ratio "$tc" "$tl")"; record "$tag-rw" "$(ratio "$tw" "$tl")"
        printf '%5s %14s %14s %14s %10s %8s %8s\n' "$r" "$tl ($nl)" "$tc ($nc)" "$tw ($nw)" \
            "$hwm" "$(ratio "$tc" "$tl")" "$(ratio "$tw" "$tl")"
    done
    printf '%5s %14s %14s %14s %10s %8s %8s\n' median "$(med "$tag-local")" "$(med "$tag-cold")" \
        "$(med "$tag-warm")" "$(med "$tag-hwm")" "$(med "$tag-rc")" "$(med "$tag-rw")"
}

rounds "$WORK/x" big
mkdir -p "$WORK/s"
perl -e 'for my $n (0 .. $ARGV[2] - 1) { my $f = sprintf("NAME%05d.xnd", $n);
        link("$ARGV[0]/$f", "$ARGV[1]/$f") or die "$f: $!\n" }' "$WORK/x" "$WORK/s" "$SMALL"
rounds "$WORK/s" small

under2() { awk -v t="$1" 'BEGIN { print (t < 2) ? "met" : "NOT met" }'; }
hb=$(med big-hwm) hs=$(med small-hwm)
echo
per=$(awk -v a="$hb" -v b="$hs" -v n=$((FILES - SMALL)) \
    'BEGIN { printf "%.0f", (a - b) * 1024 / n }')
echo "memory: peak RSS $hs kB at $SMALL exNodes, $hb kB at $FILES ($(ratio "$hb" "$hs") x):" \
    "$per bytes more per exNode"
echo "target: $FILES exNodes listed in under 2 s: cold $(under2 "$(med big-cold)")," \
    "warm $(under2 "$(med big-warm)"); memory bounded (peak RSS at $FILES under twice that" \
    "at $SMALL): $(awk -v a="$hb" -v b="$hs" 'BEGIN { print (a < 2 * b) ? "met" : "NOT met" }')"
