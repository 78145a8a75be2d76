#!/bin/bash
# run_scenario.sh -- run one WAN scenario (tests/wan/scenarios/*.scn) on the namespace testbed:
# lors_download against aria2c on the same hosts, same run, medians of the rounds.  With fewer
# copies than hosts aria2c gets the exNode's placement (each fragment from the hosts holding a
# copy of it, from nginx); with full replicas, or WAN_PEER_FULL=1, the whole file from every host.
#
#   tests/wan/run_scenario.sh SCENARIO.scn
#
# Environment: WAN_RUNS (rounds, default: the file's "runs", at least 3), WAN_SIZE (override the
# file size, e.g. 64M for a first pass), WAN_RESULTS (append one markdown table row there),
# TB_BIN (programs, default build/release/bin), TB_KEEP=1 (keep the work directory),
# WAN_NETLOG=DIR (NetLogger logs for lors_lifelines: DIR/h<i>.events from every depot,
# DIR/ours.<round>.netlog from lors_download), WAN_MEDIA (the videos' directory, default
# build/media, made there by tests/media/make_videos.sh when missing), WAN_CLIENT (flags added
# after the scenario's "client" flags, e.g. "-t 16" for a what-if run), WAN_PEER (replaces "peer"),
# WAN_PIPE=1 (lors_download writes to a pipe, in order, instead of to a file in place),
# WAN_PEER_FULL=1 (aria2c reads the whole file from every host even with fewer copies than hosts),
# WAN_EVENT_ON=file (a % event fires at the bytes the client has written, the blocks allocated
# in its output, instead of the bytes on the client's links: docs/wan-testbed.md),
# WAN_EVENT_ON=limit (a % event fires at the time it fires for a client at the placement limit,
# the same time for both clients: docs/wan-testbed.md),
# WAN_EVENT_HOSTS=1 (each event line is followed by the MB received from each host so far, and
# each client's round ends with the same line), WAN_PEER_STALL (seconds, default 90: an aria2c
# that writes nothing for that long is stopped and its round counts as failed; after a silent
# crash it can wait on the dead host for good).
#
# Scenario format (one directive a line, # comments; docs/wan-testbed.md):
#   name TEXT | size N | copies N | fragments N | runs N
#   host RATE [latency=MS] [jitter=MS]       one line per host, in order host1, host2, ...
#   hosts COUNT RATE [latency=MS] [jitter=MS]  COUNT identical hosts
#   at 10s host2 rate 1mbit | at 30% kill host3 | at 12s crash host1
#     (kill: SIGKILL the host's depot and nginx; crash: also take its link down, silently)
#   client FLAGS...   extra lors_download flags;  peer FLAGS...  aria2c flags ("peer none": no peer)
#     (aria2c, same placement: -i with one entry per fragment, its URIs the nginx of the hosts
#      holding it, -j FRAGMENTS -s COPIES FLAGS; whole file: -s HOSTS FLAGS, every host's nginx)
#   client play FLAGS...  stream with lors_play --player paced --headless FLAGS instead (no peer):
#                     the figure is lns_paced's underrun count and duration per round
#   media NAME | bitrate RATE | upload FLAGS...   the file is video NAME (from WAN_MEDIA) instead
#                     of random bytes; its bitrate (lors_upload --bitrate); extra lors_upload flags
#
# A round: ours then the peer (the order alternates each round), each from a fresh start of every
# host (rates reset, killed depots restarted) with the scenario's events replayed while it runs;
# "at N%" fires when the client namespace has received N% of the file's bytes (wire bytes, read
# from the namespace's interface counters, so the same rule holds for both clients); events fire
# in the order they come due, and a killed or crashed host stays dead for the round.  Each
# client's output is checked with sha256 against the source.  The physical limit is the ideal
# completion time of a fluid model in which every live link runs at its full rate throughout
# (the capacity schedule of the events), the placement limit the same for a client that takes
# each fragment only from the hosts holding it (limits.sh; tests/wan/check_limits.sh checks
# both): the figures are reported as fractions of them.  With WAN_PIPE=1 also of the in-order
# reference: the placement limit for a client that writes in order through its reorder buffer
# (-M in WAN_CLIENT, else lors_download's default 64M; limits.sh, inorder_time).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/wan/testbed.sh
. "$HERE/testbed.sh"
# shellcheck source=tests/wan/limits.sh
. "$HERE/limits.sh"

