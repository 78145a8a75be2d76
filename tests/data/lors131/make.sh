#!/bin/bash
# make.sh -- make the files of this directory with the original LoRS 1.3.1 tools (a maintainer
# script: make test only reads what it wrote).  Each case CASE/ holds up.xnd, the exNode the
# original lors_upload wrote for ./plain with that case's e2e options, and mapN.bin, the
# bytes mapping N (document order) stored: its allocation's [0, alloc_length); result says
# whether the original's own lors_download gave plain back.  See README.
#
#   tests/data/lors131/make.sh LNS_BIN_DIR LORS131_PREFIX
#
# Two lns depots on 127.0.0.61 and .62 hold the uploads (the LoRS tools tell depots apart by
# host name only); they are stopped at the end.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 LNS_BIN_DIR LORS131_PREFIX" >&2; exit 2; }
B=$(cd "$1" && pwd); L=$2/bin
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d); trap 'kill $(cat "$W"/*.pid 2>/dev/null) 2>/dev/null; rm -rf "$W"' EXIT
for h in 61 62; do
    mkdir -p "$W/d$h"
    "$B/ibp_depot" --listen 127.0.0.$h --public-host 127.0.0.$h --port 0 \
        --port-file "$W/d$h/port" -r "$W/d$h,hard=1G,soft=1G" --log-file "$W/d$h/log" \
        --pid-file "$W/d$h.pid" -d
done
for i in $(seq 50); do [ -s "$W/d61/port" ] && [ -s "$W/d62/port" ] && break; sleep 0.1; done
mkdir -p "$W/home"; export HOME=$W/home
rc() { # E2E_ORDER line (or none); the original reads it from ~/.xndrc only, so that the
       # flags alone choose the chain, and no flag at all the built-in DES then checksum
    { echo "LBONE_SERVER 127.0.0.1 1"; [ -n "$1" ] && echo "E2E_ORDER $1"
      echo "DURATION_DAYS 1"; echo "STORAGE_TYPE HARD"
      echo "DEPOT 127.0.0.61 $(cat "$W/d61/port")"; echo "DEPOT 127.0.0.62 $(cat "$W/d62/port")"
    } >"$W/xndrc"
}
# one CASE ORDER COPIES FLAGS...: retried a few times (the original's -z fails at random)
one() {
    local name=$1 order=$2 copies=$3; shift 3
    rc "$order"
    for try in 1 2 3 4 5 6 7 8; do
        rm -f "$W/up.xnd"
        if timeout 60 "$L/lors_upload" "$HERE/plain" --xndrc="$W/xndrc" --depot-list "$@" \
               -E 4096 -c "$copies" -F 2 -o "$W/up.xnd" >"$W/up.log" 2>&1 && [ -s "$W/up.xnd" ]; then
            break
        fi
    done
    if ! [ -s "$W/up.xnd" ]; then
        echo "$name: the original's upload failed 8 times: $(grep -v '^$' "$W/up.log" | tail -1)"
        return 0
    fi
    rm -rf "${HERE:?}/$name"; mkdir -p "$HERE/$name"
    cp "$W/up.xnd" "$HERE/$name/up.xnd"
    local n=0
    for cap in $(grep -o '<exnode:read>[^<]*</exnode:read>' "$W/up.xnd" | sed 's/<[^>]*>//g'); do
        "$B/ibp_tool" load "$cap" -o "$HERE/$name/map$n.bin" >/dev/null
        n=$((n + 1))
    done
    if timeout 60 "$L/lors_download" "$W/up.xnd" -o "$W/got" >/dev/null 2>&1 && cmp -s "$W/got" "$HERE/plain"; then
        echo "the original reads it back: yes" >"$HERE/$name/result"
    else
        echo "the original reads it back: no" >"$HERE/$name/result"
    fi
    echo "$name: $n mappings, $(cat "$HERE/$name/result")"
}
# gdb CASE FLAGS...: the original's zlib never works on x86_64 (compress() and uncompress()
# are given an uninitialized output length); with gdb setting it, its own code writes and
# reads the layout, which these cases keep (on ./text, one mapping).
cat >"$W/gdb_up" <<'GDB'
set pagination off
set confirm off
set breakpoint pending on
break compress
commands
silent
set var *destLen = sourceLen + sourceLen/10 + 13
continue
end
run
quit $_exitcode
GDB
sed 's/break compress/break uncompress/; s|set var .*|set var *destLen = 0xffffffff|' \
    "$W/gdb_up" >"$W/gdb_dl"
gdb() {
    local name=$1
    shift
    rc none
    rm -f "$W/up.xnd"
    command gdb -q -batch -x "$W/gdb_up" --args "$L/lors_upload" "$HERE/text" \
        --xndrc="$W/xndrc" --depot-list "$@" -E 16383 -c 1 -F 1 -o "$W/up.xnd" >"$W/up.log" 2>&1
    [ -s "$W/up.xnd" ] || { echo "$name: the upload under gdb failed"; return 0; }
    rm -rf "${HERE:?}/$name"; mkdir -p "$HERE/$name"
    cp "$W/up.xnd" "$HERE/$name/up.xnd"
    ln -s ../text "$HERE/$name/plain"
    local cap
    cap=$(grep -o '<exnode:read>[^<]*</exnode:read>' "$W/up.xnd" | sed 's/<[^>]*>//g')
    "$B/ibp_tool" load "$cap" -o "$HERE/$name/map0.bin" >/dev/null
    if command gdb -q -batch -x "$W/gdb_dl" --args "$L/lors_download" "$W/up.xnd" -o "$W/got" \
           >/dev/null 2>&1 && cmp -s "$W/got" "$HERE/text"; then
        echo "the original reads it back: only with gdb setting zlib's lengths" >"$HERE/$name/result"
    else
        echo "the original reads it back: no, not even with gdb" >"$HERE/$name/result"
    fi
    echo "$name: $(cat "$HERE/$name/result")"
}
[ -s "$HERE/plain" ] || head -c 30000 /dev/urandom >"$HERE/plain"
[ -s "$HERE/text" ] || seq -f 'line %06g of the lors131 zlib fixture' 1 2000 | head -c 40005 >"$HERE/text"
one k none 1 -k
one k-c2 none 2 -k
one x none 1 -x
one k-x none 1 -k -x
one x-k none 1 -x -k
one z none 1 -z
one k-z none 1 -k -z
one z-k none 1 -z -k
one e none 1 -e
one a none 1 -a
one k-e none 1 -k -e
one default "" 1
if command -v gdb >/dev/null; then
    gdb gdb-z -z
    gdb gdb-k-z -k -z
    gdb gdb-z-k -z -k
    gdb gdb-x-z -x -z
    gdb gdb-z-x -z -x
else
    echo "no gdb: the gdb-* cases are kept as they are"
fi
