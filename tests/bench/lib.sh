# lib.sh -- what the loopback benchmarks share: checks, a work directory cleaned up by a trap,
# the statistics of rounds, the machine line, and starting ibp_depot and nginx servers.
#
#   . "$(dirname "$0")/lib.sh"; bench_runs 5
#
# Sourced by bench_depot.sh and bench_lors.sh (bash, set -euo pipefail) with their arguments:
# it sets BENCH_NAME (the script's name, the prefix of every message) and BUILD (the build
# directory, the one argument).  bench_workdir
# makes $WORK; every server started here runs on 127.0.0.1, on a port the kernel picks, and
# its pid goes in PIDS, which the EXIT trap stops before it removes $WORK, also on failure or
# Ctrl-C, after showing the end of every log on failure.

BENCH_NAME=$(basename "$0" .sh)
BUILD=${1:?usage: $BENCH_NAME.sh BUILD_DIR}
BIN=$BUILD/bin
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# bench_need_built FILE...: exit 2 unless each one is an executable of the build.
bench_need_built() {
    local f
    for f in "$@"; do
        [ -x "$f" ] || { echo "$BENCH_NAME: $f: not built (make benchprogs)" >&2; exit 2; }
    done
}

# bench_need_tools HINT TOOL...: exit 2 unless each tool is installed; HINT says how.
bench_need_tools() {
    local hint=$1 t
    shift
    for t in "$@"; do
        command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] ||
            { echo "$BENCH_NAME: $t: not installed ($hint)" >&2; exit 2; }
    done
}

# bench_runs DEFAULT: RUNS from BENCH_RUNS (else DEFAULT); exit 2 below 3, where a median of
# per-round ratios means little.
bench_runs() {
    RUNS=${BENCH_RUNS:-$1}
    [ "$RUNS" -ge 3 ] || { echo "$BENCH_NAME: BENCH_RUNS must be >= 3" >&2; exit 2; }
}

# Bytes of a size with an optional M or G (MiB, GiB) suffix.
bytes_of() {
    case $1 in
    *G) echo $(( ${1%G} * 1024 * 1024 * 1024 )) ;;
    *M) echo $(( ${1%M} * 1024 * 1024 )) ;;
    *) echo "$1" ;;
    esac
}

bench_cleanup() {
    local rc=$? p l
    set +e
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    if [ "$rc" -ne 0 ]; then
        echo "$BENCH_NAME: failed (exit $rc); last lines of the logs:" >&2
        for l in "$WORK"/*/stderr "$WORK"/*/error.log "$WORK"/client.err; do
            [ -s "$l" ] && { echo "--- $l" >&2; tail -5 "$l" >&2; }
        done
    fi
    rm -rf "$WORK"
    exit "$rc"
}

# bench_workdir: WORK (with res/ for record and www/ for nginx) under TMPDIR, and the traps.
bench_workdir() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/lns-$BENCH_NAME.XXXXXX")
    PIDS=()
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
    mkdir -p "$WORK/res" "$WORK/www"
}

# ---- statistics of rounds ---------------------------------------------------------------

# MB/s (10^6 bytes) of $1 bytes in $2 seconds (awk's numbers: "12e-9" is 12 ns).
mbps() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f", (s > 0) ? b / s / 1e6 : 0 }'; }
# The value of "KEY=value" in the last line of stdin that has one.
kv() { sed -n "s/\(^\|.* \)$1=\([^ ]*\).*/\2/p" | tail -1; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
                                             else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0) ? a / b : 0 }'; }
record() { echo "$2" >>"$WORK/res/$1"; }   # record METRIC VALUE
med() { median <"$WORK/res/$1"; }
verdict() { awk -v x="$1" -v t="$2" 'BEGIN { print (x >= t) ? "met" : "NOT met" }'; }
verdict_max() { awk -v x="$1" -v t="$2" 'BEGIN { print (x <= t) ? "met" : "NOT met" }'; }

# CPU time (utime + stime from /proc, in clock ticks of TICK_MS) of these pids and their live
# children (nginx: master and workers).  Other tenants of this machine steal wall time from
# both sides, not CPU time: CPU per byte is the steadier figure of the work a server does.
TICK_MS=$(( 1000 / $(getconf CLK_TCK) ))
cpu_ticks() {
    local p t=0 c
    for p in "$@" $(for p in "$@"; do pgrep -P "$p"; done); do
        c=$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)
        t=$(( t + c ))
    done
    echo "$t"
}

# ---- the machine --------------------------------------------------------------------------

# Print the machine and data directory lines; warn if $WORK is not on a disk.
bench_describe_machine() {
    local fstype fsdev
    fstype=$(findmnt -n -o FSTYPE -T "$WORK" 2>/dev/null || stat -f -c %T "$WORK")
    fsdev=$(df -P "$WORK" | awk 'NR == 2 { print $1 }')
    echo "machine: nproc=$(nproc) kernel=$(uname -r) cpu=\"$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)\" mem=$(awk '/MemTotal/ { printf "%.1fG", $2 / 1048576 }' /proc/meminfo) load=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
    echo "data dir: $WORK (fs=$fstype dev=$fsdev)"
    if [ "$fstype" = tmpfs ] || [ "$fstype" = ramfs ]; then
        echo "$BENCH_NAME: warning: $WORK is on $fstype, not a disk; set TMPDIR to a disk path" >&2
    fi
}

# ---- a shaped link -------------------------------------------------------------------------

