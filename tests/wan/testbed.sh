#!/bin/bash
# testbed.sh -- a wide-area network on one machine: a client and N hosts as network namespaces,
# each host's link capped with tc, optional latency/jitter through Toxiproxy, an ibp_depot and an
# nginx on every host.  See docs/wan-testbed.md.
#
# TB_EVENT_LOG=DIR: every depot writes its NetLogger events to DIR/h<i>.events (docs/netlogger.md).
# Sourced by run_scenario.sh and short.sh (functions tb_*), or run directly:
#   tests/wan/testbed.sh check            exit 0 if netns/veth/tbf work here, 77 if not permitted
#   tests/wan/testbed.sh sweep            remove leftovers of dead runs (lns<pid>- of gone pids)
#   tests/wan/testbed.sh install-toxiproxy
#
# Key idea: every object is named lns<pid>- (namespaces lns<pid>-c and lns<pid>-h<i>; the veth
# pair of host i is lns<pid>-c<i> / lns<pid>-h<i>, created directly inside the namespaces so it
# never exists in the host's own namespace).  Deleting the namespaces deletes the veths and the
# qdiscs with them, so cleanup is "kill our pids, delete our namespaces", run from an EXIT trap.
# Host i is 10.77.<i>.2, the client's end of its link 10.77.<i>.1 (one /24 per link).  The cap
# (tbf) sits on the host's egress: the direction the file's bytes flow in a download; uploads
# (client -> host) are not capped so that preparing a run is quick.
# Only namespaces this script creates are touched: never the host's interfaces or qdiscs.

TB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TB_P="lns$$-"
TB_NS_C="${TB_P}c"
TB_N=0
TB_ANCHOR=""
TB_PIDS=()
TB_DEPOT_PID=()   # per host index
TB_NGINX_PID=()
TB_WORK=""
TB_BIN=${TB_BIN:-$TB_ROOT/build/release/bin}
TB_CACHE=${TB_CACHE:-$TB_ROOT/build/wan}
TB_TOXI=$TB_CACHE/go/bin/toxiproxy-server
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
# A host's GSO packets carry at most this much payload: 16 KiB plus at most 12 segments'
# headers is less than the smallest tbf bucket (32 KiB, tb_tbf_args).
TB_GSO_MAX=16384

tb_log() { echo "testbed: $*" >&2; }

# tb_cleanup: kill every process we started (and anything left inside our namespaces), then
# delete our namespaces.  Safe to call twice.
tb_cleanup() {
    local p ns
    exec 3>&2 2>/dev/null # no "Killed" job notices from bash for the processes we end
    for p in "${TB_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${TB_P}" || true); do
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    done
    for p in "${TB_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    TB_PIDS=()
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${TB_P}" || true); do
        ip netns delete "$ns" 2>/dev/null || true
    done
    if [ -n "$TB_WORK" ] && [ -z "${TB_KEEP:-}" ]; then rm -rf "$TB_WORK"; fi
    exec 2>&3 3>&-
}

# tb_trap: install the cleanup on EXIT/INT/TERM (the caller's own cleanup may chain it).
tb_trap() {
    trap 'rc=$?; set +e; tb_cleanup; exit $rc' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# tb_check: can we make a namespace, a veth pair (with its GSO size capped, as tb_up does) and
# a tbf here?  0 yes, 77 not permitted.
tb_check() {
    local ns="${TB_P}k" rc=0
    ip netns add "$ns" 2>/dev/null || return 77
    if ! ip -n "$ns" link add "${TB_P}ka" type veth peer name "${TB_P}kb" 2>/dev/null ||
        ! ip -n "$ns" link set "${TB_P}ka" gso_max_size "$TB_GSO_MAX" 2>/dev/null ||
        ! ip -n "$ns" link set "${TB_P}ka" up 2>/dev/null ||
        ! ip netns exec "$ns" tc qdisc add dev "${TB_P}ka" root tbf rate 10mbit burst 32kb \
            latency 50ms 2>/dev/null; then
        rc=77
    fi
    ip netns delete "$ns" 2>/dev/null || true
    return $rc
}

# tb_sweep: namespaces lns<pid>- whose pid is gone (a run killed with SIGKILL cannot clean up).
tb_sweep() {
    local ns pid
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^lns[0-9]+-' || true); do
        pid=${ns#lns}; pid=${pid%%-*}
        if ! kill -0 "$pid" 2>/dev/null; then
            tb_log "removing stale namespace $ns"
            ip netns delete "$ns" || true
        fi
    done
}

tb_install_toxiproxy() {
    [ -x "$TB_TOXI" ] && return 0
    local go=/usr/local/go/bin/go
    [ -x "$go" ] || { tb_log "Go not found at $go (needed for Toxiproxy)"; return 1; }
    tb_log "installing Toxiproxy into $TB_CACHE/go (first use)"
    mkdir -p "$TB_CACHE/go"
    GOPATH=$TB_CACHE/go GOMODCACHE=$TB_CACHE/go/pkg/mod GOCACHE=$TB_CACHE/go/cache \
        GOFLAGS=-modcacherw "$go" install github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0 >&2
    mv "$TB_CACHE/go/bin/server" "$TB_TOXI"
}

# Mbit/s value of "20mbit", "1.5mbit", "500kbit", "20" (Mbit/s).
tb_mbit() {
    awk -v r="$1" 'BEGIN { v = r + 0; if (r ~ /kbit$/) v /= 1000; else if (r ~ /gbit$/) v *= 1000;
                          printf "%g", v }'
}
# tbf needs a bucket of at least one timer tick's worth of bytes; 4 ms of traffic, >= 32 KiB.
# Every packet a host sends fits the smallest bucket (TB_GSO_MAX, tb_up).
tb_tbf_args() {
    awk -v m="$1" 'BEGIN { b = m * 1e6 / 8 * 0.004; if (b < 32768) b = 32768;
                          printf "rate %gmbit burst %d latency 100ms", m, b }'
}

