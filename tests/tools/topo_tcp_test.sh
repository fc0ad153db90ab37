#!/usr/bin/env bash
# Packed-tree plans over TCP: 8 processes with the dgx1v topology and GROVE_TRANSPORT=tcp run
# rsag_trees (up to ~30 concurrent channels, one lane each) and trees. Regression test for
# lanes that shared one socket: a full lane stalled the others and the allreduce deadlocked
# (it would now end in a timeout error instead, failing this test).
# Usage: topo_tcp_test.sh GROVE_BINARY
set -euo pipefail
grove=$1
for algo in rsag_trees trees; do
  out=$(GROVE_TIMEOUT=120 GROVE_TRANSPORT=tcp GROVE_TOPO_FILE=dgx1v \
    "$grove" run -n 8 -- "$grove" perf allreduce -b 4 -e 64K -f 128 -n 1 -w 0 -A "$algo")
  echo "$out" | tail -4
  grep -q "Out of bounds values : 0 OK" <<<"$out" || { echo "topo_tcp_test: $algo failed" >&2; exit 1; }
  grep -Eq "^ +65536 " <<<"$out" || { echo "topo_tcp_test: $algo: no 64 KiB row" >&2; exit 1; }
done
echo "topo_tcp_test: ok"
