#!/usr/bin/env bash
# topo_mesh.sh — packed trees against rings on the emulated DGX-1V NVLink mesh, with the flow
# bound and the simulator's prediction for every case.
#
# Why: the claim of grove's topology-aware plans (Blink, MLSys 2020) is that on a partial
# allocation of a GPU mesh, trees packed over the NVLinks reach the min-cut bound while a ring
# must take a slow PCIe hop; and that the simulator predicts both well enough to choose. This
# measures all three on a real (emulated) network: tests/netns/mesh.sh builds the mesh from
# network namespaces (a tbf-shaped veth per NVLink pair, MESH_UNIT_MBIT per link, and a
# shared bridge at half that standing for PCIe); every rank is a process in its namespace.
#
# For each GPU subset and for broadcast (root 0) and allreduce, it runs `grove perf` at SIZE
# with GROVE_ALGO set to the packed trees and to the ring (broadcast's ring is the pipelined
# chain, as in NCCL), and prints one row per run:
#   measured algbw  S / time (the mean of grove perf's out-of-place and in-place times, each
#                   the slowest rank's: -a 3, since a root returns before its data arrives), in
#                   MB/s and in link units (1 unit = MESH_UNIT_MBIT / 8 MB/s)
#   bound           `grove topo bounds` of the NVLink graph: λ(root) for broadcast, the best
#                   tree allreduce rate max(σ, RS+AG) for allreduce (the rates of the reference
#                   table; PCIe is left out, as the trees do)
#   meas/bound, tree/ring speed-up (on the trees row),
#   predicted       the simulator's algbw for the algorithm that ran (`grove plan --topo` on the
#                   full topology, PCIe included), and sim error = predicted time / measured
#                   time − 1.
#
# Usage (as root, after `make`): bench/topo_mesh.sh [GROVE]
#   GROVE           the grove binary (default build/bin/grove)
#   SIZE            bytes per call (default 64M: each call also pays a fixed ~50-100 ms on
#                   the 2 shared cores that the simulator does not model, which at 32M cost
#                   the 8-rank trees ~10 % of their rate); ITERS / WARMUP: grove perf -n / -w
#                   (default 5 / 1: with -n 2 the fixed cost of one call still showed)
#   SUBSETS         space-separated GPU lists (default "0,1,4 0,2,3 0,3,4,7 0,1,2,4,5 all")
#   COLLECTIVES     default "broadcast allreduce"
#   MODES           default "trees ring" (one of them to measure only that row)
#   MESH_UNIT_MBIT  Mbit/s per NVLink (default 100); MESH_PCIE_MBIT (default half of it)
#   MESH_QUEUE_MS   tbf queue per link (default 1000: lossless; the drops column shows it)
#   MESH_MTU        the veths' MTU (default 65520: TCP/IP headers cost no link capacity)
#   GROVE_SLOT_BYTES, GROVE_FIFO_DEPTH  the executor's tile size and FIFO slots, passed to
#                   the ranks and to the prediction when set (defaults 256 KiB and 4)
# Measure on a quiet machine (uptime load < 3): the ranks share its cores.
set -u

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../tests/netns/mesh.sh
source "$root/tests/netns/mesh.sh"

grove=${1:-$root/build/bin/grove}
size=${SIZE:-64M}
iters=${ITERS:-5}
warmup=${WARMUP:-1}
subsets=${SUBSETS:-"0,1,4 0,2,3 0,3,4,7 0,1,2,4,5 all"}
collectives=${COLLECTIVES:-"broadcast allreduce"}
modes=${MODES:-"trees ring"}

if ! netns_check; then
  echo "topo_mesh: cannot make network namespaces here: $NETNS_REASON" >&2
  exit "$NETNS_SKIP"
fi
[[ -x $grove ]] || { echo "topo_mesh: grove binary '$grove' not found (run make)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "topo_mesh: python3 is needed to read JSON" >&2; exit 1; }
mesh_reap_stale
prefix=$(mesh_prefix)
work=$(mktemp -d "${TMPDIR:-/tmp}/grove-topo-mesh.XXXXXX")
# shellcheck disable=SC2317  # called by netns_cleanup
netns_cleanup_hook() { rm -rf "$work"; }

load=$(cut -d' ' -f1 /proc/loadavg)
echo "# topo_mesh: $(date -u +%FT%TZ), $(nproc) CPUs, load $load; NVLink unit $(mesh_unit_mbit) Mbit/s," \
  "PCIe $(mesh_pcie_mbit) Mbit/s per port; size $size, -n $iters -w $warmup"
awk -v l="$load" 'BEGIN { exit !(l >= 3) }' &&
  echo "# warning: load $load >= 3: the numbers below are disturbed by other work"

# algo_env MODE COLLECTIVE: the GROVE_ALGO of a run.
algo_env() {
  case $1/$2 in
    trees/broadcast) echo "broadcast:trees" ;;
    trees/allreduce) echo "allreduce:trees,rsag_trees" ;;
    ring/broadcast) echo "broadcast:chain" ;;
    ring/allreduce) echo "allreduce:ring" ;;
  esac
}

# json_get FILE PYTHON-EXPRESSION-ON-d: prints the value (empty when absent).
json_get() {
  python3 - "$1" "$2" <<'EOF' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
try:
    v = eval(sys.argv[2], {"d": d})
    print("" if v is None else v)
except Exception:
    print("")
EOF
}