# tb_up N: the client namespace and N hosts, links up, no caps yet.
tb_up() {
    local n=$1 i
    TB_N=$n
    [ -n "$TB_WORK" ] || TB_WORK=$(mktemp -d "${TMPDIR:-/tmp}/${TB_P}XXXXXX")
    ip netns add "$TB_NS_C"
    ip -n "$TB_NS_C" link set lo up
    for i in $(seq 1 "$n"); do
        local h="${TB_P}h$i"
        ip netns add "$h"
        ip -n "$h" link set lo up
        ip -n "$TB_NS_C" link add "${TB_P}c$i" type veth peer name "${TB_P}h$i" netns "$h"
        ip -n "$TB_NS_C" addr add "10.77.$i.1/24" dev "${TB_P}c$i"
        ip -n "$h" addr add "10.77.$i.2/24" dev "${TB_P}h$i"
        # No packet bigger than the smallest bucket (tb_tbf_args): tbf checks a packet's size
        # against the bucket when it queues it, so after a rate drop a GSO packet queued under
        # the old, larger bucket would never fit the new one and stall the link for good.
        ip -n "$h" link set "${TB_P}h$i" gso_max_size "$TB_GSO_MAX"
        ip -n "$TB_NS_C" link set "${TB_P}c$i" up
        ip -n "$h" link set "${TB_P}h$i" up
    done
    # A process that lives in the client namespace for the whole run: tb_rx_bytes reads the
    # namespace's counters through its /proc entry.
    ip netns exec "$TB_NS_C" sleep infinity &
    TB_PIDS+=($!); TB_ANCHOR=$!
}

tb_ns() { echo "${TB_P}h$1"; }
tb_addr() { echo "10.77.$1.2"; }

# tb_rate I RATE: cap host I's egress (tbf); "none" removes the cap.  Usable mid-run (tc change).
tb_rate() {
    local i=$1 r=$2 h dev m
    h=$(tb_ns "$i"); dev="${TB_P}h$i"
    if [ "$r" = none ]; then
        ip netns exec "$h" tc qdisc del dev "$dev" root 2>/dev/null || true
        return 0
    fi
    m=$(tb_mbit "$r")
    # shellcheck disable=SC2046
    ip netns exec "$h" tc qdisc replace dev "$dev" root tbf $(tb_tbf_args "$m")
}

