#!/bin/sh
# demo.sh -- the main job in one command (make demo): start three local depots, use ibp_tool
# to allocate, store, load, copy depot-to-depot, probe and ask for status; then LoRS: upload
# a file in 2 copies, list it, download it and compare; then show the depots and the upload
# in the map GUI (lns_gui) when there is a display, or print how to open it.
#   scripts/demo.sh BINDIR
#   LNS_DEMO_KEEP=1        keep the depots up at the end until Ctrl-C (to open the GUI by hand)
#   LNS_DEMO_GUI_ARGS=...  more lns_gui options (tests: "--selftest FILE" closes it by itself)
# Everything runs on 127.0.0.1 in a temporary directory that is removed at the end.
set -eu
BIN=$(cd "${1:-build/release/bin}" && pwd)
GUI=$(cd "$(dirname "$0")/.." && pwd)/gui/lns_gui
TOOL="$BIN/ibp_tool"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lns-demo-XXXXXX")
PIDS=""
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

start_depot() { # name: starts it in the background; its port is then in $WORK/name/port
    mkdir -p "$WORK/$1"
    "$BIN/ibp_depot" --listen 127.0.0.1 --port 0 --port-file "$WORK/$1/port" \
        --public-host 127.0.0.1 --resource "$WORK/$1/res,hard=256M,soft=256M,max-duration=1d" \
        --log-file "$WORK/$1/depot.log" --event-log "$WORK/$1/events.log" \
        >"$WORK/$1/stdout" 2>&1 </dev/null &
    PIDS="$PIDS $!"
    i=0
    while [ ! -s "$WORK/$1/port" ]; do
        i=$((i + 1)); [ $i -gt 500 ] && { echo "demo: depot $1 did not start" >&2; exit 1; }
        sleep 0.02
    done
}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

start_depot depotA
start_depot depotB
start_depot depotC
A=$(cat "$WORK/depotA/port")
B=$(cat "$WORK/depotB/port")
C=$(cat "$WORK/depotC/port")
say "three depots listening on 127.0.0.1:$A, 127.0.0.1:$B and 127.0.0.1:$C"

head -c 3000000 /dev/urandom > "$WORK/file"
say "allocate 4 MB on depot A for one hour"
"$TOOL" allocate "127.0.0.1:$A" 4M --duration 3600 --hard > "$WORK/capsA"
cat "$WORK/capsA" | sed 's/\(#[0-9a-f]\{16\}\)[0-9a-f]*/\1.../'
RA=$(sed -n 1p "$WORK/capsA"); WA=$(sed -n 2p "$WORK/capsA"); MA=$(sed -n 3p "$WORK/capsA")

say "store a 3 MB file through the write capability"
"$TOOL" store "$WA" "$WORK/file"

say "load it back through the read capability and compare"
"$TOOL" load "$RA" -o "$WORK/back"
cmp "$WORK/file" "$WORK/back" && echo "identical: $(sha256sum < "$WORK/back" | cut -c1-16)..."

say "copy it depot-to-depot (IBP SEND: the bytes do not pass through this client)"
"$TOOL" allocate "127.0.0.1:$B" 4M --duration 3600 > "$WORK/capsB"
RB=$(sed -n 1p "$WORK/capsB"); WB=$(sed -n 2p "$WORK/capsB")
"$TOOL" copy "$RA" "$WB"
"$TOOL" load "$RB" -o "$WORK/back2"
cmp "$WORK/file" "$WORK/back2" && echo "copy on depot B is identical"

say "probe the allocation on depot A"
"$TOOL" probe "$MA"

say "depot A status (JSON)"
"$TOOL" --json status "127.0.0.1:$A"

say "what the depot logged (one NetLogger-style line per request)"
tail -5 "$WORK/depotA/events.log"

# ---- LoRS: a network file striped over the three depots, in two copies
export LNS_NO_REPORT=1    # no L-Bone to tell the depots' throughput to
head -c 8000000 /dev/urandom > "$WORK/video.bin"
say "lors_upload an 8 MB file: 3 fragments, 2 copies of each, on the three depots"
"$BIN/lors_upload" --no-rc -q -c 2 -F 3 -d 1h \
    --depot-list "127.0.0.1:$A,127.0.0.1:$B,127.0.0.1:$C" \
    --events "$WORK/upload.events" -o "$WORK/video.xnd" "$WORK/video.bin"
echo "exNode $WORK/video.xnd: $(wc -c < "$WORK/video.xnd") bytes of XML"

say "lors_ls: the mappings of the network file and whether they are alive"
"$BIN/lors_ls" --no-rc -h "$WORK/video.xnd"

say "lors_download it (many streams, from whichever copy answers best) and compare"
"$BIN/lors_download" --no-rc --quiet -o "$WORK/video.back" "$WORK/video.xnd"
cmp "$WORK/video.bin" "$WORK/video.back" && echo "identical: $(sha256sum < "$WORK/video.back" | cut -c1-16)..."

# ---- the map GUI: the depots at made-up places, the upload replayed, the panels filled in
{
    echo "127.0.0.1:$A 35.96 -83.92 Knoxville"
    echo "127.0.0.1:$B 52.37 4.90 Amsterdam"
    echo "127.0.0.1:$C -33.87 151.21 Sydney"
} > "$WORK/depots.txt"
{
    for k in dl_xnd aug_xnd trim_xnd ref_xnd play_xnd; do echo "set pv($k) {$WORK/video.xnd}"; done
    echo "set pv(file) {$WORK/video.bin}; set pv(out) {$WORK/video2.xnd}"
    # the demo's file is random bytes, not a video: lns_paced plays it at 40 Mbit/s
    echo "set pv(dl_out) {$WORK/video.out}; set pv(player) paced; set pv(bitrate) 40M"
} > "$WORK/panels.tcl"
GUICMD="$GUI --depots $WORK/depots.txt --bindir $BIN --events $WORK/upload.events --replay-seconds 20 --script $WORK/panels.tcl"
if [ -n "${DISPLAY:-}" ] && command -v wish >/dev/null 2>&1; then
    say "the map GUI: the upload replayed over 20 s (Replay plays it again); its panels work on these depots"
    echo "(the depots stay up until the window is closed)"
    # Ended by SIGHUP, SIGINT or SIGTERM (a session's end, Ctrl-C, kill) the window was closed
    # from outside: the demo goes on as after a close.  Any other failure has been told by
    # lns_gui itself on stderr (no display, no Tk, an X connection lost).
    rc=0
    # shellcheck disable=SC2086  # word splitting wanted: options
    $GUICMD ${LNS_DEMO_GUI_ARGS:-} || rc=$?
    case $rc in
        0|129|130|143) ;;
        *) [ "$rc" -gt 128 ] && echo "demo: lns_gui was killed by signal $((rc - 128))" ||
               echo "demo: lns_gui failed (exit $rc)" ;;
    esac
else
    say "the map GUI needs a display (and wish: Debian tk8.6)"
    echo "It shows these depots on a map and replays this upload, and its panels work on them;"
    echo "the depots and files below go away when this demo ends: LNS_DEMO_KEEP=1 make demo"
    echo "keeps them up until Ctrl-C. Then, from a terminal with a display:"
    echo "  $GUICMD"
fi
if [ "${LNS_DEMO_KEEP:-0}" = 1 ]; then
    say "depots kept up (LNS_DEMO_KEEP=1): Ctrl-C stops them and removes $WORK"
    while :; do sleep 3600; done
fi

say "demo done; depots stopped and $WORK removed"
