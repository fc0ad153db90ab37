#!/usr/bin/env bash
# Smoke test of bench/compare, the grove-against-peers benchmark: a --quick run (tiny sizes,
# one round, two ranks; grove, grove-reg (-R 1), grove-threads and whichever peer drivers are
# already built)
# must write compare.csv and summary.csv with the documented columns, a row for every
# collective and a plot per collective; and a run whose table reports wrong elements, or
# whose command fails, must stop with a message saying so. Exact numbers are not checked:
# they are timings.
#
# Usage: compare_test.sh GROVE_BINARY WORK_DIR
set -euo pipefail

grove=$1
work=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
compare=$root/bench/compare
rm -rf "$work"
mkdir -p "$work"

die() {
  echo "compare_test: $*" >&2
  exit 1
}

# 1. A quick run: files, columns, rows.
"$compare" --quick --grove "$grove" --out "$work/quick" >"$work/quick.log" 2>&1 ||
  { cat "$work/quick.log"; die "bench/compare --quick failed"; }
want="ranks,collective,library,size,round,time_us,algbw,busbw"
got=$(head -1 "$work/quick/compare.csv" | tr -d '\r')
[[ "$got" == "$want" ]] || die "compare.csv header is '$got', expected '$want'"
want="ranks,collective,size,library,rounds,median_time_us,median_algbw,median_busbw,ratio"
want+=",ratio_registered,ratio_metric,best_of"
got=$(head -1 "$work/quick/summary.csv" | tr -d '\r')
[[ "$got" == "$want" ]] || die "summary.csv header is '$got', expected '$want'"
for coll in allreduce allgather reducescatter broadcast; do
  for lib in grove grove-reg grove-threads; do
    # --quick sweeps 8 B to 256 KiB by 8: 6 sizes (allgather/reducescatter: the same sizes).
    n=$(grep -c "^2,$coll,$lib,[0-9]*,1," "$work/quick/compare.csv" || true)
    [[ "$n" == 6 ]] || die "compare.csv has $n rows for 2 ranks, $coll, $lib; expected 6"
  done
  # Ratios: of times below 64 KiB, of bus bandwidths from 64 KiB on.
  grep -q "^2,$coll,4096,grove-threads,1,[^,]*,[^,]*,[^,]*,[^,]*,,time,$" \
    "$work/quick/summary.csv" || die "summary.csv: no time ratio for $coll at 4096 B"
  grep -q "^2,$coll,262144,grove-threads,1,[^,]*,[^,]*,[^,]*,[^,]*,,busbw,$" \
    "$work/quick/summary.csv" || die "summary.csv: no busbw ratio for $coll at 256 KiB"
  svg=$work/quick/busbw_${coll}_2r.svg
  [[ -s "$svg" ]] || die "plot $svg missing"
  grep -q "<polyline" "$svg" || die "plot $svg has no line"
done
grep -q "ratio x<lib> = <lib> time / grove time below 64 KiB" "$work/quick/summary.txt" ||
  die "summary.txt does not state the ratio rule"

# 2. Wrong results stop it: a stand-in grove whose table has 3 wrong elements.
fake=$work/fake_grove
cat >"$fake" <<'EOF'
#!/bin/sh
echo "#   size  count  type redop root  time algbw busbw #wrong  time algbw busbw #wrong"
echo "       8      2 float   sum   -1  1.00  0.01  0.01      3  1.00  0.01  0.01      0"
EOF
chmod +x "$fake"
if "$compare" --quick --libs grove-threads --collectives allreduce --grove "$fake" \
  --out "$work/wrong" >"$work/wrong.log" 2>&1; then
  die "a table with #wrong = 3 was accepted"
fi
grep -q "#wrong is 3 out of place" "$work/wrong.log" ||
  die "no #wrong message: $(cat "$work/wrong.log")"

# 3. A failing run stops it, naming the exit status.
if "$compare" --quick --libs grove-threads --collectives broadcast --grove /bin/false \
  --out "$work/false" >"$work/false.log" 2>&1; then
  die "a run exiting 1 was accepted"
fi
grep -q "exit status 1" "$work/false.log" ||
  die "no exit-status message: $(cat "$work/false.log")"
echo "compare_test: ok"