SCN=${1:?usage: run_scenario.sh SCENARIO.scn}
[ -r "$SCN" ] || { echo "run_scenario: $SCN: cannot read" >&2; exit 2; }

NAME=$(basename "$SCN" .scn); SIZE_ARG=64M; COPIES=""; FRAGS=""; RUNS=3
RATES=(); LATS=(); JITS=(); EVENTS=(); CLIENT_FLAGS=""; PEER_FLAGS="-x1 -k1M --disk-cache=0"
UNDERRUNS=""; MODE=download; MEDIA=""; BITRATE=""; UPLOAD_FLAGS=""; PEER_SET=""
add_host() {
    local r=$1 l=0 j=0 kv; shift
    for kv in "$@"; do
        case $kv in
        latency=*) l=${kv#latency=}; l=${l%ms} ;;
        jitter=*) j=${kv#jitter=}; j=${j%ms} ;;
        *) echo "run_scenario: $SCN: unknown host attribute $kv" >&2; exit 2 ;;
        esac
    done
    RATES+=("$r"); LATS+=("$l"); JITS+=("$j")
}
while read -r key rest; do
    case $key in
    ''|'#'*) ;;
    name) NAME=$rest ;;
    size) SIZE_ARG=$rest ;;
    copies) COPIES=$rest ;;
    fragments) FRAGS=$rest ;;
    runs) RUNS=$rest ;;
    # shellcheck disable=SC2086
    host) add_host $rest ;;
    hosts) set -- $rest; c=$1; shift; for _ in $(seq "$c"); do add_host "$@"; done ;;
    at) EVENTS+=("$rest") ;;
    client) CLIENT_FLAGS=$rest
            case $rest in play|play\ *) MODE=play; CLIENT_FLAGS=${rest#play} ;; esac ;;
    peer) PEER_FLAGS=$rest; PEER_SET=1 ;;
    media) MEDIA=$rest ;;
    bitrate) BITRATE=$rest ;;
    upload) UPLOAD_FLAGS=$rest ;;
    *) echo "run_scenario: $SCN: unknown directive '$key'" >&2; exit 2 ;;
    esac
done <"$SCN"
SIZE_ARG=${WAN_SIZE:-$SIZE_ARG}
CLIENT_FLAGS+=${WAN_CLIENT:+ $WAN_CLIENT}
[ -n "${WAN_PEER:-}" ] && PEER_FLAGS=$WAN_PEER && PEER_SET=1
# A player is not compared with aria2c: streaming scenarios have no peer unless one is named.
[ "$MODE" = play ] && [ -z "$PEER_SET" ] && PEER_FLAGS=none
if [ -n "$MEDIA" ]; then
    MEDIA_DIR=${WAN_MEDIA:-$TB_ROOT/build/media}
    if [ ! -s "$MEDIA_DIR/$MEDIA" ]; then
        "$TB_ROOT/tests/media/make_videos.sh" "$MEDIA_DIR" >&2 ||
            { echo "run_scenario: cannot make the videos in $MEDIA_DIR" >&2; exit 2; }
    fi
    [ -s "$MEDIA_DIR/$MEDIA" ] || { echo "run_scenario: $MEDIA_DIR/$MEDIA: no such video" >&2; exit 2; }
    SIZE_ARG=$(stat -c %s "$MEDIA_DIR/$MEDIA")
