#!/usr/bin/env bash
# Smoke test of bench/hosts/run.sh, the across-hosts benchmark: the smallest run (2 emulated
# hosts x 1 process and 2 hosts x 2, unshaped, allreduce of 8 and 64 bytes, one round, grove
# and Open MPI) must exit 0, keep every library's raw table, measure the link's single-stream
# rate, and print a summary row per size with grove's ratio to Open MPI and a plot per
# configuration. Timings are not checked. Exit 77 (skipped) where namespaces cannot be made.
#
# Usage: hosts_test.sh GROVE_BINARY WORK_DIR
set -uo pipefail

grove=$1
work=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
rm -rf "$work"
mkdir -p "$work"

die() {
  echo "hosts_test: $*" >&2
  exit 1
}

HOSTS=2 PPN="1 2" LINKS=unshaped END=64 ROUNDS=1 ITERS=3 WARMUP=1 LIBS="grove openmpi" \
  GROVE=$grove OUT=$work/out "$root/bench/hosts/run.sh" >"$work/run.log" 2>&1
status=$?
((status == 77)) && { echo "SKIP: $(tail -1 "$work/run.log")"; exit 77; }
((status == 0)) || { tail -30 "$work/run.log"; die "bench/hosts/run.sh exited $status"; }
for ppn in 1 2; do
  for lib in grove openmpi; do
    file=$work/out/raw/2x${ppn}_unshaped_allreduce_${lib}_r1.txt
    [[ -s $file ]] || die "no raw table $file"
  done
  [[ -s $work/out/busbw_2x${ppn}_unshaped_allreduce.svg ]] || die "no plot for 2 hosts x $ppn"
done
grep -Eq '^2hosts_unshaped [0-9.]+$' "$work/out/streams.txt" ||
  die "streams.txt lacks the single-stream rate: $(cat "$work/out/streams.txt")"
rows=$(grep -Ec '^ +(8|64) \| +[0-9.]+ +[0-9.]+ \| +[0-9.]+ +[0-9.]+ \| +[0-9.]+ +[0-9.]+' \
  "$work/out/summary.txt")
[[ $rows == 4 ]] || { cat "$work/out/summary.txt"; die "summary has $rows rows with both libraries' times and a ratio, expected 4"; }
grep -q FAILED "$work/out/summary.txt" && die "the summary reports failed runs"
echo "hosts_test: ok"
