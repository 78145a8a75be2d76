#!/bin/sh
# demo.sh -- the main job in one command (make demo): start two local depots, then use
# ibp_tool to allocate, store, load, copy depot-to-depot, probe and ask for status.
#   scripts/demo.sh BINDIR
# Everything runs on 127.0.0.1 in a temporary directory that is removed at the end.
set -eu
BIN=${1:-build/release/bin}
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
A=$(cat "$WORK/depotA/port")
B=$(cat "$WORK/depotB/port")
say "two depots listening on 127.0.0.1:$A and 127.0.0.1:$B"

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

say "demo done; depots stopped and $WORK removed"