fi
[ -n "$BITRATE" ] && UPLOAD_FLAGS="--bitrate $BITRATE $UPLOAD_FLAGS"
RUNS=${WAN_RUNS:-$RUNS}
N=${#RATES[@]}
[ "$N" -ge 1 ] || { echo "run_scenario: $SCN: no hosts" >&2; exit 2; }
COPIES=${COPIES:-$N}
FRAGS=${FRAGS:-$N}
[ "$RUNS" -ge 3 ] || echo "run_scenario: warning: $RUNS rounds (medians want >= 3)" >&2

SIZE=$(bytes_of "$SIZE_ARG")
median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "nan"; else if (NR % 2) print v[(NR + 1) / 2];
                                             else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
now() { date +%s.%N; }

NEED="ibp_depot lors_upload lors_download"
[ "$MODE" = play ] && NEED+=" lors_play lns_paced"
for f in $NEED; do
    [ -x "$TB_BIN/$f" ] || { echo "run_scenario: $TB_BIN/$f: not built" >&2; exit 2; }
done
PEER=yes
[ "$PEER_FLAGS" = none ] && PEER=""
if [ -n "$PEER" ] && ! command -v aria2c >/dev/null; then
    echo "run_scenario: aria2c not installed (scripts/install-deps.sh --bench)" >&2; exit 2
fi
# The peer's placement: with fewer copies than hosts, aria2c takes each fragment only from the
# hosts holding a copy of it (as lors_download must); with full replicas the whole file from
# every host is the same thing (the old path).  WAN_PEER_FULL=1: the whole file anyway.
PEER_MODE=full
if [ -n "$PEER" ] && [ "$COPIES" -lt "$N" ] && [ -z "${WAN_PEER_FULL:-}" ]; then
    PEER_MODE=placed
    command -v jq >/dev/null || { echo "run_scenario: jq not installed (the peer's placement)" >&2; exit 2; }
    [ -x "$TB_BIN/lors_ls" ] || { echo "run_scenario: $TB_BIN/lors_ls: not built" >&2; exit 2; }
fi

# ---- events during a run -----------------------------------------------------------------
# run_events BASE_RX START: replay the events as they come due, whichever their kind ("at 10s":
# that long after START; "at 30%": that share of the file's bytes received since BASE_RX),
# polled every 20 ms, in the order ideal_time has them fire (events due together: in the
# file's order).  A host killed or crashed stays dead for the round: a later rate event of it
# is skipped (and logged as ignored), as in ideal_time.
run_events() {
    local base=$1 start=$2 written=$3 n=${#EVENTS[@]} k left rx now_us start_us el_us el when what val i b
    local -a kinds=() targets=() hosts=() whats=() vals=() fired=() dead=()
    start_us=${start#*.}
    start_us=$(( ${start%.*} * 1000000 + 10#${start_us:0:6} ))
    for ((k = 0; k < n; k++)); do
        parse_event "${EVENTS[k]}"
        case $when in
        *%) if [ "${WAN_EVENT_ON:-}" = limit ]; then
                kinds[k]=t # never, if the limit's client ends first
                targets[k]=${LIMIT_AT_US[k]:-999999999999}
            else
                kinds[k]=p
                [ "${WAN_EVENT_ON:-}" = file ] && b=0 || b=$base
                targets[k]=$(awk -v f="${when%\%}" -v s="$SIZE" -v b="$b" 'BEGIN { printf "%.0f", b + f / 100 * s }')
            fi ;;
        *) kinds[k]=t
           targets[k]=$(awk -v t="${when%s}" 'BEGIN { printf "%.0f", t * 1e6 }') ;;
        esac
        hosts[k]=$i; whats[k]=$what; vals[k]=$val
    done
    left=$n
    while [ "$left" -gt 0 ]; do
        if [ "${WAN_EVENT_ON:-}" = file ]; then
            rx=$(du -s -B1 "$written" 2>/dev/null | awk '{ print $1 }')
            rx=${rx:-0}
        else
            rx=$(tb_rx_bytes)
        fi
        now_us=${EPOCHREALTIME//[!0-9]/}
        for ((k = 0; k < n; k++)); do
            [ -z "${fired[k]:-}" ] || continue
            if [ "${kinds[k]}" = p ]; then [ "$rx" -ge "${targets[k]}" ] || continue
            else [ $((now_us - start_us)) -ge "${targets[k]}" ] || continue; fi
            fired[k]=1; left=$((left - 1))
            i=${hosts[k]}; what=${whats[k]}; val=${vals[k]}
            el_us=$(( ${EPOCHREALTIME//[!0-9]/} - start_us ))
            el=$(printf '%d.%02d' $((el_us / 1000000)) $((el_us % 1000000 / 10000)))
            case $what in
            kill) tb_kill "$i"; dead[i]=1 ;;
            crash) tb_crash "$i"; dead[i]=1 ;;
            rate)
                if [ -n "${dead[i]:-}" ]; then
                    echo "  event at ${el}s (rx $(( $(tb_rx_bytes) - base )) B): host$i rate $val ignored (host$i is dead this round)" >&2
                    continue
                fi
                tb_rate "$i" "$val" ;;
            esac
            echo "  event at ${el}s (rx $(( $(tb_rx_bytes) - base )) B$([ "${WAN_EVENT_ON:-}" != file ] || echo ", written $rx B")): host$i $what ${val:-}" >&2
            [ -z "${WAN_EVENT_HOSTS:-}" ] || echo "    rx by host since the start: $(rx_hosts)" >&2
        done
        [ "$left" -eq 0 ] || sleep 0.02
    done
}

# rx_by_host: "h<i>=<bytes>" for each host's link in the client namespace (its received bytes),
# space-separated; for WAN_EVENT_HOSTS=1.
rx_by_host() {
    awk -v p="${TB_P}c" '$1 ~ "^" p { name = $1; sub(/:.*/, "", name); sub("^" p, "", name)
        v = $0; sub(/^[^:]*:/, "", v); split(v, f, " "); printf "h%s=%.0f ", name, f[1] }' \
        "/proc/$TB_ANCHOR/net/dev" 2>/dev/null
}

# rx_hosts: MB received on each host's link since rx_hosts_base (rx_by_host, set by timed).
rx_hosts() {
    echo "$rx_hosts_base" "$(rx_by_host)" | awk '{
        for (k = 1; k <= NF; k++) { split($k, kv, "=")
            if (!(kv[1] in b0)) b0[kv[1]] = kv[2]
            else { printf "%s%s=%.2f", sep, kv[1], (kv[2] - b0[kv[1]]) / 1e6; sep = " " } } }'
}

# peer_stall: stop the peer's aria2c (the one whose command line names $TB_WORK) once it has
# written nothing for WAN_PEER_STALL seconds.  Run in the background for one peer round.
peer_stall() {
    local limit=${WAN_PEER_STALL:-90} p q w last="" since now
    since=$(date +%s)
    while sleep 5; do
        p=""
        for q in $(pgrep -x aria2c); do
            tr '\0' ' ' <"/proc/$q/cmdline" 2>/dev/null | grep -qF -- "$TB_WORK" && p=$q && break
        done
        [ -n "$p" ] || continue
        w=$(awk '/^wchar/ { print $2 }' "/proc/$p/io" 2>/dev/null) || continue
        now=$(date +%s)
        if [ "$w" != "$last" ]; then
            last=$w; since=$now
        elif [ $((now - since)) -ge "$limit" ]; then
            echo "run_scenario: aria2c wrote nothing for $limit s (waiting on a silent host); stopped" >&2
            kill "$p" 2>/dev/null || true
            return 0
        fi
    done
}

# reset_hosts: every host at its own rate, every depot and nginx alive.
reset_hosts() {
    local i
    for i in $(seq 1 "$N"); do
        tb_rate "$i" "${RATES[$((i - 1))]}"
        if ! kill -0 "${TB_DEPOT_PID[$i]}" 2>/dev/null; then
            tb_kill "$i"
            tb_restart_host "$i" "$HARD_MB" "${LATS[$((i - 1))]}" "${JITS[$((i - 1))]}"
        fi
    done
}

# timed SIDE ROUND: one client run with the events; sets T to its seconds (or "fail"); checks
# the bytes.  Runs in this shell (not $(...)) so that restarted hosts' pids are kept.
timed() {
    local side=$1 round=$2 out base start end pid evpid stallpid="" rc=0 i urls=() netlog=() written
    [ -n "${WAN_NETLOG:-}" ] && netlog=(--netlog "$WAN_NETLOG/ours.$round.netlog")
    out=$TB_WORK/out.$side
    rm -f "$out" "$out.aria2"
    rm -rf "$TB_WORK/out.frags"
    reset_hosts
    sync
    base=$(tb_rx_bytes)
    [ -z "${WAN_EVENT_HOSTS:-}" ] || rx_hosts_base=$(rx_by_host)
    start=$(now)
    if [ "$side" = ours ] && [ "$MODE" = play ]; then
        # shellcheck disable=SC2086
        tb_client $TIME_CMD "$TB_BIN/lors_play" -V --no-rc --player paced --headless $CLIENT_FLAGS \
            -o "$out" "$TB_WORK/file.xnd" 2>"$TB_WORK/ours.$round.report" &
    elif [ "$side" = ours ] && [ -n "${WAN_PIPE:-}" ]; then
        # through a pipe: in order, through the reorder buffer (WAN_PIPE=1)
        # shellcheck disable=SC2016,SC2086
        tb_client $TIME_CMD bash -c 'set -o pipefail; out=$1; shift; "$@" | cat >"$out"' pipe \
            "$out" "$TB_BIN/lors_download" -V --no-report --no-rc "${netlog[@]}" $CLIENT_FLAGS -o - \
            "$TB_WORK/file.xnd" 2>"$TB_WORK/ours.$round.report" &
    elif [ "$side" = ours ]; then
        # shellcheck disable=SC2086
        tb_client $TIME_CMD "$TB_BIN/lors_download" -V --no-report --no-rc "${netlog[@]}" $CLIENT_FLAGS \
            -o "$out" "$TB_WORK/file.xnd" 2>"$TB_WORK/ours.$round.report" &
    elif [ "$PEER_MODE" = placed ]; then
        # aria2c, same placement: every fragment at once (-j), each from its holders (-s).
        mkdir -p "$TB_WORK/out.frags"
        # shellcheck disable=SC2086
        tb_client $TIME_CMD aria2c -q -i "$TB_WORK/peer.input" -j "$NFRAG" -s "$COPIES" $PEER_FLAGS \
            --file-allocation=none --max-tries=0 --retry-wait=1 --allow-overwrite=true \
            --auto-file-renaming=false -d "$TB_WORK/out.frags" >"$TB_WORK/peer.$round.log" 2>&1 &
    else
        for i in $(seq 1 "$N"); do urls+=("http://$(tb_addr "$i")/file"); done
        # shellcheck disable=SC2086
        tb_client $TIME_CMD aria2c -q -s"$N" $PEER_FLAGS --allow-overwrite=true --auto-file-renaming=false \
            --file-allocation=none --max-tries=0 --retry-wait=1 -d "$TB_WORK" -o "out.$side" \
            "${urls[@]}" >"$TB_WORK/peer.$round.log" 2>&1 &
    fi
    pid=$!
    [ "$side" = peer ] && [ "$PEER_MODE" = placed ] && written=$TB_WORK/out.frags || written=$out
    run_events "$base" "$start" "$written" &
    evpid=$!
    if [ "$side" = peer ]; then peer_stall & stallpid=$!; fi
    wait "$pid" || rc=$?
    end=$(now)
    kill "$evpid" $stallpid 2>/dev/null || true
    wait "$evpid" $stallpid 2>/dev/null || true
    [ -z "${WAN_EVENT_HOSTS:-}" ] || echo "  $side done: rx by host since the start: $(rx_hosts)" >&2
    if [ "$rc" -ne 0 ]; then
        echo "run_scenario: $side round $round: exit $rc" >&2
        tail -5 "$TB_WORK/ours.$round.report" "$TB_WORK/peer.$round.log" 2>/dev/null >&2 || true
        T=fail; return 0
    fi
    if [ "$side" = peer ] && [ "$PEER_MODE" = placed ]; then
        # Untimed: the fragments, in order, make the file.
        for ((i = 0; i < NFRAG; i++)); do cat "$TB_WORK/out.frags/frag.$i" || true; done >"$out" 2>/dev/null
        rm -rf "$TB_WORK/out.frags"
    fi
    if [ "$(sha256sum <"$out" | cut -d' ' -f1)" != "$SUM" ]; then
        echo "run_scenario: $side round $round: output differs from the source" >&2
        T=fail; return 0
    fi
    rm -f "$out"
    T=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
}

for e in "${EVENTS[@]}"; do parse_event "$e"; done

# The client's CPU time per round (what limits it at the top of the scaling scenario).
TIME_CMD=""
[ -x /usr/bin/time ] && TIME_CMD="/usr/bin/time -f cpu:_user_%Us_sys_%Ss_%P_of_one_core_maxrss_%MKiB"
if [ -n "${WAN_NETLOG:-}" ]; then
    mkdir -p "$WAN_NETLOG"; WAN_NETLOG=$(cd "$WAN_NETLOG" && pwd); export TB_EVENT_LOG=$WAN_NETLOG
fi

# ---- set up --------------------------------------------------------------------------------
tb_trap
tb_sweep
tb_up "$N"
HARD_MB=$(( SIZE * COPIES / N / 1048576 * 2 + 64 ))
for i in $(seq 1 "$N"); do
    tb_start_host "$i" "$HARD_MB" "${LATS[$((i - 1))]}" "${JITS[$((i - 1))]}"
done
if [ -n "$MEDIA" ]; then cp "$MEDIA_DIR/$MEDIA" "$TB_WORK/www/file"
else head -c "$SIZE" /dev/urandom >"$TB_WORK/www/file"; fi
SUM=$(sha256sum <"$TB_WORK/www/file" | cut -d' ' -f1)
LIST=""
for i in $(seq 1 "$N"); do LIST+="${LIST:+,}$(tb_addr "$i"):6714"; done
: >"$TB_WORK/empty.rc"
# shellcheck disable=SC2086
tb_client "$TB_BIN/lors_upload" --no-rc --no-report --quiet --depot-list "$LIST" -c "$COPIES" \
    -F "$FRAGS" -d 1d $UPLOAD_FLAGS -o "$TB_WORK/file.xnd" "$TB_WORK/www/file"
# The fair peer's files (untimed): the exNode's file ranges as www/frag.0, frag.1, ..., and
# aria2c's input: per fragment, the URIs of the nginx of every host holding a copy of it
# (depot 10.77.I.2 is host I, its nginx on the same address), then "  out=frag.J".
if [ "$PEER_MODE" = placed ]; then
    "$TB_BIN/lors_ls" --json --no-probe --no-rc "$TB_WORK/file.xnd" >"$TB_WORK/xnd.json"
    # One line per file range, in file order: OFFSET LENGTH ADDRESS...
    jq -r '.mappings | group_by([.offset, .length]) | sort_by(.[0].offset)[]
           | "\(.[0].offset) \(.[0].length) \(map(.depot | sub(":.*$"; "")) | unique | join(" "))"' \
        "$TB_WORK/xnd.json" >"$TB_WORK/ranges"
    # The ranges must tile the file, their depots be testbed hosts.
    if ! awk -v size="$SIZE" '{ if ($1 != end || NF < 3) exit 1; end = $1 + $2
             for (k = 3; k <= NF; k++) if ($k !~ /^10\.77\.[0-9]+\.2$/) exit 1 }
             END { exit (end == size) ? 0 : 1 }' "$TB_WORK/ranges"; then
        echo "run_scenario: the exNode's ranges do not tile the file (or name unknown depots):" \
            "aria2c reads the whole file from every host" >&2
        PEER_MODE=full
    fi
fi
if [ "$PEER_MODE" = placed ]; then
    NFRAG=0
    : >"$TB_WORK/peer.input"
    while read -r off len addrs; do
        dd if="$TB_WORK/www/file" of="$TB_WORK/www/frag.$NFRAG" bs=1M iflag=skip_bytes,count_bytes \
            skip="$off" count="$len" status=none
        uris=""
        for a in $addrs; do uris+="${uris:+$'\t'}http://$a/frag.$NFRAG"; done
        printf '%s\n  out=frag.%d\n' "$uris" "$NFRAG" >>"$TB_WORK/peer.input"
        NFRAG=$((NFRAG + 1))
    done <"$TB_WORK/ranges"
fi
for i in $(seq 1 "$N"); do tb_rate "$i" "${RATES[$((i - 1))]}"; done
IDEAL=$(ideal_time)
IDEAL_PL=$(PLACED=1 ideal_time)
PL_PLACED=1
# Erasure-coded pieces are not copies: their placement is not modelled (the payload limit).
case " $UPLOAD_FLAGS " in *" --ec "*) IDEAL_PL=$IDEAL; PL_PLACED=0 ;; esac
# WAN_EVENT_ON=limit: each % event at the time it fires for a client at the placement limit,
# the same time for both clients (run_events); LIMIT_AT_US[k]: EVENTS[k]'s, in microseconds.
LIMIT_AT_US=()
if [ "${WAN_EVENT_ON:-}" = limit ]; then
    PLACED=$PL_PLACED FIRES_OUT="$TB_WORK/limit.fires" ideal_time >/dev/null
    while read -r ek et; do
        LIMIT_AT_US[ek - 1]=$(awk -v t="$et" 'BEGIN { printf "%.0f", t * 1e6 }')
    done <"$TB_WORK/limit.fires"
