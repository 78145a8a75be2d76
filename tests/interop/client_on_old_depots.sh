#!/bin/bash
# client_on_old_depots.sh -- the lns client side (ibp_tool, the lors_* tools, and the lns
# depot's SEND) against a real LoCI 1.3.1 depot and a real ACCRE 1.4 depot (issue 13).
#
#   tests/interop/client_on_old_depots.sh LNS_BIN_DIR
#
#   LNS_INTEROP_PREFIX  where the real programs are built (default /work/interop):
#                       lors131/bin/ibp_server_mt, accre/bin/{ibp_server,mkfs_resource}
#   LNS_INTEROP_TMP     scratch directory (default a new /tmp/lns-client-old.XXXXXX, removed)
#
# Starts one depot of each kind on 127.0.0.1 (the LoCI one binds 0.0.0.0: it cannot be told
# otherwise), runs each check, prints "PASS|FAIL|SKIP name: reason" per check and a count.
# Exit 0 all passed, 1 some failed, 77 the real programs are not built.  Every depot started
# here is stopped by the EXIT trap.  interop.sh may call it as one cell.
set -u
. "$(dirname "$0")/accre_conf.sh"

BIN=${1:?usage: client_on_old_depots.sh LNS_BIN_DIR}
BIN=$(cd "$BIN" && pwd)
PREFIX=${LNS_INTEROP_PREFIX:-/work/interop}
LOCI_SRV=$PREFIX/lors131/bin/ibp_server_mt
ACCRE_SRV=$PREFIX/accre/bin/ibp_server
ACCRE_MKFS=$PREFIX/accre/bin/mkfs_resource
for p in "$LOCI_SRV" "$ACCRE_SRV" "$ACCRE_MKFS"; do
    if [ ! -x "$p" ]; then
        echo "SKIP client_on_old_depots: $p is not built (docs/interop.md says how)"
        exit 77
    fi
done
for p in ibp_tool ibp_depot lors_upload lors_download lors_ls lors_augment lors_trim lors_refresh lors_share; do
    [ -x "$BIN/$p" ] || { echo "client_on_old_depots: $BIN/$p missing (make first)" >&2; exit 2; }
done

