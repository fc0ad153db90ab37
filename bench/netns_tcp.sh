#!/usr/bin/env bash
# netns_tcp.sh — how close grove's TCP transport gets to the wire, on two emulated hosts.
#
# Why: a collective over TCP can at best move bytes as fast as one plain socket stream between
# the same two hosts. This puts two network namespaces behind a bridge (tests/netns/netns.sh),
# measures that ceiling with bench/hosts/stream.py (an iperf-style single stream),
# then runs a 2-host `grove perf allreduce` at 64 MiB and prints both, so a regression of the
# transport shows as a falling ratio rather than a number without context. Needs root.
#
# Usage: bench/netns_tcp.sh [GROVE] [-- EXTRA PERF ARGS]
#   GROVE          the grove binary (default build/bin/grove)
#   NETNS_RATE     shape each host link with tc tbf at this rate (e.g. 1gbit); default unshaped
#   STREAM_MIB     bytes per single-stream run, in MiB (default 2048); 3 runs, the best counts
#   GROVE_NSOCKS   passed on to the ranks (sockets per peer) when set
set -u

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../tests/netns/netns.sh
source "$root/tests/netns/netns.sh"

grove=${1:-$root/build/bin/grove}
shift || true
[[ ${1:-} == -- ]] && shift
extra=("$@")
stream_mib=${STREAM_MIB:-2048}

if ! netns_check; then
  echo "netns_tcp: cannot make network namespaces here: $NETNS_REASON" >&2
  exit "$NETNS_SKIP"
fi
[[ -x $grove ]] || { echo "netns_tcp: grove binary '$grove' not found" >&2; exit 1; }
netns_reap_stale
prefix=$(netns_prefix)
work=$(mktemp -d "${TMPDIR:-/tmp}/grove-netns-bench.XXXXXX")
# shellcheck disable=SC2317  # called by netns_cleanup
netns_cleanup_hook() { rm -rf "$work"; }
netns_up 2 "$prefix" "${NETNS_RATE:-}" || exit 1

echo "# single stream, host 0 -> host 1, ${stream_mib} MiB per run (python3 sockets, 1 MiB buffers)"
best=0
for run in 1 2 3; do
  netns_spawn "$prefix" 1 "$work/recv.$run" "$work/recv.$run.err" \
    python3 "$root/bench/hosts/stream.py" recv "$(netns_addr 1)" 5201
  receiver=$NETNS_LAST_PID
  netns_run "$prefix" 0 python3 "$root/bench/hosts/stream.py" send "$(netns_addr 1)" 5201 "$stream_mib"
  wait "$receiver"
  read -r bytes seconds gbits <"$work/recv.$run"
  echo "  run $run: $bytes bytes in $seconds s = $gbits Gbit/s = $(awk "BEGIN{printf \"%.2f\", $gbits/8}") GB/s"
  best=$(awk "BEGIN{print ($gbits > $best) ? $gbits : $best}")
done

echo "# grove perf allreduce, 2 hosts x 1 rank, 64 MiB (TCP)"
jobid=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
pids=()
for r in 0 1; do
  GROVE_RANK=$r GROVE_WORLD_SIZE=2 GROVE_ROOT=$(netns_addr 0):29500 GROVE_SECRET=$secret \
    GROVE_JOB_ID=$jobid netns_spawn "$prefix" $r "$work/perf.$r" "$work/perf.$r.err" \
    timeout -k 5 300 "$grove" perf allreduce -t 1 -b 64M -e 64M -n 20 -w 5 "${extra[@]}"
  pids+=("$NETNS_LAST_PID")
done
status=0
for r in 0 1; do
  wait "${pids[r]}" || { status=1; echo "rank $r failed:"; cat "$work/perf.$r.err"; }
done
grep -E '^#|^ +[0-9]' "$work/perf.0"
row=$(grep -E '^ +67108864 ' "$work/perf.0")
if [[ -n $row ]]; then
  # Columns: size count type redop root | time algbw busbw #wrong (out-of-place) | in-place.
  read -r _ _ _ _ _ _ _ oop _ _ _ inp _ <<<"$row"
  echo "# summary: allreduce busbw at 64 MiB: out-of-place $oop GB/s, in-place $inp GB/s;" \
    "single stream best $(awk "BEGIN{printf \"%.2f\", $best/8}") GB/s ($best Gbit/s)"
fi
exit $status
