#!/bin/bash
# interop.sh -- lns against the real IBP family (make interop; docs/interop.md): starts two lns
# depots, two ACCRE 1.4 depots and two LoCI 1.3.1 depots on loopback, runs the matrix of
# issue 13 (their test clients on our depots, our tools on their depots and on mixed exNodes,
# the original LoRS tools on our depots, SEND between every pair of kinds) and prints a table.
#
#   tests/interop/interop.sh LNS_BIN_DIR
#
#   LNS_INTEROP_PREFIX   where the real programs are built (default /work/interop):
#                        accre/bin/{ibp_server,mkfs_resource,ibp_test} and
#                        lors131/bin/{ibp_server_mt,ibp-test,lors_*} (docs/interop.md: how)
#   LNS_INTEROP_OUT      table.md, results.tsv and one log per cell (default build/interop)
#   LNS_INTEROP_ONLY     run only the cells whose id matches this extended regex
#   LNS_INTEROP_HOSTS    six loopback addresses, one per depot (default 127.0.0.11 .. 16):
#                        the LoRS tools tell depots apart by host name only
#   LNS_INTEROP_KEEP=1   keep the scratch directory (its path is printed)
#
# Each cell is PASS, FAIL, XFAIL (a failure of the real programs' own making, expected and
# explained: XFAIL_PAT below, docs/interop.md) or SKIP with one line of reason; it runs in its own process under
# `timeout`.  A cell whose programs are not built, or that needs what an earlier cell failed
# to make, is a SKIP.  Exit: 0 no FAIL (XFAILs allowed), 1 some FAIL, 77 every cell skipped,
# 2 usage.
# Every depot started here is stopped by the EXIT trap, also on failure or Ctrl-C.
set -u

SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
. "$(dirname "$SELF")/accre_conf.sh"

# ---------------------------------------------------------------------------------------------
# Helpers of the cells (they run in a child: interop.sh --cell DIR FUNCTION ARGS...)

# dep_var NAME FIELD: the field (HOST, PORT, RID, UP, PID, DIR) of depot NAME (lns1, accre2...).
dep_var() { local v="${2}_${1}"; printf '%s' "${!v:-}"; }
hp() { printf '%s:%s' "$(dep_var "$1" HOST)" "$(dep_var "$1" PORT)"; }
# The --depot-list entry (host:port/rid) of a depot.
dl() { printf '%s/%s' "$(hp "$1")" "$(dep_var "$1" RID)"; }
kind_of() { printf '%s' "${1%[0-9]}"; }

# note TEXT: the cell's reason (the last one wins); pass/fail/skip end the cell with it.
note() { printf '%s\n' "$*" >"$CELL/reason"; }
pass() { note "$@"; exit 0; }
fail() { note "$@"; exit 1; }
skip() { note "$@"; exit 77; }

# run CMD...: log the command and run it under the command timeout; its output goes to
# $CELL/out and $CELL/err (and to the cell's log).
run() {
    echo "+ $*"
    if declare -F "$1" >/dev/null; then # a function of this file: ibp_tool has its own timeout
        "$@" >"$CELL/out" 2>"$CELL/err"
    else
        timeout -k 5 "${CMD_TIMEOUT:-90}" "$@" >"$CELL/out" 2>"$CELL/err"
    fi
    local rc=$?
    cat "$CELL/out"
    sed 's/^/stderr: /' "$CELL/err"
    echo "= exit $rc"
    return $rc
}
# first_err: the first line of the last command's stderr (else stdout), for a reason.  The
# tools' notices that say nothing of the outcome are passed over: ibp_tool's about a
# capability on its command line (first), the plaintext line about depots that speak no TLS
# (last; LoCI and ACCRE never do).
NOTICE_RE='^ibp_tool: warning: a capability on the command line |^[a-z_]+: warning: .* speaks? no TLS \('
first_err() {
    local l
    l=$(grep -v -E '^\s*$' "$CELL/err" | grep -v -E "$NOTICE_RE" | head -1)
    [ -n "$l" ] || l=$(grep -v -E '^\s*$' "$CELL/err" | head -1)
    [ -n "$l" ] || l=$(grep -v -E '^\s*$' "$CELL/out" | tail -1)
    printf '%s' "${l:0:160}"
}
# why RC: "exit RC: first error line", or "timed out".
why() {
    case $1 in
    124|137) printf 'timed out (%ss)' "${CMD_TIMEOUT:-90}" ;;
    *) printf 'exit %s: %s' "$1" "$(first_err)" ;;
    esac
}
need_up() {
    local d
    for d in "$@"; do
        [ "$(dep_var "$d" UP)" = 1 ] || skip "depot $d not running: $(dep_var "$d" WHY)"
    done
}
# need_art NAME CELL: skip unless the artifact an earlier cell made is there.
need_art() { [ -e "$ART/$1" ] || skip "blocked: $2 did not pass"; }
same_file() { cmp -s "$1" "$2"; }
sha() { sha256sum "$1" | cut -c1-16; }
# ibp_tool for a depot kind: the version-0 flag where a cell sets V0_FOR_LOCI and the depot is
# a LoCI one (the SEND cells test the depots' SEND, not the client's version detection).
lns_ibp() { "$LNS_BIN/ibp_tool" --timeout 30 "$@"; }
ibp_for() {
    local d=$1
    shift
    if [ "${V0_FOR_LOCI:-0}" = 1 ] && [ "$(kind_of "$d")" = loci ]; then
        lns_ibp -0 "$@"
    else
        lns_ibp "$@"
    fi
}
# cap_of FILE READ|WRITE|MANAGE: that capability from ibp_tool allocate's output.
cap_of() { grep -E "/$2\$" "$1" | head -1; }

# ---------------------------------------------------------------------------------------------
# 1, 2: the reference test clients

# ACCRE ibp_test on two depots of a kind: PASS when it ends and no more tests fail than against
# two ACCRE depots (the reference; its failure count is in $ART/accre_ibp_test.failed).
cell_accre_ibp_test() {
    local kind=$1 flags=${2:-} a=${1}1 b=${1}2 n ref last nf
    [ -x "$ACCRE/bin/ibp_test" ] || skip "not built: $ACCRE/bin/ibp_test"
    need_up "$a" "$b"
    # shellcheck disable=SC2086
    run "$ACCRE/bin/ibp_test" $flags "$(dep_var $a HOST)" "$(dep_var $a PORT)" "$(dep_var $a RID)" \
        "$(dep_var $b HOST)" "$(dep_var $b PORT)" "$(dep_var $b RID)"
    local rc=$?
    n=$(sed -n 's/^Tests that failed: \([0-9]*\).*/\1/p' "$CELL/out" | tail -1)
    # Where it stopped: the test function of its last progress line; and how many checks
    # had printed FAILED by then.
    last=$(grep -E '^[a-z_]+: ' "$CELL/out" | tail -1 | cut -d: -f1)
    nf=$(grep -c FAILED "$CELL/out")
    if [ -z "$n" ]; then
        case $rc in
        124|137) fail "timed out after $CMD_TIMEOUT s in $last, $nf FAILED lines before" ;;
        134) fail "aborted (SIGABRT) in $last, $nf FAILED lines before" ;;
        *) fail "ended without a count (exit $rc) in $last, $nf FAILED lines before" ;;
        esac
    fi
    local failed
    failed=$(grep -E '^[a-z_]+:? FAILED' "$CELL/out" | cut -d' ' -f1 | tr -d : | sort -u | xargs)
    if [ "$kind" = accre ] && [ -z "$flags" ]; then
        echo "$n" >"$ART/accre_ibp_test.failed"
        pass "reference: $n failed${failed:+ ($failed)}"
    fi
    ref=$(cat "$ART/accre_ibp_test.failed" 2>/dev/null || echo 1)
    [ "$n" -le "$ref" ] && pass "$n failed (reference $ref)${failed:+ ($failed)}"
    fail "$n failed (reference $ref)${failed:+ ($failed)}"
}