T=${LNS_INTEROP_TMP:-$(mktemp -d /tmp/lns-client-old.XXXXXX)}
mkdir -p "$T"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    [ -n "${LNS_INTEROP_TMP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_port() { # wait_port PORT: up to 20 s until something accepts on it
    for _ in $(seq 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# ---- the depots ----
L=$T/loci; mkdir -p "$L/data"; LP=$(free_port)
cat >"$L/ibp.cfg" <<EOF
SOFTSIZE 400m
HARDSIZE 400m
MINFREESIZE 10m
CFGPORT $LP
SOFTDIR $L/data
HARDDIR $L/data
MAXDURATION 10
PASSWORD secret
HOSTNAME 127.0.0.1
THREADS 8
MAXTHREADS 64
EOF
"$LOCI_SRV" -cf "$L/" >"$L/stdout.log" 2>&1 &
PIDS+=($!)

A=$T/accre; AP=$(free_port)
LD_LIBRARY_PATH=$PREFIX/accre/lib accre_conf "$A" 127.0.0.1 "$AP" "$ACCRE_MKFS"
(cd "$A" && LD_LIBRARY_PATH=$PREFIX/accre/lib exec "$ACCRE_SRV" "$A/ibp.cfg") >"$A/stdout.log" 2>&1 &
PIDS+=($!)

N=$T/lns; mkdir -p "$N/r0"
"$BIN/ibp_depot" -l 127.0.0.1 -p 0 --port-file "$N/port" -r "$N/r0,hard=200M,soft=200M" \
    --public-host 127.0.0.1 --log-file "$N/log" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$N/port" ] && break; sleep 0.1; done
NP=$(cat "$N/port" 2>/dev/null)

for p in "$LP" "$AP" "$NP"; do
    if [ -z "$p" ] || ! wait_port "$p"; then
        echo "FAIL start: a depot did not start (logs in $T)"
        LNS_INTEROP_TMP=$T
        exit 1
    fi
done
sleep 1 # the LoCI depot answers -47 (recovering) for a moment after it listens

# ---- checks ----
npass=0 nfail=0
ok() { echo "PASS $1"; npass=$((npass + 1)); }
ko() { echo "FAIL $1"; nfail=$((nfail + 1)); }
# The tools' line at exit about depots spoken to in plaintext (LoCI and ACCRE speak no TLS).
PLAIN='^[a-z_]*: warning: .* speaks* no TLS ('
# last_err FILE: its last line but that one, for a reason.
last_err() { grep -v -- "$PLAIN" "$1" | tail -1; }
export HOME=$T # the tools read no ~/.xndrc of the user's
IT="$BIN/ibp_tool --timeout 20"
head -c 3000000 /dev/urandom >"$T/f.bin"
echo secret >"$T/loci.pw"
echo ibp >"$T/accre.pw"

# ibp_tool on one depot, version found out (no -0): allocate, store, load, probe, change.
tool_basics() { # NAME PORT
    local name=$1 port=$2 caps r w m out
    caps=$($IT allocate "127.0.0.1:$port" 1000 --duration 3600 2>"$T/err") ||
        { ko "ibp_tool on $name: allocate: $(head -1 "$T/err")"; return; }
    r=$(sed -n 1p <<<"$caps"); w=$(sed -n 2p <<<"$caps"); m=$(sed -n 3p <<<"$caps")
    echo hello | $IT store "$w" - >/dev/null 2>"$T/err" ||
        { ko "ibp_tool on $name: store: $(head -1 "$T/err")"; return; }
    out=$($IT load "$r" 0 6 2>"$T/err")
    [ "$out" = hello ] || { ko "ibp_tool on $name: load: got '$out' $(head -1 "$T/err")"; return; }
    # change of the duration only: size and reliability sent as PROBE reads them
    $IT change "$m" --duration 7200 2>"$T/err" ||
        { ko "ibp_tool on $name: change --duration: $(head -1 "$T/err")"; return; }
    out=$($IT --json probe "$m" 2>"$T/err")
    case $out in
    *'"max_size":1000'*'"reliability":"hard"'*|*'"reliability":"hard"'*'"max_size":1000'*)
        ok "ibp_tool on $name: allocate, store, load, change (size, reliability kept), probe" ;;
    *) ko "ibp_tool on $name: probe after change: $out $(head -1 "$T/err")" ;;
    esac
}
tool_basics "LoCI 1.3.1" "$LP"
tool_basics "ACCRE 1.4" "$AP"

# load and copy without a LENGTH hold only a READ capability, which ACCRE 1.4 does not let
# PROBE: the size is found by 1-byte LOADs instead (ACCRE refuses a LOAD past the end)
caps=$($IT allocate "127.0.0.1:$AP" 1M --duration 3600 --rid 1 2>/dev/null)
head -c 300001 /dev/urandom >"$T/part.bin"
if $IT store "$(sed -n 2p <<<"$caps")" "$T/part.bin" >/dev/null 2>&1 &&
   $IT load "$(sed -n 1p <<<"$caps")" -o "$T/part.out" 2>"$T/err" && cmp -s "$T/part.bin" "$T/part.out" &&
   $IT load "$(sed -n 1p <<<"$caps")" 300000 -o "$T/part.tail" 2>"$T/err" &&
   [ "$(stat -c %s "$T/part.tail")" = 1 ]; then
    ok "ibp_tool load READCAP without a LENGTH on ACCRE 1.4 (no PROBE with a read capability there)"
else
    ko "ibp_tool load READCAP without a LENGTH on ACCRE 1.4: $(head -1 "$T/err")"
fi
# status without the password: ACCRE wants it for an inquiry; the error line says so
if $IT status "127.0.0.1:$AP" --rid 1 >/dev/null 2>"$T/err"; then
    ko "ibp_tool status on ACCRE without a password: answered?"
elif grep -q -- "--password-file" "$T/err"; then
    ok "ibp_tool status on ACCRE without a password: the error names --password-file"
else
    ko "ibp_tool status on ACCRE without a password: $(head -1 "$T/err")"
fi

# -0 change on LoCI: no reliability 0 on the wire (1.3.1 answers -30 to it)
caps=$($IT -0 allocate "127.0.0.1:$LP" 1000 --duration 3600 2>/dev/null)
m=$(sed -n 3p <<<"$caps")
if [ -n "$m" ] && $IT -0 change "$m" --duration 9000 2>"$T/err"; then
    ok "ibp_tool -0 change on LoCI 1.3.1"