fi
AGG=$(for r in "${RATES[@]}"; do tb_mbit "$r"; echo; done | awk '{ s += $1 } END { printf "%g", s }')

echo "== $NAME ($SCN)"
echo "command: WAN_RUNS=$RUNS WAN_SIZE=$SIZE_ARG tests/wan/run_scenario.sh $SCN"
echo "hosts: ${RATES[*]} (latency ms: ${LATS[*]}); file $SIZE_ARG, $COPIES copies x $FRAGS fragments; events: ${EVENTS[*]:-none}"
[ -n "$MEDIA" ] && echo "media: $MEDIA, $SIZE bytes${BITRATE:+ at $BITRATE bit/s: $(awk -v s="$SIZE" -v b="$(tb_mbit "$BITRATE")" 'BEGIN { printf "%.1f", s * 8 / b / 1e6 }') s of stream}"
if [ "$MODE" = play ]; then OURS="lors_play --player paced --headless$CLIENT_FLAGS (underruns: lns_paced)"
else OURS="lors_download $CLIENT_FLAGS"; fi
PEER_NOTE=""
if [ -z "$PEER" ]; then PEER_DESC=none; PEER_NAME=""
elif [ "$PEER_MODE" = placed ]; then
    PEER_NAME="aria2c (same placement)"; PEER_NOTE=", same placement"
    PEER_DESC="aria2c, same placement: -i (each of the $NFRAG fragments from the nginx of the hosts holding it) -j $NFRAG -s $COPIES $PEER_FLAGS"