geometry=()  # the executor's tile and FIFO settings, for the ranks and the prediction
[[ -n ${GROVE_SLOT_BYTES:-} ]] && geometry+=(GROVE_SLOT_BYTES="$GROVE_SLOT_BYTES")
[[ -n ${GROVE_FIFO_DEPTH:-} ]] && geometry+=(GROVE_FIFO_DEPTH="$GROVE_FIFO_DEPTH")
echo "# tbf queue ${MESH_QUEUE_MS:-1000} ms, MTU ${MESH_MTU:-65520}; tile ${GROVE_SLOT_BYTES:-262144} B," \
  "FIFO depth ${GROVE_FIFO_DEPTH:-4}"

rows=()
printf '%-22s %-11s %-10s %9s %7s %7s %7s %9s %9s %8s %6s\n' case algorithm ran 'MB/s' units bound \
  meas/bnd tree/ring predicted 'sim err' drops
for gpus in $subsets; do
  if ! mesh_up "$prefix" "$gpus" "$work"; then
    echo "topo_mesh: cannot build the mesh of GPUs $gpus" >&2
    exit 1
  fi
  label="{$(IFS=,; echo "${MESH_GPUS[*]}")}"
  [[ $gpus == all ]] && label="all 8"
  "$grove" topo bounds --topo "$work/mesh-nvlink.json" --json >"$work/bounds.json" 2>"$work/bounds.err" ||
    echo "topo_mesh: grove topo bounds failed: $(head -c 300 "$work/bounds.err")" >&2
  for coll in $collectives; do
    case $coll in
      broadcast) bound=$(json_get "$work/bounds.json" 'round(d["lambda"][0]["units"], 3)') ;;
      allreduce) bound=$(json_get "$work/bounds.json" 'round(d["allreduce"]["units"], 3)') ;;
      *) echo "topo_mesh: unknown collective $coll" >&2; exit 2 ;;
    esac
    env "${geometry[@]}" "$grove" plan "$coll" --topo "$work/mesh.json" --size "$size" -r 0 --json \
      --fifo-depth "${GROVE_FIFO_DEPTH:-4}" \
      >"$work/plan.json" 2>"$work/plan.err" ||
      echo "topo_mesh: grove plan $coll failed: $(head -c 300 "$work/plan.err")" >&2
    rootarg=()
    [[ $coll == broadcast ]] && rootarg=(-r 0)
    declare -A rate=()
    for mode in $modes; do
      name="$coll.$mode"
      drops_before=$(mesh_drops "$prefix")
      mesh_job "$name" 900 "$work" GROVE_TOPO_FILE="$work/mesh.json" GROVE_DEBUG=INFO "${geometry[@]}" \
        GROVE_ALGO="$(algo_env "$mode" "$coll")" -- \
        "$grove" perf "$coll" -b "$size" -e "$size" -n "$iters" -w "$warmup" -c 0 -a 3 -t 1 "${rootarg[@]}"
      if ((${#MESH_FAILED[@]})); then
        echo "topo_mesh: $label $name: ranks failed (rank:status) ${MESH_FAILED[*]}:" >&2
        grep -hv ' INFO ' "$work/$name".*.err | tail -n 5 >&2
        continue
      fi
      # rank 0's row: size count type redop root time algbw busbw wrong time algbw busbw wrong
      read -r bytes t_oop t_ip < <(awk '!/^#/ && NF >= 10 { print $1, $6, $10; exit }' \
        "$work/$name.0.out")
      ran=$(grep -ohiE "GROVE INFO $coll count [0-9]+ float: [a-z_]+" "$work/$name.0.err" |
        awk '{print $NF}' | tail -n 1)
      read -r mbps units time_us < <(awk -v b="$bytes" -v x="$t_oop" -v y="$t_ip" \
        -v u="$(mesh_unit_mbit)" 'BEGIN { t = (x + y) / 2; m = b / t; printf "%.2f %.3f %.0f", m, m / (u / 8), t }')
      rate[$mode]=$mbps
      predicted_us=$(json_get "$work/plan.json" \
        "[c.get('predicted_us') for c in d['candidates'] if c['algorithm'] == '$ran'][0]")
      read -r ratio speedup pred err < <(awk -v m="$units" -v bnd="${bound:-0}" -v tr="${rate[trees]:-0}" \
        -v rr="${rate[ring]:-0}" -v mode="$mode" -v p="${predicted_us:-0}" -v t="$time_us" -v b="$bytes" '
        BEGIN {
          ratio = bnd > 0 ? sprintf("%.2f", m / bnd) : "-"
          speed = (mode == "ring" && tr > 0 && rr > 0) ? sprintf("%.2fx", tr / rr) : "-"
          pred = p > 0 ? sprintf("%.2f", b / p) : "-"
          err = p > 0 ? sprintf("%+.0f%%", (p / t - 1) * 100) : "-"
          print ratio, speed, pred, err
        }')
      drops=$(($(mesh_drops "$prefix") - drops_before))
      row=$(printf '%-22s %-11s %-10s %9s %7s %7s %7s %9s %9s %8s %6s' "$label $coll" "$mode" \
        "${ran:-?}" "$mbps" "$units" "${bound:--}" "$ratio" "$speedup" "$pred" "$err" "$drops")
      echo "$row"
      rows+=("$row")
    done
    unset rate
  done
  netns_down "$prefix"
done
echo "# MB/s and predicted: algbw in MB/s; units: algbw in NVLink units; bound: NVLink-only flow"
echo "# bound in units; tree/ring on the ring row: trees' algbw over the ring's; sim err: predicted"
echo "# time over measured time - 1; drops: packets the tbf queues dropped during the run."