else
    ko "ibp_tool -0 change on LoCI 1.3.1: $(head -1 "$T/err")"
fi

# -0 status-change in days, settings left out kept (1.3.1 takes 0 as 0)
out=$($IT -0 --json status-change "127.0.0.1:$LP" --password-file "$T/loci.pw" --max-duration 5d 2>"$T/err")
case $out in
*'"max_duration":432000'*'"soft_total":419430400'*|*'"soft_total":419430400'*'"max_duration":432000'*)
    ok "ibp_tool -0 status-change on LoCI 1.3.1: days, other settings kept" ;;
*) out2=$($IT -0 status "127.0.0.1:$LP" 2>&1)
   case $out2 in
   *"max duration: 432000 s"*) if grep -q "soft: .* of 419430400 bytes" <<<"$out2"; then
           ok "ibp_tool -0 status-change on LoCI 1.3.1: days, other settings kept"
       else ko "ibp_tool -0 status-change on LoCI 1.3.1: a setting left out changed: $out2"; fi ;;
   *) ko "ibp_tool -0 status-change on LoCI 1.3.1: $out $(head -1 "$T/err") / $out2" ;;
   esac ;;
esac

# status on each: LoCI (auto), ACCRE in version 1 ("1 <n>" + KEY:value) and 0 (with password)
for spec in "LoCI:$LP::" "ACCRE v1:$AP:--rid 1 --password-file $T/accre.pw:" \
            "ACCRE v0:$AP:--password-file $T/accre.pw:-0"; do
    IFS=: read -r name port args v0 <<<"$spec"
    # shellcheck disable=SC2086
    out=$($IT $v0 status "127.0.0.1:$port" $args 2>"$T/err")
    if grep -q "max duration: [1-9]" <<<"$out" && grep -q "of [1-9][0-9]* bytes" <<<"$out"; then
        ok "ibp_tool status on $name"
    else
        ko "ibp_tool status on $name: $(tr '\n' ' ' <<<"$out") $(head -1 "$T/err")"
    fi
done

# a pinned version is used: pinned to 1, the LoCI depot drops the request
if $IT --ibp-version "127.0.0.1:$LP=1" status "127.0.0.1:$LP" >/dev/null 2>&1; then
    ko "ibp_tool --ibp-version HOST:PORT=1 on LoCI: answered, so not pinned"
else
    ok "ibp_tool --ibp-version HOST:PORT=1 on LoCI: not detected away"
fi

# the lors tools on each kind of depot
for spec in "LoCI 1.3.1:$LP" "ACCRE 1.4:$AP" "lns:$NP"; do
    IFS=: read -r name port <<<"$spec"
    x=$T/x$port.xnd
    if ! "$BIN/lors_upload" --no-rc --depot-list "127.0.0.1:$port" -d 1h -bs 1M -o "$x" \
         "$T/f.bin" --quiet 2>"$T/err"; then
        ko "lors_upload on $name: $(head -1 "$T/err")"; continue
    fi
    "$BIN/lors_download" --no-rc "$x" -o "$T/out.bin" --quiet 2>"$T/err" &&
        cmp -s "$T/f.bin" "$T/out.bin" && ok "lors_upload, lors_download on $name" ||
        ko "lors_download on $name: $(head -1 "$T/err")"
    out=$("$BIN/lors_ls" --no-rc "$x" 2>"$T/err")
    [ "$(grep -c ' alive$' <<<"$out")" = 4 ] && ok "lors_ls on $name" ||
        ko "lors_ls on $name: $(tail -3 <<<"$out" | tr '\n' ' ') $(head -1 "$T/err")"
    "$BIN/lors_refresh" --no-rc -d 2h "$x" 2>"$T/err" && ok "lors_refresh on $name" ||
        ko "lors_refresh on $name: $(head -1 "$T/err")"
    # -m, as long as the depot allows: neither LoCI 1.3.1 (-28 to a CHNG of -1) nor ACCRE 1.4
    # (a negative duration is "unchanged") has it.  LoCI tells its maximum to anyone who asks
    # (STATUS), ACCRE only with the password: extended there, one line and exit 8 here.
    before=$("$BIN/lors_ls" --no-rc "$x" 2>/dev/null | awk '/alive$/ {print $7, $8; exit}')
    "$BIN/lors_refresh" --no-rc -m -o "$T/m.$port.xnd" "$x" 2>"$T/err"
    rc=$?
    after=$("$BIN/lors_ls" --no-rc "$T/m.$port.xnd" 2>/dev/null | awk '/alive$/ {print $7, $8; exit}')
    case $name in
    ACCRE*)
        # one line per mapping, and the one line that the depot speaks no TLS
        if [ $rc = 8 ] && [ "$(grep -c -v "$PLAIN" "$T/err")" = 4 ] && grep -q -- "give -d" "$T/err" &&
           [ "$(grep -c "$PLAIN" "$T/err")" = 1 ]; then
            ok "lors_refresh -m on $name: not extended, each mapping says so, exit 8"
        else
            ko "lors_refresh -m on $name: exit $rc, $(head -1 "$T/err")"
        fi ;;
    *)
        if [ $rc = 0 ] && [ -n "$after" ] && [[ "$after" > "$before" ]]; then
            ok "lors_refresh -m on $name: extended ($before -> $after)"
        else
            ko "lors_refresh -m on $name: exit $rc, $before -> $after: $(head -1 "$T/err")"
        fi ;;
    esac