else
    PEER_NAME="aria2c (whole file)"
    PEER_DESC="aria2c, whole file: -s$N $PEER_FLAGS (every host's nginx as a mirror)"
fi
echo "ours: $OURS; peer: $PEER_DESC"
echo "physical limit: aggregate $AGG Mbit/s, ideal time $IDEAL s ($(awk -v s="$SIZE" -v t="$IDEAL" 'BEGIN { printf "%.1f", s * 8 / t / 1e6 }') Mbit/s over the schedule)"
# PAYLOAD_EFF (limits.sh): the share of the caps that file bytes can use.
IDEAL_P=$(awk -v i="$IDEAL" -v e="$PAYLOAD_EFF" 'BEGIN { printf "%.3f", i / e }')
echo "payload limit: $IDEAL_P s (headers: 1448 data bytes per 1514-byte frame, $PAYLOAD_EFF of the caps)"
IDEAL_PLP=$(awk -v i="$IDEAL_PL" -v e="$PAYLOAD_EFF" 'BEGIN { printf "%.3f", i / e }')
if [ "$PEER_MODE" = placed ]; then PL_PEER="aria2c too"
elif [ -n "$PEER" ] && [ "$COPIES" -lt "$N" ]; then PL_PEER="aria2c reads every host's whole file"
else PL_PEER="every host holds every byte"; fi
echo "placement limit: $IDEAL_PLP s of payload (each fragment only from the $COPIES hosts holding it; $PL_PEER)"
if [ "${WAN_EVENT_ON:-}" = limit ]; then
    lim=""
    for ((ek = 0; ek < ${#EVENTS[@]}; ek++)); do
        case ${EVENTS[ek]} in
        *%*) et=${LIMIT_AT_US[ek]:+$(awk -v u="${LIMIT_AT_US[ek]}" 'BEGIN { printf "%.2fs", u / 1e6 }')}
             lim+="${lim:+; }${EVENTS[ek]} at ${et:-never}" ;;
        esac
    done
    echo "events at the placement limit's times (WAN_EVENT_ON=limit, both clients): ${lim:-none}"
fi
IDEAL_IOP=""
if [ -n "${WAN_PIPE:-}" ]; then
    IO_BUF=$(printf '%s\n' "$CLIENT_FLAGS" | sed -n 's/.*-M  *\([0-9][0-9]*[KMG]\?\).*/\1/p')
    IO_BUF=${IO_BUF:-64M}
    IDEAL_IOP=$(awk -v i="$(inorder_time "$(bytes_of "$IO_BUF")")" -v e="$PAYLOAD_EFF" \
        'BEGIN { printf "%.3f", i / e }')
    echo "in-order reference: $IDEAL_IOP s of payload (the placement, written in order through a reorder buffer of $IO_BUF; limits.sh, inorder_time)"
fi

# Untimed warm-up: page caches of the depots' files and nginx's file.
cat "$TB_WORK"/h*/res/* "$TB_WORK"/www/* >/dev/null 2>&1 || true
: >"$TB_WORK/t.ours"; : >"$TB_WORK/t.peer"; : >"$TB_WORK/ratio"
for r in $(seq 1 "$RUNS"); do
    if [ $((r % 2)) = 1 ]; then order="ours peer"; else order="peer ours"; fi
    to=""; tp=""
    for side in $order; do
        [ "$side" = peer ] && [ -z "$PEER" ] && continue
        timed "$side" "$r"
        if [ "$side" = ours ]; then to=$T; else tp=$T; fi
    done
    line="round $r: ours ${to}s"
    [ "$to" != fail ] && echo "$to" >>"$TB_WORK/t.ours"
    if [ -n "$PEER" ]; then
        line+=", aria2c ${tp}s"
        [ "$tp" != fail ] && echo "$tp" >>"$TB_WORK/t.peer"
        if [ "$to" != fail ] && [ "$tp" != fail ]; then
            awk -v a="$tp" -v b="$to" 'BEGIN { printf "%.3f\n", a / b }' >>"$TB_WORK/ratio"
        fi
    fi
    [ -n "$PEER" ] && [ -n "$TIME_CMD" ] && line+=" (aria2c $(grep '^cpu:' "$TB_WORK/peer.$r.log" | tail -1 | tr _ ' '))"
    echo "$line"
    # The per-depot report of the round (lors_download -V), and its CPU time.
    { grep -v '^ *$' "$TB_WORK/ours.$r.report" || true; } | sed 's/^/    /' | tail -14
    if [ "$MODE" = play ]; then
        u=$(sed -n 's/.*underruns \([0-9][0-9]*\),.*/\1/p' "$TB_WORK/ours.$r.report" | tail -1)
        echo "${u:-?}" >>"$TB_WORK/underruns"
    fi
done

MO=$(median <"$TB_WORK/t.ours"); MP=$(median <"$TB_WORK/t.peer"); MR=$(median <"$TB_WORK/ratio")
FAILS=$(( RUNS - $(wc -l <"$TB_WORK/t.ours") ))
mbit() { awk -v s="$SIZE" -v t="$1" 'BEGIN { if (t == "nan" || t <= 0) print "-"; else printf "%.1f", s * 8 / t / 1e6 }'; }
OF=$(awk -v i="$IDEAL" -v t="$MO" 'BEGIN { if (t == "nan") print "-"; else printf "%.3f", i / t }')
OFP=$(awk -v i="$IDEAL_P" -v t="$MO" 'BEGIN { if (t == "nan") print "-"; else printf "%.3f", i / t }')
OFL=$(awk -v i="$IDEAL_PLP" -v t="$MO" 'BEGIN { if (t == "nan") print "-"; else printf "%.3f", i / t }')
echo "result: ours median ${MO}s = $(mbit "$MO") Mbit/s, $OF of the ideal, $OFP of the payload limit (time ${MO}/${IDEAL} = $(awk -v i="$IDEAL" -v t="$MO" 'BEGIN { if (t == "nan") print "-"; else printf "%.3f", t / i }')x ideal, $(awk -v i="$IDEAL_P" -v t="$MO" 'BEGIN { if (t == "nan") print "-"; else printf "%.3f", t / i }')x the payload limit); failed rounds $FAILS"
echo "result: placement: ours $OFL of the placement limit ($IDEAL_PLP s)"
if [ -n "$IDEAL_IOP" ]; then
    echo "result: in order: ours $(awk -v i="$IDEAL_IOP" -v t="$MO" 'BEGIN { if (t == "nan") print "-"; else printf "%.3f", i / t }') of the in-order reference ($IDEAL_IOP s)"
fi
if [ "$MODE" = play ]; then
    UNDERRUNS=$(tr '\n' ' ' <"$TB_WORK/underruns")
    echo "result: underruns per round: ${UNDERRUNS}(target 0)"
fi
frac() { awk -v i="$1" -v t="$2" 'BEGIN { if (t == "nan") print "-"; else printf "%.3f", i / t }'; }
[ -n "$PEER" ] && echo "result: $PEER_NAME median ${MP}s = $(mbit "$MP") Mbit/s, $(frac "$IDEAL_P" "$MP") of the payload limit, $(frac "$IDEAL_PLP" "$MP") of the placement limit; ratio ours/aria2c (speed, median of per-round) $MR"
if [ -n "${WAN_RESULTS:-}" ]; then
    printf '| %s | %s | %s | %s | %s Mbit/s, %s s | %s s (%s Mbit/s) | %s | %s | %s | %s |\n' \
        "$NAME" "$N" "$SIZE_ARG" "$RUNS" "$AGG" "$IDEAL" "$MO" "$(mbit "$MO")" "$OF ($OFP of payload)" \
        "${PEER:+$MP s ($(mbit "$MP") Mbit/s$PEER_NOTE)}${UNDERRUNS:+underruns per round: $UNDERRUNS}" "${PEER:+$MR}" \
        "$FAILS" >>"$WAN_RESULTS"
fi
[ "$FAILS" -eq 0 ]
