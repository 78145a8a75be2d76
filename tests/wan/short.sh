#!/bin/bash
# short.sh -- the WAN testbed's short check for `make test` (run by tests/system/test_wan_short):
# two hosts behind 40 Mbit/s tbf caps, 2 copies of an 8 MiB file, one depot SIGKILLed mid-stream.
#
#   tests/wan/short.sh BIN_DIR
#
# Asserts that lors_download still writes the exact bytes (sha256).  When the players exist
# (BIN_DIR/lors_play and lns_paced), also streams the file with `lors_play --player paced
# --headless` at 16 Mbit/s (a fifth of the capacity, still well below the 40 Mbit/s left after
# the kill) with a depot killed after 1 s, and asserts zero underruns.  Last, a link's rate drops
# from 100 to 4 Mbit/s under a bulk transfer (curl from the host's nginx): it must go on at
# 4 Mbit/s, not stall (a tbf bucket smaller than the packets already queued; testbed.sh).
# Exit: 0 passed, 1 failed, 77 skipped (network namespaces not permitted here).  Needs no
# Toxiproxy, ffmpeg or aria2: only ip, tc, curl, nginx, ibp_depot and the lors tools.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TB_BIN=$(cd "${1:?usage: short.sh BIN_DIR}" && pwd)
# shellcheck source=tests/wan/testbed.sh
. "$HERE/testbed.sh"

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
    echo "short: skipped: needs root, ip and tc (network namespaces)"; exit 77
fi
if ! tb_check; then
    echo "short: skipped: network namespaces, veth or tbf not permitted here"; exit 77
fi
for f in ibp_depot lors_upload lors_download; do
    [ -x "$TB_BIN/$f" ] || { echo "short: $TB_BIN/$f: not built"; exit 1; }
done
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { echo "short: nginx missing"; exit 1; }

tb_trap
tb_up 2
SIZE=$((8 * 1048576))
for i in 1 2; do tb_start_host "$i" 64; done
head -c "$SIZE" /dev/urandom >"$TB_WORK/file"
SUM=$(sha256sum <"$TB_WORK/file" | cut -d' ' -f1)
tb_client "$TB_BIN/lors_upload" --no-rc --no-report --quiet --depot-list "10.77.1.2:6714,10.77.2.2:6714" \
    -c 2 -F 2 -d 1h -o "$TB_WORK/file.xnd" "$TB_WORK/file"
for i in 1 2; do tb_rate "$i" 40mbit; done

# 1. lors_download, host1's depot killed once 40% of the bytes have arrived.
base=$(tb_rx_bytes)
start=$(date +%s%N)
tb_client "$TB_BIN/lors_download" -V --no-rc --no-report -o "$TB_WORK/out" "$TB_WORK/file.xnd" \
    2>"$TB_WORK/dl.err" &
dl=$!
killed_at=""
while kill -0 "$dl" 2>/dev/null; do
    if [ "$(( $(tb_rx_bytes) - base ))" -ge $(( SIZE * 4 / 10 )) ]; then
        tb_kill 1
        killed_at=$(( ($(date +%s%N) - start) / 1000000 ))
        break
    fi
    sleep 0.01
done
rc=0
wait "$dl" || rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$TB_WORK/dl.err"
if [ -z "$killed_at" ]; then
    echo "short: FAIL: the download ended before 40% of the bytes arrived (exit $rc): the caps do not hold"
    exit 1
fi
echo "short: download exit $rc in $ms ms (80 Mbit/s ideal: 839 ms before the kill's loss), depot 1 killed at $killed_at ms"
[ "$rc" -eq 0 ] || { echo "short: FAIL: lors_download exit $rc"; exit 1; }
got=$(sha256sum <"$TB_WORK/out" | cut -d' ' -f1)
[ "$got" = "$SUM" ] || { echo "short: FAIL: output differs from the source"; exit 1; }
# The caps must have held: 8 MiB cannot arrive faster than 80 Mbit/s allows (0.84 s).
[ "$ms" -ge 800 ] || { echo "short: FAIL: $ms ms is faster than the links allow: caps not applied"; exit 1; }
echo "short: download correct"

# 2. Streaming at 16 Mbit/s with a depot killed after 1 s: zero underruns.
if [ -x "$TB_BIN/lors_play" ] && [ -x "$TB_BIN/lns_paced" ]; then
    tb_kill 1
    tb_restart_host 1 64
    tb_rate 1 40mbit
    PATH=$TB_BIN:$PATH tb_client "$TB_BIN/lors_play" --no-rc --player paced --headless \
        --bitrate 16M --prebuffer 1 "$TB_WORK/file.xnd" 2>"$TB_WORK/play.err" &
    pl=$!
    sleep 1
    tb_kill 1
    rc=0
    wait "$pl" || rc=$?
    cat "$TB_WORK/play.err"
    [ "$rc" -eq 0 ] || { echo "short: FAIL: lors_play exit $rc"; exit 1; }
    n=$(sed -n 's/.*underruns \([0-9][0-9]*\),.*/\1/p' "$TB_WORK/play.err" | tail -1)
    [ -n "$n" ] || { echo "short: FAIL: lors_play reported no underrun count"; exit 1; }
    [ "$n" -eq 0 ] || { echo "short: FAIL: $n underruns at 16 Mbit/s over 2 x 40 Mbit/s"; exit 1; }
    echo "short: streaming with a depot killed: 0 underruns"
else
    echo "short: streaming part not run: $TB_BIN/lors_play or lns_paced not built"
fi
# 3. A rate drop under load: the link goes on at its new rate.  At 100 Mbit/s the bucket holds
# 50 KB, so big GSO packets queue; a link that let them out now waited for a bucket of the new
# rate's size that can never hold them (0 bytes a second, where 4 Mbit/s is 500 KB).
head -c $((32 * 1048576)) /dev/zero >"$TB_WORK/www/bulk"
tb_rate 2 100mbit
tb_client curl -s -o /dev/null "http://$(tb_addr 2)/bulk" &
cu=$!
sleep 0.5
tb_rate 2 4mbit
sleep 0.3
a=$(tb_rx_bytes)
sleep 1
b=$(tb_rx_bytes)
kill "$cu" 2>/dev/null || true
wait "$cu" 2>/dev/null || true
echo "short: after a drop from 100 to 4 Mbit/s the link carried $((b - a)) bytes in 1 s"
[ $((b - a)) -ge 250000 ] || { echo "short: FAIL: the link stalled after its rate drop"; exit 1; }
echo "short: passed"