done

kind() { case $1 in "$NP") echo lns ;; "$LP") echo LoCI ;; *) echo ACCRE ;; esac; }

# lors_augment between every pair: the SEND of the source depot, or a relay the tool reports.
# ACCRE -> LoCI is relayed (ACCRE's depot SENDs in version 1, which LoCI 1.3.1 drops: -13).
# LoCI -> ACCRE is relayed here only because every depot of this script is 127.0.0.1: the
# LoCI depot's client library keeps one connection per host name, so after its SENDs to the
# lns depot its STORE for the ACCRE capability goes to the lns depot (-4); on their own
# addresses (make interop, 5.send.loci-to-accre) it copies.  docs/interop.md has both.
# Every other pair must copy depot to depot.
for src in "$NP" "$LP" "$AP"; do
    for dst in "$NP" "$LP" "$AP"; do
        [ "$src" = "$dst" ] && continue
        z=$T/z.xnd; rm -f "$z"
        pair="$(kind "$src") -> $(kind "$dst")"
        if ! "$BIN/lors_augment" --no-rc --depot-list "127.0.0.1:$dst" -d 1h -o "$z" \
             "$T/x$src.xnd" >"$T/aug.out" 2>&1; then
            ko "lors_augment $pair: $(last_err "$T/aug.out")"; continue
        fi
        relayed=$(grep -c 'relayed through this client' "$T/aug.out")
        want=0
        { [ "$src" = "$LP" ] && [ "$dst" = "$AP" ]; } && want=4
        { [ "$src" = "$AP" ] && [ "$dst" = "$LP" ]; } && want=4
        if [ "$relayed" = "$want" ]; then
            ok "lors_augment $pair ($([ "$want" = 0 ] && echo SEND || echo relayed, as expected))"
        else
            ko "lors_augment $pair: $relayed of 4 pieces relayed, expected $want: $(grep -m1 SEND "$T/aug.out")"
        fi
        "$BIN/lors_trim" --no-rc -m 0 -o "$T/t.xnd" --force "$z" >/dev/null 2>"$T/err" ||
            ko "lors_trim on $pair: $(head -1 "$T/err")"
    done
done

# a mixed exNode: lns, LoCI and ACCRE copies; the lns ones freed, the rest still downloads
m=$T/m.xnd
if "$BIN/lors_augment" --no-rc --depot-list "127.0.0.1:$LP,127.0.0.1:$AP" -c 2 -d 1h -o "$m" \
       "$T/x$NP.xnd" --quiet 2>"$T/err" &&
   "$BIN/lors_trim" --no-rc -d -m 0-3 -o "$T/m2.xnd" "$m" 2>"$T/err" &&
   "$BIN/lors_download" --no-rc "$T/m2.xnd" -o "$T/m2.bin" --quiet 2>"$T/err" &&
   cmp -s "$T/f.bin" "$T/m2.bin"; then
    ok "mixed exNode (lns + LoCI + ACCRE): augment, trim -d of the lns copies, download"