# tb_start_host I HARD_MB [LATENCY_MS JITTER_MS]: depot (IBP port 6714) and nginx (port 80)
# on host I, serving $TB_WORK/www.  With a latency, both listen on 127.0.0.1 inside the
# namespace and Toxiproxy listens on the host's address in front of them.
tb_start_host() {
    local i=$1 hard=$2 lat=${3:-0} jit=${4:-0} h a dir bind k
    h=$(tb_ns "$i"); a=$(tb_addr "$i"); dir=$TB_WORK/h$i
    mkdir -p "$dir/res" "$dir/nginx" "$TB_WORK/www"
    ip -n "$h" link set "${TB_P}h$i" up # after a tb_kill
    bind=$a
    [ "$lat" != 0 ] || [ "$jit" != 0 ] && bind=127.0.0.1
    local evlog=()
    [ -n "${TB_EVENT_LOG:-}" ] && evlog=(--event-log "$TB_EVENT_LOG/h$i.events" --event-sample 1)
    ip netns exec "$h" "$TB_BIN/ibp_depot" --listen "$bind" --port 6714 --public-host "$a" "${evlog[@]}" \
        --resource "$dir/res,hard=${hard}M,soft=16M,max-duration=86400" \
        --log-level warn >"$dir/depot.log" 2>&1 &
    TB_PIDS+=($!); TB_DEPOT_PID[$i]=$!
    disown $! # killed on purpose by tb_kill: no job notice
    cat >"$dir/nginx/nginx.conf" <<EOF
user root;
worker_processes 1;
daemon off;
pid $dir/nginx/nginx.pid;
error_log $dir/nginx/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    client_body_temp_path $dir/nginx/tmp;
    proxy_temp_path $dir/nginx/tmp;
    fastcgi_temp_path $dir/nginx/tmp;
    uwsgi_temp_path $dir/nginx/tmp;
    scgi_temp_path $dir/nginx/tmp;
    server { listen $bind:80; root $TB_WORK/www; }
}
EOF
    ip netns exec "$h" "$NGINX" -c "$dir/nginx/nginx.conf" -e "$dir/nginx/error.log" \
        >"$dir/nginx/stderr" 2>&1 &
    TB_PIDS+=($!); TB_NGINX_PID[$i]=$!
    disown $!
    if [ "$bind" = 127.0.0.1 ]; then
        tb_install_toxiproxy
        ip netns exec "$h" "$TB_TOXI" -host 127.0.0.1 -port 8474 >"$dir/toxi.log" 2>&1 &
        TB_PIDS+=($!)
        disown $!
        for k in $(seq 100); do
            ip netns exec "$h" curl -sf http://127.0.0.1:8474/version >/dev/null 2>&1 && break
            sleep 0.05
        done
        local name port
        for name in depot:6714 web:80; do
            port=${name#*:}; name=${name%%:*}
            ip netns exec "$h" curl -sf -X POST http://127.0.0.1:8474/proxies -d \
                "{\"name\":\"$name\",\"listen\":\"$a:$port\",\"upstream\":\"127.0.0.1:$port\"}" \
                >/dev/null
            # One-way: the data the host sends to the client is delayed.
            ip netns exec "$h" curl -sf -X POST "http://127.0.0.1:8474/proxies/$name/toxics" -d \
                "{\"type\":\"latency\",\"stream\":\"downstream\",\"attributes\":{\"latency\":$lat,\"jitter\":$jit}}" \
                >/dev/null
        done
    fi
    # Ready when the depot answers on its public address from the client.
    for k in $(seq 200); do
        if ip netns exec "$TB_NS_C" bash -c "exec 3<>/dev/tcp/$a/6714" 2>/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    tb_log "host $i: depot did not come up on $a:6714"; cat "$dir/depot.log" >&2
    return 1
}

# tb_kill I: SIGKILL every process of host I (depot, nginx master and worker, Toxiproxy): the
# depot and web server die, the host stays up.  The kernel still sends what the killed
# processes had queued in their sockets, then closes them (FIN/RST): clients learn at once.
tb_kill() {
    local p
    for p in $(ip netns pids "$(tb_ns "$1")" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
}

# tb_crash I: host I vanishes from the network: its link goes down, then tb_kill.  Nothing more
# arrives from it and nothing tells the clients: they must notice by themselves (timeouts).
tb_crash() {
    ip -n "$(tb_ns "$1")" link set "${TB_P}h$1" down 2>/dev/null || true
    tb_kill "$1"
}

# tb_restart_host I HARD_MB [LAT JIT]: after tb_kill, so the next run finds a whole host again
# (the depot's data survives in its resource directory).
tb_restart_host() {
    local i=$1 k
    for k in $(seq 100); do
        [ -z "$(ip netns pids "$(tb_ns "$i")" 2>/dev/null)" ] && break
        sleep 0.05
    done
    tb_start_host "$@"
}

# tb_client CMD...: run CMD in the client namespace.
tb_client() { ip netns exec "$TB_NS_C" "$@"; }

# tb_rx_bytes: bytes received so far on all the client's links (/proc/PID/net/dev of a process
# inside the client namespace shows that namespace's counters without a fork of ip).  %.0f, not %d:
# mawk's %d stops at 2^31 - 1, and a run of several rounds passes 2 GiB.
tb_rx_bytes() {
    awk -v p="${TB_P}c" '$1 ~ "^" p { sub(/^[^:]*:/, ""); s += $1 } END { printf "%.0f\n", s }' \
        "/proc/$TB_ANCHOR/net/dev" 2>/dev/null || echo 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    case ${1:-} in
    check) tb_check ;;
    sweep) tb_sweep ;;
    install-toxiproxy) tb_install_toxiproxy ;;
    *) echo "usage: testbed.sh check|sweep|install-toxiproxy (or source it)" >&2; exit 2 ;;
    esac
fi