# The LoCI 1.3.1 smoketest (ibp-test) on two depots of a kind.  It exits 1 both when it
# passes (it returns IBP_OK, 1) and at its first failure ("failed! ERRNO"), so the verdict is
# in its output: the final "trying to IBP_manage-decr, ... done" and no failure line.
cell_loci_ibp_test() {
    local a=${1}1 b=${1}2 last ignored=""
    [ -x "$LORS131/bin/ibp-test" ] || skip "not built: $LORS131/bin/ibp-test"
    need_up "$a" "$b"
    run "$LORS131/bin/ibp-test" "$(dep_var $a HOST)" "$(dep_var $a PORT)" \
        "$(dep_var $b HOST)" "$(dep_var $b PORT)"
    local rc=$?
    tr '\r' '\n' <"$CELL/err" >"$CELL/lines"
    last=$(grep -E 'trying|failed|faild|correct' "$CELL/lines" | tail -1 | cut -c1-120)
    grep -q 'Big cap test ignored' "$CELL/lines" && ignored=" (1G allocation refused: big-cap test skipped)"
    case $rc in
    124|137) fail "timed out after $CMD_TIMEOUT s; last: $last" ;;
    esac
    if ! grep -q -E 'failed!|faild|correct capability' "$CELL/lines" &&
        grep -q -E '^trying to IBP_manage-decr, \.\.\. done' "$CELL/lines"; then
        pass "smoketest passed$ignored"
    fi
    fail "${last:-exit $rc, no output}"
}

# ---------------------------------------------------------------------------------------------
# 3: lns tools on each kind of depot (ibp_tool on the first depot; lors_* on both) and on an
# exNode mixing all three kinds

# A LoCI allocation the tool cannot make by itself is made with -0 for the cells after it,
# so that each command is still tried.
cell_ibp_allocate() {
    local d=${1}1 rc
    need_up "$d"
    run lns_ibp allocate "$(hp $d)" 1M --duration 3600 --rid "$(dep_var $d RID)"
    rc=$?
    if [ $rc = 0 ] && [ -n "$(cap_of "$CELL/out" MANAGE)" ]; then
        cp "$CELL/out" "$ART/$1.caps"
        pass "3 capabilities"
    fi
    note "$(why $rc)"
    [ "$1" = loci ] && lns_ibp -0 allocate "$(hp $d)" 1M --duration 3600 >"$ART/$1.caps" 2>/dev/null
    [ $rc = 0 ] && fail "no capabilities in the output"
    fail "$(why $rc)"
}
cell_ibp_store() {
    need_art "$1.caps" "3.$1.ibp_tool.allocate"
    run lns_ibp store "$(cap_of "$ART/$1.caps" WRITE)" "$DATA_1M" || fail "$(why $?)"
    touch "$ART/$1.stored"
    pass "1 MiB stored"
}
cell_ibp_load() {
    need_art "$1.stored" "3.$1.ibp_tool.store"
    run lns_ibp load "$(cap_of "$ART/$1.caps" READ)" -o "$CELL/got" || fail "$(why $?)"
    same_file "$CELL/got" "$DATA_1M" || fail "bytes differ ($(stat -c %s "$CELL/got") bytes read)"
    pass "1 MiB read back, same bytes"
}
cell_ibp_probe() { # KIND READ|MANAGE
    need_art "$1.caps" "3.$1.ibp_tool.allocate"
    run lns_ibp probe "$(cap_of "$ART/$1.caps" "$2")" || fail "$(why $?)"
    pass "probe answered"
}
# ACCRE wants the password even for an inquiry (the error line says so without it).
cell_ibp_status() {
    local d=${1}1 pw=()
    need_up "$d"
    if [ "$1" = accre ]; then
        echo ibp >"$CELL/pw"
        pw=(--password-file "$CELL/pw")
    fi
    run lns_ibp status "$(hp $d)" --rid "$(dep_var $d RID)" "${pw[@]}" || fail "$(why $?)"
    pass "status answered${pw:+ (with the password: ACCRE wants it for an inquiry)}"
}

# The depots an exNode cell uses: both of a kind, or the first of each kind for "mixed".
depots_of() {
    case $1 in
    mixed) echo lns1 accre1 loci1 ;;
    *) echo "${1}1 ${1}2" ;;
    esac
}
depot_list() { local d l=""; for d in "$@"; do l="$l${l:+,}$(dl $d)"; done; printf '%s' "$l"; }
# maps_on XND DEPOT: the number of mappings of an exNode on that depot (its host:port).
maps_on() { grep -c -F "$(hp "$2")/" "$1"; }

cell_lns_upload() {
    local k=$1 ds d copies=2
    ds=$(depots_of "$k")
    # shellcheck disable=SC2086
    need_up $ds
    [ "$k" = mixed ] && copies=3
    # shellcheck disable=SC2086
    run "$LNS_BIN/lors_upload" --no-rc -q --depot-list "$(depot_list $ds)" -c $copies -F 4 \
        -d 1h -T 60s -o "$CELL/up.xnd" "$DATA" || fail "$(why $?)"
    cp "$CELL/up.xnd" "$ART/$k.xnd"
    for d in $ds; do
        [ "$(maps_on "$CELL/up.xnd" "$d")" -gt 0 ] || fail "exit 0 but no mapping on $d"
    done
    pass "$copies copies on $(echo $ds | tr ' ' ',')"
}
# download XND: lors_download it and compare with $DATA.
lns_download_check() {
    run "$LNS_BIN/lors_download" --no-rc --quiet -T 30s -o "$CELL/got" "$1" || fail "$(why $?)"
    same_file "$CELL/got" "$DATA" || fail "sha256 differs: $(sha "$CELL/got") != $(sha "$DATA")"
}
cell_lns_download() {
    need_art "$1.xnd" "3.$1.lors_upload"
    lns_download_check "$ART/$1.xnd"
    pass "sha256 matches"
}
# From a mixed exNode, only the copies on one kind of depot (the others trimmed off).
cell_lns_download_from() {
    local k=$2 d args=()
    need_art mixed.xnd "3.mixed.lors_upload"
    for d in lns1 accre1 loci1; do
        [ "$(kind_of $d)" = "$k" ] || args+=(--depot "$(hp $d)")
    done
    run "$LNS_BIN/lors_trim" --no-rc "${args[@]}" --force -o "$CELL/only.xnd" "$ART/mixed.xnd" ||
        fail "lors_trim to the $k copies: $(why $?)"
    lns_download_check "$CELL/only.xnd"
    pass "sha256 matches from the $k copies alone"
}
cell_lns_ls() {
    need_art "$1.xnd" "3.$1.lors_upload"
    run "$LNS_BIN/lors_ls" --no-rc -T 20s "$ART/$1.xnd" || fail "$(why $?)"
    grep -q -w dead "$CELL/out" && fail "exit 0 but a mapping is dead"
    pass "every mapping alive"
}
# Per kind: free the copies on the second depot (-d), leaving one copy.  Mixed: free the
# copies lors_augment added.
cell_lns_trim() {
    local k=$1 src out d
    if [ "$k" = mixed ]; then
        need_art mixed.aug.xnd "3.mixed.lors_augment"
        src=$ART/mixed.aug.xnd
        run "$LNS_BIN/lors_trim" --no-rc -d --depot "$(hp lns2)" --depot "$(hp accre2)" \
            --depot "$(hp loci2)" -o "$CELL/trim.xnd" "$src" || fail "$(why $?)"
        for d in lns2 accre2 loci2; do
            [ "$(maps_on "$CELL/trim.xnd" $d)" = 0 ] || fail "exit 0 but mappings left on $d"
        done
        pass "augmented copies removed and freed"
    fi
    need_art "$k.xnd" "3.$k.lors_upload"
    run "$LNS_BIN/lors_trim" --no-rc -d --depot "$(hp ${k}2)" -o "$CELL/trim.xnd" "$ART/$k.xnd" ||
        fail "$(why $?)"
    [ "$(maps_on "$CELL/trim.xnd" ${k}2)" = 0 ] || fail "exit 0 but mappings left on ${k}2"
    cp "$CELL/trim.xnd" "$ART/$k.trim.xnd"
    pass "copies on ${k}2 removed and freed"
}
# Per kind: copy the trimmed exNode's pieces back onto the second depot (SEND within the
# kind) and download them from there alone.  Mixed: a copy on the second depot of each kind.
cell_lns_augment() {
    local k=$1 src targets d
    if [ "$k" = mixed ]; then
        need_art mixed.xnd "3.mixed.lors_upload"
        src=$ART/mixed.xnd
        targets="lns2 accre2 loci2"
    else
        need_art "$k.trim.xnd" "3.$k.lors_trim"
        src=$ART/$k.trim.xnd
        targets=${k}2
    fi
    # shellcheck disable=SC2086
    need_up $targets
    local n
    n=$(echo $targets | wc -w)
    # shellcheck disable=SC2086
    run "$LNS_BIN/lors_augment" --no-rc -V -c "$n" --depot-list "$(depot_list $targets)" -d 1h \
        -T 60s -o "$CELL/aug.xnd" "$src" || fail "$(why $?)"
    for d in $targets; do
        [ "$(maps_on "$CELL/aug.xnd" $d)" -gt 0 ] || fail "exit 0 but no new mapping on $d"
    done
    cp "$CELL/aug.xnd" "$ART/$k.aug.xnd"
    local relayed
    relayed=$(grep -h -o -E '[0-9]+ relayed' "$CELL/out" "$CELL/err" | head -1)
    if [ "$k" != mixed ]; then
        run "$LNS_BIN/lors_trim" --no-rc --depot "$(hp ${k}1)" --force -o "$CELL/new.xnd" \
            "$CELL/aug.xnd" || fail "lors_trim to the new copies: $(why $?)"
        lns_download_check "$CELL/new.xnd"
    fi
    case $relayed in
    ''|0\ *) ;;
    *) fail "copies made, but ${relayed% *} bytes relayed through the client (SEND failed)" ;;
    esac
    pass "new copies on $(echo $targets | tr ' ' ','), depot to depot"
}
cell_lns_refresh() {
    local k=$1 src=$ART/$1.aug.xnd
    [ -e "$src" ] || src=$ART/$1.xnd
    need_art "$(basename "$src")" "3.$k.lors_upload"
    run "$LNS_BIN/lors_refresh" --no-rc -d 1h -o "$CELL/ref.xnd" "$src" || fail "$(why $?)"
    pass "every mapping extended by 1h"
}

