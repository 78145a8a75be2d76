#!/bin/bash
# bench_zstd.sh -- lors_upload -z (zstd) against zstd -T2 -3 of the same text corpus, same run;
# with --zlib (what -z was before) and the zstd levels beside it, for the choice of the level.
#
#   tests/bench/bench_zstd.sh BUILD_DIR           (make bench-zstd runs it on build/release)
#
# Environment: BENCH_RUNS (rounds, default 5, at least 3), BENCH_SIZE (corpus bytes, default
# 128M), BENCH_CORPUS (a text file to use instead; default: the C headers under /usr/include,
# concatenated in name order up to BENCH_SIZE), BENCH_LEVELS (zstd levels to show, default
# "1 2 3 5"), TMPDIR (a real disk, default /tmp).
#
# Ours: lors_upload -z to four depots on loopback (checksums on, the default), the exNode to a
# file; its rate is corpus bytes over the wall time of the whole process (bench_lors_dl time).
# The peer and the machine's limit for the same work: `zstd -T2 -3` (the same level, both
# cores) from the same file to a file on the same disk.  Each lns frame (1 MiB) is compressed
# on its own (so the file stays seekable), zstd -T2 compresses one stream: the ratio is the
# stored bytes over zstd's output.  Rounds interleave (ours first in odd rounds); the median
# of per-round ratios is reported.  The trap stops the depots and removes the directory.
set -euo pipefail

. "$(dirname "$0")/lib.sh"
bench_runs 5
SIZE_ARG=${BENCH_SIZE:-128M}
LEVELS=${BENCH_LEVELS:-1 2 3 5}
DRIVER=$BUILD/bench/bench_lors_dl
bench_need_built "$BIN/ibp_depot" "$BIN/lors_upload" "$DRIVER"
bench_need_tools "apt-get install zstd" zstd
SIZE=$(bytes_of "$SIZE_ARG")

bench_workdir
: >"$WORK/empty.rc"
export LNS_RC=$WORK/empty.rc

echo "== bench_zstd: machine and command"
echo "command: BENCH_RUNS=$RUNS BENCH_SIZE=$SIZE_ARG BENCH_LEVELS='$LEVELS' $0 $*"
bench_describe_machine
echo "peer: $(zstd --version)"

# the corpus
if [ -n "${BENCH_CORPUS:-}" ]; then
    cp "$BENCH_CORPUS" "$WORK/corpus"
else
    find /usr/include -name '*.h' -type f | LC_ALL=C sort | xargs cat 2>/dev/null |
        head -c "$SIZE" >"$WORK/corpus" || true
fi
SIZE=$(stat -c %s "$WORK/corpus")
echo "corpus: $SIZE bytes (${BENCH_CORPUS:-/usr/include/**/*.h})"

for d in A B C D; do start_depot $d $(( SIZE * (RUNS * 8 + 8) / 1048576 / 4 + 256 )); done
LIST="127.0.0.1:$PORT_A,127.0.0.1:$PORT_B,127.0.0.1:$PORT_C,127.0.0.1:$PORT_D"
sync

# timed CMD...: "seconds cpu_s" of the whole process.
timed() {
    local out
    out=$("$DRIVER" time "$@" 2>>"$WORK/client.err") ||
        { echo "bench_zstd: $1 failed: $(tail -1 "$WORK/client.err")" >&2; return 1; }
    echo "$(echo "$out" | kv seconds) $(echo "$out" | kv cpu_s)"
}
# ours FLAGS...: "MB/s stored_bytes"
ours() {
    rm -f "$WORK/up.xnd"
    set -- $(timed "$BIN/lors_upload" --no-rc --depot-list "$LIST" -d 1h -o "$WORK/up.xnd" -V \
        "$@" "$WORK/corpus")
    local stored
    stored=$(sed -n 's/.*(\([0-9]*\) bytes stored).*/\1/p' "$WORK/client.err" | tail -1)
    echo "$(mbps "$SIZE" "$1") $stored"
}
# peer LEVEL: "MB/s bytes"
peer() {
    set -- $(timed zstd -q -f -T2 "-$1" -o "$WORK/corpus.zst" "$WORK/corpus")
    echo "$(mbps "$SIZE" "$1") $(stat -c %s "$WORK/corpus.zst")"
}

echo "== warm-up (untimed)"
ours -z >/dev/null
peer 3 >/dev/null

echo "== $RUNS rounds: lors_upload -z (zstd 3) against zstd -T2 -3"
for r in $(seq "$RUNS"); do
    if [ $(( r % 2 )) -eq 1 ]; then
        set -- $(ours -z); o=$1 os=$2; set -- $(peer 3); p=$1 ps=$2
    else
        set -- $(peer 3); p=$1 ps=$2; set -- $(ours -z); o=$1 os=$2
    fi
    set -- $(ours --zlib); z=$1 zs=$2
    record ours "$o"; record peer "$p"; record zlib "$z"
    record ratio "$(ratio "$o" "$p")"; record zratio "$(ratio "$z" "$p")"
    record size_ratio "$(ratio "$os" "$ps")"
    echo "round $r: lors_upload -z $o MB/s (stored $os), zstd -T2 -3 $p MB/s ($ps bytes)," \
        "--zlib $z MB/s (stored $zs); ratio $(ratio "$o" "$p"), size $(ratio "$os" "$ps")"
done
echo "compression ratio (stored / corpus): zstd -T2 -3 $(ratio "$ps" "$SIZE")," \
    "lors_upload -z $(ratio "$os" "$SIZE"), --zlib $(ratio "$zs" "$SIZE")"

echo "== the levels (one run each): lors_upload -z --level N against zstd -T2 -N"
for l in $LEVELS; do
    set -- $(ours -z --level "$l"); o=$1 os=$2
    set -- $(peer "$l"); p=$1 ps=$2
    echo "level $l: lors_upload $o MB/s, stored/corpus $(ratio "$os" "$SIZE");" \
        "zstd -T2 $p MB/s, $(ratio "$ps" "$SIZE")"
done

echo "== summary (medians of $RUNS rounds)"
echo "lors_upload -z:     $(med ours) MB/s"
echo "zstd -T2 -3:        $(med peer) MB/s (the machine's limit for this compression)"
echo "lors_upload --zlib: $(med zlib) MB/s (ratio to zstd -T2 -3: $(med zratio))"
echo "ratio lors_upload -z / zstd -T2 -3: $(med ratio) (target 0.8: $(verdict "$(med ratio)" 0.8))"
echo "stored bytes / zstd's bytes: $(med size_ratio)" \
    "(target at most 1.05: $(verdict 1.05 "$(med size_ratio)"))"