else
    ko "mixed exNode: $(head -1 "$T/err")"
fi

# alias capabilities with ibp_tool: ACCRE makes, reads within the range, revokes; LoCI has none
caps=$($IT allocate "127.0.0.1:$AP" 1K --rid 1 2>/dev/null)
m=$(sed -n 3p <<<"$caps")
if [ -n "$m" ] && printf 0123456789abcdefghij | $IT store "$(sed -n 2p <<<"$caps")" - >/dev/null &&
   a=$($IT alias "$m" 10 5 2>"$T/err") &&
   [ "$($IT load "$(sed -n 1p <<<"$a")" 0 5 2>>"$T/err")" = abcde ] &&
   ! $IT load "$(sed -n 1p <<<"$a")" 3 5 >/dev/null 2>&1 &&
   $IT alias-revoke "$(sed -n 3p <<<"$a")" "$m" 2>>"$T/err" &&
   ! $IT load "$(sed -n 1p <<<"$a")" 0 5 >/dev/null 2>&1 &&
   [ "$($IT load "$(sed -n 1p <<<"$caps")" 0 3 2>>"$T/err")" = 012 ]; then
    ok "ibp_tool alias, load in range, alias-revoke on ACCRE 1.4"
else
    ko "ibp_tool alias on ACCRE 1.4: $(head -1 "$T/err")"
fi
caps=$($IT allocate "127.0.0.1:$LP" 1000 --duration 3600 2>/dev/null)
if $IT alias "$(sed -n 3p <<<"$caps")" >/dev/null 2>"$T/err"; then
    ko "ibp_tool alias on LoCI 1.3.1: made one (LoCI has no aliases)"
elif grep -q "no alias capabilities" "$T/err"; then
    ok "ibp_tool alias on LoCI 1.3.1: refused in one line"
else
    ko "ibp_tool alias on LoCI 1.3.1: $(head -1 "$T/err")"
fi

# lors_share of a file on lns and ACCRE: byte-exact, revoked per depot; on LoCI: named
x=$T/sh.xnd; rm -f "$x" "$T/sh.s.xnd" "$T/sh.s.xnd.revoke"
if "$BIN/lors_upload" --no-rc --depot-list "127.0.0.1:$NP,127.0.0.1:$AP/1" -c 2 -d 1h -bs 1M \
       -o "$x" "$T/f.bin" --quiet 2>"$T/err" &&
   "$BIN/lors_share" --no-rc "$x" -o "$T/sh.s.xnd" --quiet 2>"$T/err" &&
   ! grep -q 'WRITE\|MANAGE' "$T/sh.s.xnd" &&
   "$BIN/lors_download" --no-rc "$T/sh.s.xnd" -o "$T/sh.out" --quiet 2>"$T/err" &&
   cmp -s "$T/f.bin" "$T/sh.out" &&
   "$BIN/lors_share" --no-rc --revoke "$T/sh.s.xnd.revoke" >"$T/rev.out" 2>"$T/err" &&
   [ "$(grep -c ' revoked, 0 gone already' "$T/rev.out")" = 2 ] &&
   ! "$BIN/lors_download" --no-rc "$T/sh.s.xnd" -o "$T/sh.out2" --quiet 2>/dev/null &&
   "$BIN/lors_download" --no-rc "$x" -o "$T/sh.out3" --quiet 2>"$T/err"; then
    ok "lors_share on lns + ACCRE: download through the aliases, revoke per depot"
else
    ko "lors_share on lns + ACCRE: $(head -1 "$T/err")"
fi
if "$BIN/lors_share" --no-rc "$T/x$LP.xnd" -o "$T/shl.xnd" 2>"$T/err"; then
    ko "lors_share on LoCI 1.3.1: shared (LoCI has no aliases)"
elif grep -q "127.0.0.1:$LP (no alias capabilities" "$T/err" && [ ! -e "$T/shl.xnd.revoke" ]; then
    ok "lors_share on LoCI 1.3.1: refused, the depot named"
else
    ko "lors_share on LoCI 1.3.1: $(last_err "$T/err")"
fi

echo "client_on_old_depots: $npass passed, $nfail failed"
[ "$nfail" = 0 ]