# ---------------------------------------------------------------------------------------------
# 4: the original LoRS tools (lors131) on two depots of a kind, flags as in lors131.md.  The
# chain: upload 2 copies; download; ls; trim (-d) the copies on the second depot; augment the
# trimmed exNode back onto the second depot (IBP COPY, depot to depot) and download those new
# copies alone; refresh.

lors131_rc() { # DEPOT...: HOME and the xndrc, with these depots for DEPOT and ROUTE_DEPOT
    local d
    {
        echo "LBONE_SERVER 127.0.0.1 1"
        echo "E2E_ORDER none"
        echo "DURATION_DAYS 1"
        echo "STORAGE_TYPE HARD"
        for d in "$@"; do echo "DEPOT $(dep_var $d HOST) $(dep_var $d PORT)"; done
        for d in "$@"; do echo "ROUTE_DEPOT $(dep_var $d HOST) $(dep_var $d PORT)"; done
    } >"$CELL/xndrc"
    mkdir -p "$CELL/home"
    export HOME=$CELL/home
}
n_maps() { grep -c -E '<(exnode:)?mapping[ >]' "$1"; }
# lors131_indices XND DEPOT: the numbers lors_ls gives the exNode's mappings on DEPOT.
lors131_indices() {
    timeout 60 "$LORS131/bin/lors_ls" "$1" 2>/dev/null |
        awk -v hp="$(hp "$2")" '$1 ~ /^[0-9]+$/ && $6 == hp { printf "%s ", $1 }'
}
# lors131_trim XND DEPOT OUT [-d]: OUT is XND without the mappings on DEPOT.
lors131_trim() {
    local idx
    idx=$(lors131_indices "$1" "$2")
    [ -n "$idx" ] || { note "lors_ls shows no mapping on $2"; return 1; }
    # shellcheck disable=SC2086
    run "$LORS131/bin/lors_trim" ${4:-} -m "$1" $idx -o "$3" || { note "lors_trim: $(why $?)"; return 1; }
    [ "$(maps_on "$3" "$2")" = 0 ] || { note "lors_trim exit 0 but mappings left on $2"; return 1; }
}
lors131_download_check() {
    run "$LORS131/bin/lors_download" "$1" -o "$CELL/got" || fail "lors_download: $(why $?)"
    same_file "$CELL/got" "$DATA" || fail "sha256 differs: $(sha "$CELL/got") != $(sha "$DATA")"
}
# lors131_refuses_or_reads XND DATA NOTE: the original lors_download of an exNode of ours must
# read it right, or refuse it without writing a byte that is not the file's; the cell ends.
lors131_refuses_or_reads() {
    local rc size
    rm -f "$CELL/got"
    run "$LORS131/bin/lors_download" "$1" -o "$CELL/got"
    rc=$?
    [ "$rc" = 0 ] && same_file "$CELL/got" "$2" && pass "read it right"
    size=$(stat -c %s "$CELL/got" 2>/dev/null || echo 0)
    if [ "$size" -gt 0 ]; then
        cmp -s -n "$size" "$CELL/got" "$2" || fail "exit $rc, and $size bytes written that are not the file's"
    fi
    [ "$rc" != 0 ] || fail "exit 0, but only $size bytes of the file"
    pass "refused (exit $rc; $3), nothing written that is not the file's ($size bytes)"
}
# An erasure-coded exNode (lns lors_upload --ec) given to the original lors_download: it must
# refuse it or read it right, never write bytes that are not the file's (docs/exnode.md).
cell_lors131_ec() { # K+M DEPOT...
    local ec=$1
    shift
    need_up "$@"
    run "$LNS_BIN/lors_upload" --no-rc -q --depot-list "$(depot_list "$@")" --ec "$ec" \
        --ec-piece 64K -d 1h -T 60s -o "$CELL/ec.xnd" "$DATA" || fail "lns lors_upload --ec: $(why $?)"
    lns_download_check "$CELL/ec.xnd"
    lors131_rc "$@"
    # the control: the same tools read a replicated exNode of ours on the same depots
    run "$LNS_BIN/lors_upload" --no-rc -q --depot-list "$(depot_list "$@")" -c 2 -d 1h -T 60s \
        -o "$CELL/plain.xnd" "$DATA" || fail "lns lors_upload -c 2: $(why $?)"
    lors131_download_check "$CELL/plain.xnd"
    lors131_refuses_or_reads "$CELL/ec.xnd" "$DATA" "a replicated exNode of ours read right"
}
# 6: end-to-end functions across the two worlds (issue 35; docs/exnode.md, "Functions" and
# "The LoRS 1.3.1 functions").  Each case is a set of the original lors_upload's e2e flags,
# applied in that order ("default": no flag and no E2E_ORDER line, the built-in DES then
# checksum).  The original uploads the file to its own depots (loci1, loci2); then every lns
# reader must give the file's bytes or refuse it (exit 3 or HTTP 502, one line naming the
# function, nothing written that is not the file's), and must read it when the original
# reads it back itself.  The reverse: lns's e2e files given to the original tools, which must
# refuse them or read them right.
# (the -z cases last: without gdb the original's broken -z may leave its depots in a state
# where later uploads fail)
E2E_CASES="k x k,x x,k e a k,e e,k k,a a,k x,e k,x,e default z k,z z,k x,z z,x"
e2e_flags() { # CASE: the lors_upload flags
    [ "$1" = default ] && return
    local f
    for f in ${1//,/ }; do printf -- '-%s ' "$f"; done
}
lors131_e2e_rc() { # CASE DEPOT...: HOME and an xndrc; E2E_ORDER none unless CASE is default
    local c=$1 d
    shift
    {
        echo "LBONE_SERVER 127.0.0.1 1"
        [ "$c" = default ] || echo "E2E_ORDER none"
        echo "DURATION_DAYS 1"
        echo "STORAGE_TYPE HARD"
        for d in "$@"; do echo "DEPOT $(dep_var $d HOST) $(dep_var $d PORT)"; done
    } >"$CELL/xndrc"
    mkdir -p "$CELL/home"
    export HOME=$CELL/home
}
# gdb_zlib_cmds FUNCTION: gdb commands that run the program with zlib's FUNCTION given the
# output length the original never sets (compress: room for the stream; uncompress: any).
gdb_zlib_cmds() {
    local v='sourceLen + sourceLen/10 + 13'
    [ "$1" = uncompress ] && v=0xffffffff
    printf '%s\n' 'set pagination off' 'set confirm off' 'set breakpoint pending on' \
        "break $1" commands silent "set var *destLen = $v" continue end run 'quit $_exitcode' \
        >"$CELL/gdb_$1"
}
cell_e2e_orig_upload() { # CASE
    local c=$1 try flags gdb_dl=()
    [ -x "$LORS131/bin/lors_upload" ] || skip "not built: $LORS131/bin/lors_upload"
    need_up loci1 loci2
    lors131_e2e_rc "$c" loci1 loci2
    flags=$(e2e_flags "$c")
    # -z: the original never sets zlib's output length; under gdb, which does, its own code
    # writes (and reads) the layout, so that the lns readers meet real zlib chains.  (Not
    # tried without gdb first: its failed uploads leave allocations that fill the depots.)
    local zgdb=0
    [[ ,$c, == *,z,* ]] && command -v gdb >/dev/null && zgdb=1
    for try in 1 2 3; do
        [ $zgdb = 1 ] && break
        rm -f "$CELL/up.xnd"
        # shellcheck disable=SC2086
        run "$LORS131/bin/lors_upload" "$DATA_1M" --xndrc="$CELL/xndrc" --depot-list $flags \
            -E 64K -c 2 -F 2 -o "$CELL/up.xnd" && [ -s "$CELL/up.xnd" ] && break
    done
    if [ $zgdb = 1 ]; then
        gdb_zlib_cmds compress
        gdb_zlib_cmds uncompress
        rm -f "$CELL/up.xnd"
        # shellcheck disable=SC2086
        run gdb -q -batch -x "$CELL/gdb_compress" --args "$LORS131/bin/lors_upload" "$DATA_1M" \
            --xndrc="$CELL/xndrc" --depot-list $flags -E 64K -c 2 -F 2 -o "$CELL/up.xnd"
        gdb_dl=(gdb -q -batch -x "$CELL/gdb_uncompress" --args)
    fi
    [ -s "$CELL/up.xnd" ] || fail "the original's upload fails: $(grep -v -E '^\s*$' "$CELL/err" | tail -1 | cut -c1-120)"
    cp "$CELL/up.xnd" "$ART/e2e.$c.xnd"
    rm -f "$CELL/got"
    if run "${gdb_dl[@]}" "$LORS131/bin/lors_download" "$CELL/up.xnd" -o "$CELL/got" &&
        same_file "$CELL/got" "$DATA_1M"; then
        echo yes >"$ART/e2e.$c.orig"
    else
        echo no >"$ART/e2e.$c.orig"
    fi
    pass "uploaded with ${flags:-the default order}${gdb_dl:+ (under gdb, which sets the zlib lengths)}; the original reads it back${gdb_dl:+ under gdb}: $(cat "$ART/e2e.$c.orig")"
}
# e2e_judge CASE RC FILE WHAT: lns gave RC and FILE; pass if the bytes are the file's, or if
# it refused (exit 3 or an HTTP 502 with one line naming a function) and wrote nothing that is
# not the file's; fail otherwise, and when it refused a file the original reads back.
e2e_judge() {
    local c=$1 rc=$2 got=$3 what=$4 size line
    size=$(stat -c %s "$got" 2>/dev/null || echo 0)
    if [ "$rc" = 0 ] && same_file "$got" "$DATA_1M"; then
        pass "$what: the file's bytes (the original reads it back: $(cat "$ART/e2e.$c.orig"))"
    fi
    if [ "$size" -gt 0 ] && ! cmp -s -n "$size" "$got" "$DATA_1M"; then
        fail "$what: exit $rc, and $size bytes written that are not the file's"
    fi
    [ "$rc" = 0 ] && fail "$what: exit 0 with $size bytes of the file's $(stat -c %s "$DATA_1M")"
    line=$(grep -v -E '^\s*$' "$CELL/err" | head -1)
    [ "$rc" = 3 ] || [ "$rc" = 502 ] || fail "$what: exit $rc: ${line:0:160}"
    grep -q -E 'function|e2e_blocksize' "$CELL/err" || fail "$what: refused without naming the function: ${line:0:160}"
    [ "$(cat "$ART/e2e.$c.orig")" = yes ] && fail "$what: refused what the original reads back: ${line:0:160}"
    pass "$what: refused ($rc): ${line:0:120}"
}
cell_e2e_lns_download() { # CASE
    need_art "e2e.$1.xnd" "6.orig-$1.upload"
    rm -f "$CELL/got"
    run "$LNS_BIN/lors_download" --no-rc --quiet -T 30s -o "$CELL/got" "$ART/e2e.$1.xnd"
    e2e_judge "$1" $? "$CELL/got" "lors_download"
}
cell_e2e_lns_pipe() { # CASE: to a pipe, as lors_play reads it
    need_art "e2e.$1.xnd" "6.orig-$1.upload"
    run sh -c "'$LNS_BIN/lors_download' --no-rc --quiet -T 30s -o - '$ART/e2e.$1.xnd' > '$CELL/got'"
    e2e_judge "$1" $? "$CELL/got" "lors_download -o -"
}
cell_e2e_lns_serve() { # CASE: GET through lors_serve (the random-access reader)
    local code pid i port
    need_art "e2e.$1.xnd" "6.orig-$1.upload"
    command -v curl >/dev/null || skip "no curl"
    mkdir -p "$CELL/dir"
    cp "$ART/e2e.$1.xnd" "$CELL/dir/f.xnd"
    "$LNS_BIN/lors_serve" --no-rc -q --port 0 --port-file "$CELL/port" "$CELL/dir" \
        2>"$CELL/serve.log" &
    pid=$!
    for i in $(seq 100); do [ -s "$CELL/port" ] && break; sleep 0.05; done
    port=$(cat "$CELL/port" 2>/dev/null)
    [ -n "$port" ] || { kill $pid; fail "lors_serve did not start: $(head -1 "$CELL/serve.log")"; }
    code=$(curl -s -o "$CELL/got" -w '%{http_code}' "http://127.0.0.1:$port/f")
    kill $pid
    wait $pid 2>/dev/null
    echo "+ GET /f: HTTP $code"
    if [ "$code" = 200 ]; then
        e2e_judge "$1" 0 "$CELL/got" "lors_serve GET"
    fi
    cp "$CELL/got" "$CELL/err" 2>/dev/null # a refusal's body is its one line
    [ "$code" = 502 ] || { rm -f "$CELL/got"; fail "lors_serve GET: HTTP $code: $(head -c 160 "$CELL/err")"; }
    rm -f "$CELL/got"
    e2e_judge "$1" 502 "$CELL/got" "lors_serve GET"
}
cell_e2e_lns_keep() { # CASE: the keeper leaves every mapping it does not read as it was
    local c=$1 before after
    need_art "e2e.$c.xnd" "6.orig-$c.upload"
    need_up lns1 lns2
    cp "$ART/e2e.$c.xnd" "$CELL/k.xnd"
    before=$(grep -o '<exnode:read>[^<]*' "$CELL/k.xnd" | sort)
    run "$LNS_BIN/lors_keep" --no-rc -q --once -c 2 --depot-list "$(depot_list lns1 lns2)" \
        -d 1h -T 30s --state "$CELL/keep.db" "$CELL/k.xnd"
    after=$(grep -o '<exnode:read>[^<]*' "$CELL/k.xnd" | sort)
    [ -n "$before" ] && [ "$(comm -23 <(echo "$before") <(echo "$after") | wc -l)" = 0 ] ||
        fail "the keeper dropped a mapping of the original's"
    rm -f "$CELL/got"
    run "$LNS_BIN/lors_download" --no-rc --quiet -T 30s -o "$CELL/got" "$CELL/k.xnd"
    e2e_judge "$c" $? "$CELL/got" "after lors_keep, lors_download"
}
# The original's other tools on an lns e2e file: whatever exNode they write, lns must read it
# right and the original must still refuse it (their exit codes are recorded: the original's
# libexnode mishandles lns's nested metadata and may crash after writing).
cell_e2e_lns_orig_tools() { # FLAGS...
    local rcs=""
    need_up lns1 lns2
    [ -x "$LORS131/bin/lors_augment" ] || skip "not built: $LORS131/bin/lors_augment"
    run env LNS_KEY=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff \
        "$LNS_BIN/lors_upload" --no-rc -q --depot-list "$(depot_list lns1)" "$@" -c 1 \
        -d 1h -T 60s -o "$CELL/lns.xnd" "$DATA_1M" || fail "lns lors_upload $*: $(why $?)"
    lors131_e2e_rc none lns2
    echo "ROUTE_DEPOT $(dep_var lns2 HOST) $(dep_var lns2 PORT)" >>"$CELL/xndrc"
    run "$LORS131/bin/lors_ls" "$CELL/lns.xnd"
    rcs="ls $?"
    cp "$CELL/lns.xnd" "$CELL/r.xnd"
    run "$LORS131/bin/lors_refresh" -d 2h "$CELL/r.xnd"
    rcs="$rcs, refresh $?"
    rm -f "$CELL/a.xnd"
    run "$LORS131/bin/lors_augment" "$CELL/lns.xnd" --xndrc="$CELL/xndrc" --depot-list -c 1 \
        -o "$CELL/a.xnd"
    rcs="$rcs, augment $?"
    local x
    for x in r a; do
        [ -s "$CELL/$x.xnd" ] || continue
        rm -f "$CELL/got"
        run env LNS_KEY=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff \
            "$LNS_BIN/lors_download" --no-rc --quiet -T 30s -o "$CELL/got" "$CELL/$x.xnd" ||
            fail "($rcs) lns cannot read what the original wrote ($x.xnd): $(why $?)"
        same_file "$CELL/got" "$DATA_1M" || fail "($rcs) $x.xnd: lns reads other bytes"
        rm -f "$CELL/got"
        run "$LORS131/bin/lors_download" "$CELL/$x.xnd" -o "$CELL/got"
        [ "$?" != 0 ] || same_file "$CELL/got" "$DATA_1M" || fail "($rcs) the original reads $x.xnd as other bytes"
    done
    [ -s "$CELL/a.xnd" ] || pass "exit codes: $rcs; augment wrote no exNode"
    pass "exit codes: $rcs; lns reads what refresh and augment wrote, the original still refuses it"
}
# The reverse: an lns e2e file (lns depots) given to the original lors_download.
cell_e2e_lns_to_orig() { # NAME FLAGS...
    shift
    need_up lns1 lns2
    [ -x "$LORS131/bin/lors_download" ] || skip "not built: $LORS131/bin/lors_download"
    run env LNS_KEY=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff \
        "$LNS_BIN/lors_upload" --no-rc -q --depot-list "$(depot_list lns1 lns2)" "$@" -c 2 \
        -d 1h -T 60s -o "$CELL/lns.xnd" "$DATA_1M" || fail "lns lors_upload $*: $(why $?)"
    lors131_e2e_rc none lns1 lns2
    lors131_refuses_or_reads "$CELL/lns.xnd" "$DATA_1M" "lors_upload $*"
}
cell_lors131_upload() {
    local k=$1 d
    [ -x "$LORS131/bin/lors_upload" ] || skip "not built: $LORS131/bin/lors_upload"
    need_up ${k}1 ${k}2
    lors131_rc ${k}1 ${k}2
    run "$LORS131/bin/lors_upload" "$DATA" --xndrc="$CELL/xndrc" --depot-list -n -c 2 -F 4 \
        -o "$CELL/up.xnd" || fail "$(why $?)"
    [ -s "$CELL/up.xnd" ] || fail "exit 0 but no exNode"
    cp "$CELL/up.xnd" "$ART/lors131.$k.xnd"
    for d in ${k}1 ${k}2; do
        [ "$(maps_on "$CELL/up.xnd" $d)" -gt 0 ] || fail "exit 0 but no mapping on $d"
    done
    pass "$(n_maps "$CELL/up.xnd") mappings on ${k}1,${k}2"
}
cell_lors131_download() {
    need_art "lors131.$1.xnd" "4.$1.lors_upload"
    lors131_rc ${1}1 ${1}2
    lors131_download_check "$ART/lors131.$1.xnd"
    pass "sha256 matches"
}
cell_lors131_ls() {
    local k=$1 d
    need_art "lors131.$k.xnd" "4.$k.lors_upload"
    lors131_rc ${k}1 ${k}2
    run "$LORS131/bin/lors_ls" "$ART/lors131.$k.xnd" || fail "$(why $?)"
    for d in ${k}1 ${k}2; do
        grep -q -F " $(hp $d) " "$CELL/out" || fail "exit 0 but no mapping listed on $d"
    done
    pass "$(grep -c -E '^ *[0-9]+ ' "$CELL/out") mappings listed"
}
cell_lors131_trim() {
    local k=$1
    need_art "lors131.$k.xnd" "4.$k.lors_upload"
    lors131_rc ${k}1 ${k}2
    lors131_trim "$ART/lors131.$k.xnd" ${k}2 "$CELL/trim.xnd" -d || fail "$(tail -1 "$CELL/reason")"
    grep -q -i -E 'error|fail' "$CELL/out" "$CELL/err" &&
        fail "exit 0 but: $(grep -h -i -E 'error|fail' "$CELL/out" "$CELL/err" | head -1 | cut -c1-100)"
    cp "$CELL/trim.xnd" "$ART/lors131.$k.trim.xnd"
    pass "mappings on ${k}2 removed and freed"
}
cell_lors131_augment() {
    local k=$1 n
    need_art "lors131.$k.trim.xnd" "4.$k.lors_trim"
    lors131_rc ${k}2
    run "$LORS131/bin/lors_augment" "$ART/lors131.$k.trim.xnd" --xndrc="$CELL/xndrc" --depot-list \
        -c 1 -o "$CELL/aug.xnd" || fail "$(why $?)"
    grep -q 'COMMIT' "$CELL/out" "$CELL/err" &&
        fail "a copy failed: $(grep -h COMMIT "$CELL/out" "$CELL/err" | head -1 | cut -c1-100)"
    n=$(maps_on "$CELL/aug.xnd" ${k}2)
    [ "$n" -gt 0 ] || fail "exit 0 but no new mapping on ${k}2"
    lors131_trim "$CELL/aug.xnd" ${k}1 "$CELL/new.xnd" || fail "$(tail -1 "$CELL/reason")"
    lors131_download_check "$CELL/new.xnd"
    pass "$n new mappings on ${k}2, sha256 of them alone matches"
}
cell_lors131_refresh() {
    need_art "lors131.$1.xnd" "4.$1.lors_upload"
    lors131_rc ${1}1 ${1}2
    cp "$ART/lors131.$1.xnd" "$CELL/r.xnd"
    run "$LORS131/bin/lors_refresh" -d 2h "$CELL/r.xnd" || fail "$(why $?)"
    grep -q -i -E 'error|fail' "$CELL/out" "$CELL/err" &&
        fail "exit 0 but: $(grep -h -i -E 'error|fail' "$CELL/out" "$CELL/err" | head -1 | cut -c1-100)"
    pass "extended by 2h"
}

# ---------------------------------------------------------------------------------------------
# 5: SEND from the first depot of kind S to the second of kind T (ibp_tool copy), then the
# bytes read back.  Only the depots' SEND is under test here, so the client is kept out of the
# way: version 0 towards LoCI depots, and explicit offsets and lengths (no PROBE with a read
# capability, which ACCRE refuses; part 3 counts those).
cell_send() {
    local s=${1}1 t=${2}2 rc
    need_up "$s" "$t"
    export V0_FOR_LOCI=1
    ibp_for $s allocate "$(hp $s)" 1M --duration 3600 --rid "$(dep_var $s RID)" >"$CELL/src.caps" ||
        fail "setup: allocate on $s failed"
    ibp_for $t allocate "$(hp $t)" 1M --duration 3600 --rid "$(dep_var $t RID)" >"$CELL/dst.caps" ||
        fail "setup: allocate on $t failed"
    ibp_for $s store "$(cap_of "$CELL/src.caps" WRITE)" "$DATA_1M" || fail "setup: store on $s failed"
    run ibp_for $s copy "$(cap_of "$CELL/src.caps" READ)" "$(cap_of "$CELL/dst.caps" WRITE)" 0 1048576
    rc=$?
    [ $rc = 0 ] || fail "copy: $(why $rc)"
    ibp_for $t load "$(cap_of "$CELL/dst.caps" READ)" 0 1048576 -o "$CELL/got" ||
        fail "copy said ok; load from $t failed"
    same_file "$CELL/got" "$DATA_1M" ||
        fail "copy said ok; $t holds $(stat -c %s "$CELL/got") bytes, not the 1 MiB sent"
    pass "1 MiB copied, same bytes"
}

# ---------------------------------------------------------------------------------------------
if [ "${1:-}" = --cell ]; then
    CELL=$2
    shift 2
    cd "$CELL" || exit 1
    "$@"
    exit $?
fi

# ---------------------------------------------------------------------------------------------
# The run: find the programs, start the depots, run the cells, print the table.

[ $# -eq 1 ] && [ -x "$1/ibp_depot" ] || {
    echo "usage: $0 LNS_BIN_DIR (with ibp_depot, ibp_tool, lors_*; make first)" >&2
    exit 2
}
LNS_BIN=$(cd "$1" && pwd)
REPO=$(cd "$(dirname "$SELF")/../.." && pwd)
PREFIX=${LNS_INTEROP_PREFIX:-/work/interop}
ACCRE=$PREFIX/accre
LORS131=$PREFIX/lors131
OUT=${LNS_INTEROP_OUT:-$REPO/build/interop}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/logs/*.log
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lns-interop.XXXXXX")
ART=$WORK/art
mkdir -p "$ART" "$WORK/cells"
RESULTS=$OUT/results.tsv
: >"$RESULTS"
# shellcheck disable=SC2206
HOSTS=(${LNS_INTEROP_HOSTS:-127.0.0.11 127.0.0.12 127.0.0.13 127.0.0.14 127.0.0.15 127.0.0.16})
DEPOTS=(lns1 lns2 accre1 accre2 loci1 loci2)
export LNS_BIN ACCRE LORS131 ART WORK
for ((i = 0; i < 6; i++)); do
    export "HOST_${DEPOTS[i]}=${HOSTS[i]}" "UP_${DEPOTS[i]}=0"
done

cleanup() {
    local rc=$? d p
    set +e
    [ -n "${CELL_PID:-}" ] && kill "$CELL_PID" 2>/dev/null && wait "$CELL_PID" 2>/dev/null
    for d in "${DEPOTS[@]}"; do
        p=$(dep_var $d PID)
        [ -n "$p" ] && kill "$p" 2>/dev/null
    done
    for d in "${DEPOTS[@]}"; do
        p=$(dep_var $d PID)
        [ -n "$p" ] || continue
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
        kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    if [ "${LNS_INTEROP_KEEP:-0}" = 1 ]; then
        echo "interop: scratch directory kept: $WORK"
    else
        rm -rf "$WORK"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A port no socket uses, below the ephemeral range (the LoCI depot binds 0.0.0.0 without
# SO_REUSEADDR, so a port that an outgoing connection holds would fail too).
free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 12000))
        ss -Htan "sport = :$p" 2>/dev/null | grep -q . || { echo $p; return; }
    done
}
# wait_listen HOST PORT PID: until a connection is accepted (10 s), or the process ended.
wait_listen() {
    local i
    for ((i = 0; i < 100; i++)); do
        kill -0 "$3" 2>/dev/null || return 1
        (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
# up NAME PID PORT RID: record a started depot, or why it is not up.
up() {
    export "PID_$1=$2" "PORT_$1=$3" "RID_$1=$4"
    if wait_listen "$(dep_var $1 HOST)" "$3" "$2"; then
        export "UP_$1=1"
        echo "interop: $1 ($(dep_var $1 KIND_TEXT)) on $(dep_var $1 HOST):$3, pid $2"
    else
        export "WHY_$1=did not start (see $WORK/$1/stdout)"
        echo "interop: $1 did not start; last lines of its output:" >&2
        tail -5 "$WORK/$1/stdout" "$WORK/$1"/log/*.log 2>/dev/null >&2
    fi
}

start_lns() { # NAME: ibp_depot on its host, a port the kernel picks
    local d=$1 dir=$WORK/$1 host i
    host=$(dep_var $d HOST)
    mkdir -p "$dir/res"
    "$LNS_BIN/ibp_depot" --listen "$host" --port 0 --port-file "$dir/port" --public-host "$host" \
        --resource "$dir/res,hard=4G,soft=4G,max-duration=30d" --admin-password ibp \
        --log-file "$dir/depot.log" >"$dir/stdout" 2>&1 </dev/null &
    local pid=$!
    for ((i = 0; i < 100; i++)); do
        [ -s "$dir/port" ] && break
        sleep 0.1
    done
    export "KIND_TEXT_$d=lns ibp_depot"
    up "$d" $pid "$(cat "$dir/port" 2>/dev/null || echo 0)" 0
}

start_accre() { # NAME: ibp_server with one 8 GiB resource, RID 1 (accre.md)
    local d=$1 dir=$WORK/$1 host port
    host=$(dep_var $d HOST)
    port=$(free_port)
    accre_conf "$dir" "$host" "$port" "$ACCRE/bin/mkfs_resource" || {
        export "WHY_$d=mkfs_resource failed"
        return
    }
    (cd "$dir" && exec "$ACCRE/bin/ibp_server" "$dir/ibp.cfg") >>"$dir/stdout" 2>&1 </dev/null &
    export "KIND_TEXT_$d=ACCRE ibp_server"
    up "$d" $! "$port" 1
}

start_loci() { # NAME: ibp_server_mt, 4000 MB, its own host name in the capabilities (lors131.md)
    local d=$1 dir=$WORK/$1 host port
    host=$(dep_var $d HOST)
    port=$(free_port)
    mkdir -p "$dir/data"
    cat >"$dir/ibp.cfg" <<EOF
SOFTSIZE 4000m
HARDSIZE 4000m
MINFREESIZE 10m
CFGPORT $port
SOFTDIR $dir/data
HARDDIR $dir/data
MAXDURATION 10
PASSWORD ibp
HOSTNAME $host
THREADS 8
MAXTHREADS 64
EOF
    "$LORS131/bin/ibp_server_mt" -cf "$dir/" >"$dir/stdout" 2>&1 </dev/null &
    export "KIND_TEXT_$d=LoCI 1.3.1 ibp_server_mt"
    up "$d" $! "$port" 0
}

# start3 FUNC NAME: start a depot on a port picked here; on a failure try twice more.
start3() {
    local i
    for i in 1 2 3; do
        "$1" "$2"
        [ "$(dep_var $2 UP)" = 1 ] && return
        kill "$(dep_var $2 PID)" 2>/dev/null
        rm -rf "${WORK:?}/$2"
    done
}

MISSING=()
have() { # LABEL FILE...: whether every file is an executable; else list them in MISSING
    local f ok=0
    for f in "${@:2}"; do
        [ -x "$f" ] || { MISSING+=("$1: $f"); ok=1; }
    done
    return $ok
}
for d in lns1 lns2; do start_lns $d; done
if have ACCRE "$ACCRE/bin/ibp_server" "$ACCRE/bin/mkfs_resource"; then
    for d in accre1 accre2; do start3 start_accre $d; done
else
    export WHY_accre1="ACCRE not built" WHY_accre2="ACCRE not built"
fi
if have LoCI "$LORS131/bin/ibp_server_mt"; then
    for d in loci1 loci2; do start3 start_loci $d; done
else
    export WHY_loci1="LoCI 1.3.1 not built" WHY_loci2="LoCI 1.3.1 not built"
fi
have ACCRE "$ACCRE/bin/ibp_test"
have LoRS "$LORS131/bin/ibp-test" "$LORS131/bin/lors_upload" "$LORS131/bin/lors_download" \
    "$LORS131/bin/lors_ls" "$LORS131/bin/lors_augment" "$LORS131/bin/lors_trim" \
    "$LORS131/bin/lors_refresh"
if [ ${#MISSING[@]} -gt 0 ]; then
    echo "interop: not built (their cells are skipped):" >&2
    printf '  %s\n' "${MISSING[@]}" >&2
    cat >&2 <<EOF
  Build them (docs/interop.md): bring the sources with the search tool's fetch
  (github:accre/lstore, github:datalogistics/dlt-lors), then
    make interop-build ACCRE_MIRROR=/work/.mirror/accre+lstore/repo \\
                       LORS_MIRROR=/work/.mirror/datalogistics+dlt-lors/repo
  (or ../shared/anchors/build-accre.sh MIRROR $ACCRE and build-lors131.sh MIRROR $LORS131)
EOF
fi
# A fresh LoCI depot may answer -47 (recovering) for a moment; let it settle.
[ "$UP_loci1$UP_loci2" != 00 ] && sleep 2

DATA=$WORK/data.bin
DATA_1M=$WORK/data1m.bin
head -c $((3 * 1024 * 1024 + 12345)) /dev/urandom >"$DATA"
head -c $((1024 * 1024)) /dev/urandom >"$DATA_1M"
export DATA DATA_1M

# restart_dead: a depot that died during a cell is named in that cell's result and restarted
# on the same port and directory, so that later cells still have it.
DIED=""
check_depots() {
    local d p
    DIED=""
    for d in "${DEPOTS[@]}"; do
        [ "$(dep_var $d UP)" = 1 ] || continue
        p=$(dep_var $d PID)
        if kill -0 "$p" 2>/dev/null; then
            (exec 3<>"/dev/tcp/$(dep_var $d HOST)/$(dep_var $d PORT)") 2>/dev/null ||
                DIED="$DIED $d(refuses connections)"
            continue
        fi
        wait "$p" 2>/dev/null
        DIED="$DIED $d(exit $?)"
        echo "interop: $d died; restarting it" >&2
        export "UP_$d=0"
        case $d in
        lns*) rm -f "$WORK/$d/port"; restart_lns "$d" ;;
        accre*) (cd "$WORK/$d" && exec "$ACCRE/bin/ibp_server" "$WORK/$d/ibp.cfg") \
                    >>"$WORK/$d/stdout" 2>&1 </dev/null &
                up "$d" $! "$(dep_var $d PORT)" 1 ;;
        loci*) "$LORS131/bin/ibp_server_mt" -cf "$WORK/$d/" >>"$WORK/$d/stdout" 2>&1 </dev/null &
               up "$d" $! "$(dep_var $d PORT)" 0; sleep 2 ;;
        esac
    done
}
restart_lns() {
    local d=$1 dir=$WORK/$1 host
    host=$(dep_var $d HOST)
    "$LNS_BIN/ibp_depot" --listen "$host" --port "$(dep_var $d PORT)" --public-host "$host" \
        --resource "$dir/res,hard=4G,soft=4G,max-duration=30d" --admin-password ibp \
        --log-file "$dir/depot.log" >>"$dir/stdout" 2>&1 </dev/null &
    up "$d" $! "$(dep_var $d PORT)" 0
}

# stable TEXT: the text with each depot's address replaced by its name and the scratch
# directory by WORK, so that two runs' tables differ only where results do.
stable() {
    local t=${1//"$WORK"/WORK} d
    for d in "${DEPOTS[@]}"; do
        [ -n "$(dep_var $d PORT)" ] && t=${t//"$(hp $d)"/$d}
    done
    printf '%s' "$t"
}

# Failures that are the real programs' own behaviour, which lns cannot change: the cell's
# reason must match the pattern (else it stays a FAIL), and the result is XFAIL with the
# explanation (docs/interop.md, "Expected failures", has each in full).
declare -A XFAIL_PAT XFAIL_WHY
XFAIL_PAT[2.ibp-test.lns]='IBP_allocate .*failed! -22$'
XFAIL_WHY[2.ibp-test.lns]='the smoketest stops at its CIRQ allocation: lns refuses the queue types (-22) by decision'
XFAIL_PAT[5.send.accre-to-loci]='SEND .*(cannot connect|-13)'
XFAIL_WHY[5.send.accre-to-loci]="ACCRE's depot SENDs in version 1 only; LoCI 1.3.1 drops a version-1 line, ACCRE answers -13 (lors_augment relays instead)"
XFAIL_PAT[3.accre.ibp_tool.probe-read]='PROBE \(with a READ capability'
XFAIL_WHY[3.accre.ibp_tool.probe-read]='ACCRE 1.4 answers PROBE only for a MANAGE capability (-4); the error line says so'
for c in z k,z z,k x,z z,x; do
    XFAIL_PAT[6.orig-$c.upload]="the original's upload fails: "
    XFAIL_WHY[6.orig-$c.upload]="the original's -z compresses with an uninitialized output length: on x86_64 its upload fails (\"CompressMapping: compression function error\") or stores other bytes"
done

NPASS=0 NFAIL=0 NSKIP=0 NXFAIL=0
# cell ID TIMEOUT FUNCTION ARGS...
cell() {
    local id=$1 t=$2 dir res reason rc
    shift 2
    if [ -n "${LNS_INTEROP_ONLY:-}" ] && ! [[ $id =~ $LNS_INTEROP_ONLY ]]; then return; fi
    dir=$WORK/cells/$id
    mkdir -p "$dir"
    : >"$dir/reason"
    CMD_TIMEOUT=$((t - 10)) timeout -k 5 "$t" "$SELF" --cell "$dir" "$@" >"$OUT/logs/$id.log" 2>&1 &
    CELL_PID=$!
    wait $CELL_PID
    rc=$?
    CELL_PID=
    reason=$(tail -1 "$dir/reason")
    case $rc in
    0) res=PASS ;;
    77) res=SKIP ;;
    124|137) res=FAIL reason="cell timed out (${t}s)${reason:+; $reason}" ;;
    *) res=FAIL ;;
    esac
    check_depots
    [ -n "$DIED" ] && res=FAIL reason="depot down:$DIED; $reason"
    [ -n "$reason" ] || reason="(exit $rc, no reason given; see logs/$id.log)"
    reason=$(printf '%s' "$reason" | tr '\t|' ' /' | tr -s ' ')
    reason=$(stable "$reason")
    if [ $res = FAIL ] && [ -n "${XFAIL_PAT[$id]:-}" ] && [[ $reason =~ ${XFAIL_PAT[$id]} ]]; then
        res=XFAIL reason="expected: ${XFAIL_WHY[$id]} (docs/interop.md); seen: $reason"
    fi
    case $res in
    PASS) NPASS=$((NPASS + 1)) ;; FAIL) NFAIL=$((NFAIL + 1)) ;; SKIP) NSKIP=$((NSKIP + 1)) ;;
    XFAIL) NXFAIL=$((NXFAIL + 1)) ;;
    esac
    printf '%s\t%s\t%s\n' "$id" "$res" "$reason" >>"$RESULTS"
    printf '%-40s %-5s  %s\n' "$id" "$res" "$reason"
}

echo "interop: cells (logs in $OUT/logs)"
# 1. ACCRE's ibp_test: the reference on ACCRE depots first (its failure count is the bar).
cell 1.ibp_test.accre 300 cell_accre_ibp_test accre
cell 1.ibp_test.lns 300 cell_accre_ibp_test lns
cell 1.ibp_test-no-async.lns 300 cell_accre_ibp_test lns -no-async
# 2. The LoCI 1.3.1 smoketest.
cell 2.ibp-test.loci 120 cell_loci_ibp_test loci
cell 2.ibp-test.lns 120 cell_loci_ibp_test lns
# 3. lns tools.
for k in lns accre loci; do
    cell 3.$k.ibp_tool.allocate 60 cell_ibp_allocate $k
    cell 3.$k.ibp_tool.store 60 cell_ibp_store $k
    cell 3.$k.ibp_tool.load 60 cell_ibp_load $k
    cell 3.$k.ibp_tool.probe-manage 60 cell_ibp_probe $k MANAGE
    cell 3.$k.ibp_tool.probe-read 60 cell_ibp_probe $k READ
    cell 3.$k.ibp_tool.status 60 cell_ibp_status $k
    cell 3.$k.lors_upload 120 cell_lns_upload $k
    cell 3.$k.lors_download 120 cell_lns_download $k
    cell 3.$k.lors_ls 60 cell_lns_ls $k
    cell 3.$k.lors_trim 60 cell_lns_trim $k
    cell 3.$k.lors_augment 180 cell_lns_augment $k
    cell 3.$k.lors_refresh 60 cell_lns_refresh $k
done
cell 3.mixed.lors_upload 120 cell_lns_upload mixed
cell 3.mixed.lors_ls 60 cell_lns_ls mixed
cell 3.mixed.lors_download 120 cell_lns_download mixed
for k in lns accre loci; do
    cell 3.mixed.lors_download.from-$k 120 cell_lns_download_from mixed $k
done
cell 3.mixed.lors_augment 180 cell_lns_augment mixed
cell 3.mixed.lors_refresh 60 cell_lns_refresh mixed
cell 3.mixed.lors_trim 60 cell_lns_trim mixed
# 4. The original LoRS tools, on lns depots and (the reference) on LoCI depots.
for k in lns loci; do
    cell 4.$k.lors_upload 180 cell_lors131_upload $k
    cell 4.$k.lors_download 120 cell_lors131_download $k
    cell 4.$k.lors_ls 60 cell_lors131_ls $k
    cell 4.$k.lors_trim 60 cell_lors131_trim $k
    cell 4.$k.lors_augment 180 cell_lors131_augment $k
    cell 4.$k.lors_refresh 60 cell_lors131_refresh $k
done
cell 4.lns.lors_download.ec-1+1 120 cell_lors131_ec 1+1 lns1 lns2
cell 4.mixed.lors_download.ec-2+1 120 cell_lors131_ec 2+1 lns1 lns2 loci1
# 5. SEND, source -> target.
for s in lns accre loci; do
    for t in lns accre loci; do
        cell 5.send.$s-to-$t 90 cell_send $s $t
    done
done
# 6. e2e functions: the original's through lns, and lns's through the original.
for c in $E2E_CASES; do
    cell 6.orig-$c.upload 240 cell_e2e_orig_upload $c
    cell 6.orig-$c.lns_download 120 cell_e2e_lns_download $c
    cell 6.orig-$c.lns_pipe 120 cell_e2e_lns_pipe $c
    cell 6.orig-$c.lns_serve 120 cell_e2e_lns_serve $c
    cell 6.orig-$c.lns_keep 180 cell_e2e_lns_keep $c
done
cell 6.lns-z.orig_download 120 cell_e2e_lns_to_orig z -z
cell 6.lns-z-nock.orig_download 120 cell_e2e_lns_to_orig z-nock -z -k none
cell 6.lns-a.orig_download 120 cell_e2e_lns_to_orig a -a
cell 6.lns-z-a.orig_download 120 cell_e2e_lns_to_orig z-a -z -a
cell 6.lns-a-nock.orig_download 120 cell_e2e_lns_to_orig a-nock -a -k none
cell 6.lns-plain.orig_download 120 cell_e2e_lns_to_orig plain
# What -z and the default checksum were before zstd and BLAKE3 (still written on request).
cell 6.lns-zlib.orig_download 120 cell_e2e_lns_to_orig zlib --zlib
cell 6.lns-sha256.orig_download 120 cell_e2e_lns_to_orig sha256 -k sha256
cell 6.lns-z.orig_tools 180 cell_e2e_lns_orig_tools -z
cell 6.lns-a-nock.orig_tools 180 cell_e2e_lns_orig_tools -a -k none
cell 6.lns-zlib.orig_tools 180 cell_e2e_lns_orig_tools --zlib

# ---------------------------------------------------------------------------------------------
# The table: results.tsv as markdown, with the run's date and the commits tested.
commit_of() { # DIR...: the first one that is a git work tree
    local d
    for d in "$@"; do
        git -C "$d" rev-parse --short=12 HEAD 2>/dev/null && return
    done
    echo unknown
}
LNS_COMMIT=$(commit_of "$REPO")
[ -n "$(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null)" ] && LNS_COMMIT="$LNS_COMMIT+changes"
ACCRE_COMMIT=$(commit_of "$ACCRE/src/lstore" "$PREFIX/accre-work/lstore")
LORS_COMMIT=$( (cut -c1-12 "$LORS131/.lors131-built" 2>/dev/null || commit_of "$LORS131/src/dlt-lors") | head -1)
{
    echo "Run $(date -u +%Y-%m-%d): lns $LNS_COMMIT, ACCRE accre/lstore ${ACCRE_COMMIT:-unknown}, LoCI/LoRS datalogistics/dlt-lors ${LORS_COMMIT:-unknown}."
    echo "$NPASS PASS, $NFAIL FAIL, $NXFAIL XFAIL (expected, explained), $NSKIP SKIP."
    echo
    echo "| cell | result | reason |"
    echo "|---|---|---|"
    while IFS=$'\t' read -r id res reason; do
        echo "| $id | $res | $reason |"
    done <"$RESULTS"
} >"$OUT/table.md"
echo
cat "$OUT/table.md"
echo
echo "interop: table in $OUT/table.md, logs in $OUT/logs"
[ $NFAIL -gt 0 ] && exit 1
[ $NPASS -eq 0 ] && [ $NSKIP -gt 0 ] && exit 77
exit 0
