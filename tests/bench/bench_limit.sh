#!/bin/bash
# bench_limit.sh -- the calibrator (make bench-limit): what this machine allows for the work
# the benchmarks measure, by the minimal programs of bench_limit.c (no lns logic): memcpy, the
# hashes, the cipher, and one loopback TCP connection bare, hashed, and sealed and hashed.
# Each benchmark's figure divided by the line for the same path is its fraction of the
# machine's limit (docs/PERFORMANCE.md, "The machine's limits").
#
#   tests/bench/bench_limit.sh BUILD_DIR      (BENCH_SIZE: the TCP cases' bytes, default 1G)
set -euo pipefail

. "$(dirname "$0")/lib.sh"
L=$BUILD/bench/bench_limit
bench_need_built "$L"
SIZE=${BENCH_SIZE:-1G}
bench_workdir
echo "== bench_limit: machine"
bench_describe_machine
echo "== one core (best of 3 passes)"
for c in "memcpy" "hash blake3" "hash sha256" "hash crc64" "cipher"; do
    # shellcheck disable=SC2086 # c holds a command and its argument
    "$L" $c
done
echo "== loopback TCP, both ends on this machine (best of 3 passes of $SIZE)"
for c in "" "hash blake3" "hash sha256" "sealed" "sealed hash blake3" "sealed hash sha256"; do
    # shellcheck disable=SC2086
    "$L" tcp "$SIZE" $c
done