# bench_link_up RATE [depots] (e.g. 1gbit): a network namespace for the depots behind a veth
# capped by a tbf at RATE both ways (each end's egress), as depots across a network are, or
# only from the depots with "depots" (a benchmark that only reads); exports DEPOT_NETNS and DEPOT_ADDR for start_depot and
# sets ADDR (the depots' address) and LINK_NS.  Needs root, ip and tc.  bench_link_down
# removes both ends (call it from the EXIT trap when LINK_NS is set).
bench_link_up() {
    local tbf how="both ways"
    LINK_NS=lnsbl$$ LINK_VA=lnsbla$$ LINK_VB=lnsblb$$
    ip netns add "$LINK_NS" || { echo "$BENCH_NAME: BENCH_LINK needs ip netns (root)" >&2; LINK_NS=""; exit 2; }
    ip link add "$LINK_VA" type veth peer name "$LINK_VB"
    ip link set "$LINK_VB" netns "$LINK_NS"
    ip addr add 10.214.0.1/30 dev "$LINK_VA"
    ip link set "$LINK_VA" up
    ip netns exec "$LINK_NS" ip addr add 10.214.0.2/30 dev "$LINK_VB"
    ip netns exec "$LINK_NS" ip link set "$LINK_VB" up
    ip netns exec "$LINK_NS" ip link set lo up
    tbf=$(awk -v r="$1" 'BEGIN { v = r + 0; if (r ~ /gbit$/) v *= 1000;
        else if (r ~ /kbit$/) v /= 1000; b = v * 1e6 / 8 * 0.004; if (b < 262144) b = 262144;
        printf "rate %gmbit burst %d latency 100ms", v, b }')
    # shellcheck disable=SC2086 # tbf holds several words
    ip netns exec "$LINK_NS" tc qdisc add dev "$LINK_VB" root tbf $tbf
    if [ "${2:-}" = depots ]; then
        how="at the depots"
    else
        # shellcheck disable=SC2086
        tc qdisc add dev "$LINK_VA" root tbf $tbf
    fi
    export DEPOT_NETNS=$LINK_NS DEPOT_ADDR=10.214.0.2
    ADDR=10.214.0.2
    echo "== $BENCH_NAME: depots in namespace $LINK_NS behind a veth capped $how: tbf $tbf"
}
bench_link_down() {
    ip link delete "$LINK_VA" 2>/dev/null
    ip netns delete "$LINK_NS" 2>/dev/null
}

# ---- servers ------------------------------------------------------------------------------

# start_depot NAME HARD_MB [IBP_DEPOT_FLAGS...]: a depot with one resource of HARD_MB MiB hard
# storage in $WORK/NAME; sets PID_<NAME>, and PORT_<NAME> once it listens.
# DEPOT_NETNS and DEPOT_ADDR (both or neither): the depot runs in that network namespace and
# listens on that address instead of 127.0.0.1.  DEPOT_ADDR alone (another loopback address,
# 127.0.0.N): the depot listens there and names that host in its capabilities.  DEPOT_SOFT_MB:
# the soft storage (default 16).
start_depot() {
    local name=$1 hard=$2 dir=$WORK/$1 pid i addr=${DEPOT_ADDR:-127.0.0.1} pre=()
    shift 2
    [ -n "${DEPOT_NETNS:-}" ] && pre=(ip netns exec "$DEPOT_NETNS")
    mkdir -p "$dir/res"
    "${pre[@]}" "$BIN/ibp_depot" --listen "$addr" --port 0 --port-file "$dir/port" \
        --public-host "$addr" --resource "$dir/res,hard=${hard}M,soft=${DEPOT_SOFT_MB:-16}M,max-duration=86400" \
        --log-level warn "$@" >"$dir/stderr" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    printf -v "PID_$name" '%s' "$pid"
    for i in $(seq 200); do
        [ -s "$dir/port" ] && break
        kill -0 "$pid" 2>/dev/null || { echo "$BENCH_NAME: depot $name died" >&2; return 1; }
        sleep 0.05
    done
    [ -s "$dir/port" ] || { echo "$BENCH_NAME: depot $name did not listen" >&2; return 1; }
    printf -v "PORT_$name" '%s' "$(tr -d '[:space:]' <"$dir/port")"
}

# start_nginx NAME: one nginx (master + workers, sendfile on) serving $WORK/www, whose
# data.bin must exist; sets PID_<NAME>, and NGPORT_<NAME> once it serves that file.
start_nginx() {
    local name=$1 dir=$WORK/$1 user="" port pid i
    mkdir -p "$dir/tmp"
    port=$("$BUILD/bench/bench_ibp" freeport)
    # As root, nginx would hand its workers to "nobody"; keep them the current user.
    [ "$(id -u)" = 0 ] && user="user $(id -un) $(id -gn);"
    cat >"$dir/nginx.conf" <<EOF
$user
worker_processes auto;
daemon off;
master_process on;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 60;
    default_type application/octet-stream;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        root $WORK/www;
    }
}
EOF
    "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" >"$dir/stderr" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    printf -v "PID_$name" '%s' "$pid"
    for i in $(seq 200); do
        if curl -s -o /dev/null -I "http://127.0.0.1:$port/data.bin"; then
            printf -v "NGPORT_$name" '%s' "$port"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || { echo "$BENCH_NAME: nginx $name died" >&2; return 1; }
        sleep 0.05
    done
    echo "$BENCH_NAME: nginx $name did not listen" >&2
    return 1
}
