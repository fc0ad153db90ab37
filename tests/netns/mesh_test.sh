#!/usr/bin/env bash
# mesh_test.sh GROVE [DEADLINE_S] — packed trees and rings on the emulated DGX-1V mesh.
#
# Why: the topology-aware path has parts that only meet on a real network — the communicator
# loading GROVE_TOPO_FILE, the TCP transport dialing each NVLink neighbour at the address the
# topology gives for that link (a veth of its own) and everything else over the PCIe bridge,
# and the packed-tree plans running over it. mesh.sh builds the mesh from network namespaces;
# this runs broadcast and allreduce on the GPU subset {0,1,4} (no NVLink ring) and on all 8,
# with GROVE_ALGO=trees and with rings, and requires exact values (grove perf -c 1: 0 wrong)
# and every rank to exit 0. No timing is asserted (bench/topo_mesh.sh measures).
# Also checked: links are shaped as the topology says, NVLink neighbours are dialed at their
# link addresses, the algorithm that ran is the one asked for, nothing is left behind.
# Exit 0 = pass, 77 = skipped (no namespaces here), else failed.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=mesh.sh
source "$here/mesh.sh"

grove=${1:?usage: mesh_test.sh GROVE [DEADLINE_S]}
deadline=$((SECONDS + ${2:-540}))

if ! netns_check; then
  echo "SKIP: $NETNS_REASON"
  exit "$NETNS_SKIP"
fi
[[ -x $grove ]] || { echo "FAIL: grove binary '$grove' not found or not executable"; exit 1; }
mesh_reap_stale

prefix=$(mesh_prefix)
work=$(mktemp -d "${TMPDIR:-/tmp}/grove-mesh.XXXXXX")
# shellcheck disable=SC2317  # called by netns_cleanup
netns_cleanup_hook() { rm -rf "$work"; }
failures=0
jobs_run=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# job NAME WANT_ALGO [VAR=VALUE...] -- PERF ARGS: one grove perf job on the current mesh.
job() {
  local name=$1 want=$2
  shift 2
  local vars=()
  while (($#)) && [[ $1 != -- ]]; do
    vars+=("$1")
    shift
  done
  shift
  local limit=$((deadline - SECONDS - 15)) r
  if ((limit < 20)); then
    fail "$name: not started, the test's time is nearly spent"
    return
  fi
  ((limit > 120)) && limit=120
  jobs_run=$((jobs_run + 1))
  echo "== $name: ${MESH_GPUS[*]} ${vars[*]} perf $*"
  if ! mesh_job "$name" "$limit" "$work" GROVE_TOPO_FILE="$work/mesh.json" GROVE_DEBUG=INFO \
    GROVE_TIMEOUT=60 "${vars[@]}" -- "$grove" perf "$@" -t 1 -c 1; then
    fail "$name: ranks failed (rank:status): ${MESH_FAILED[*]}"
    for r in "${MESH_FAILED[@]}"; do
      r=${r%%:*}
      grep -v ' INFO ' "$work/$name.$r.err" | tail -n 8 | sed "s/^/    rank $r err: /"
    done
  fi
  grep -q '^# Out of bounds values : 0 OK' "$work/$name.0.out" ||
    fail "$name: rank 0 did not report '# Out of bounds values : 0 OK'"
  # Rank 0's selection lines for the float calls timed ("<collective> count N float:
  # <algorithm>: ..."); grove perf's own bookkeeping calls are of other types.
  local chosen
  chosen=$(grep -ohiE "GROVE INFO $1 count [0-9]+ float: [a-z_]+" "$work/$name.0.err" |
    awk '{print $NF}' | sort -u | xargs)
  if [[ -z $chosen ]] || tr ' ' '\n' <<<"$chosen" | grep -qvxE "$want"; then
    fail "$name: expected algorithm $want, rank 0 chose: ${chosen:-nothing logged}"
  fi
  local left
  left=$(for ((r = 0; r < ${#MESH_GPUS[@]}; r++)); do
    ip netns pids "$(netns_host "$prefix" "$r")" 2>/dev/null
  done | xargs)
  [[ -z $left ]] && return
  fail "$name: processes left in the mesh: $left"
}

# checks after mesh_up: the shaping and addresses are the topology's.
check_mesh() {
  local n=${#MESH_GPUS[@]}
  tc -n "${prefix}h0" qdisc show dev pcie | grep -q "rate $(mesh_pcie_mbit)Mbit" ||
    fail "rank 0's PCIe port is not shaped to $(mesh_pcie_mbit)Mbit"
  # GPU 0 and GPU 4 have two NVLinks: 2 x UNIT on both ends.
  local i j
  for ((i = 0; i < n; i++)); do
    for ((j = 0; j < n; j++)); do
      ((i != j)) || continue
      local c
      c=$(mesh_links "${MESH_GPUS[i]}" "${MESH_GPUS[j]}")
      if ((c > 0)); then
        tc -n "${prefix}h$i" qdisc show dev "nv$j" | grep -q "rate $((c * $(mesh_unit_mbit)))Mbit" ||
          fail "link $i->$j is not shaped to $c x $(mesh_unit_mbit)Mbit"
      elif ip -n "${prefix}h$i" link show "nv$j" >/dev/null 2>&1; then
        fail "ranks $i and $j (GPUs ${MESH_GPUS[i]}, ${MESH_GPUS[j]}) have a link but no NVLink"
      fi
    done
  done
  python3 -c 'import json, sys; json.load(open(sys.argv[1])); json.load(open(sys.argv[2]))' \
    "$work/mesh.json" "$work/mesh-nvlink.json" || fail "the topology JSON is not valid"
}

# run_subset TAG GPUS: broadcast (root = the last rank) and allreduce, trees and rings.
run_subset() {
  local tag=$1 gpus=$2
  mesh_up "$prefix" "$gpus" "$work" || { fail "$tag: mesh_up $gpus"; return; }
  check_mesh
  local n=${#MESH_GPUS[@]} root
  root=$((n - 1))
  # Sizes that do not divide by the rank count or the number of trees, 4 bytes to 1 MiB.
  job "$tag.broadcast.trees" trees GROVE_ALGO=trees -- broadcast -r "$root" -b 4 -e 1M -f 64 -n 1 -w 1
  job "$tag.allreduce.trees" 'trees|rsag_trees' GROVE_ALGO=trees,rsag_trees -- \
    allreduce -b 4 -e 1000000 -f 50 -n 1 -w 1
  job "$tag.broadcast.ring" chain GROVE_ALGO='broadcast:chain' -- \
    broadcast -r "$root" -b 4 -e 1M -f 64 -n 1 -w 1
  job "$tag.allreduce.ring" ring GROVE_ALGO='allreduce:ring' -- allreduce -b 4 -e 1000000 -f 50 -n 1 -w 1
  local dialed
  dialed=$(cat "$work/$tag".*.err | grep -c "the topology's link address")
  ((dialed > 0)) || fail "$tag: no rank dialed a peer at its link address"
  if grep -h "via 198.18.0" "$work/$tag".*.err | grep -q "link address"; then
    fail "$tag: a link address on the PCIe bridge"
  fi
  netns_down "$prefix"
  [[ -z $(netns_list "$prefix") ]] || fail "$tag: left after clean-up: $(netns_list "$prefix" | xargs)"
}

run_subset s014 0,1,4
run_subset all8 all

netns_cleanup
left=$(netns_list "$prefix" | xargs)
[[ -n $left ]] && fail "namespaces left after the test: $left"
if ((failures)); then
  echo "mesh: $failures failure(s)"
  exit 1
fi
echo "mesh: passed ($jobs_run jobs)"
exit 0
