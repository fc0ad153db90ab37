#!/usr/bin/env bash
# Runs one peer driver the way bench/README.md ("Peers") says it must be run, so numbers from
# different people and machines are comparable:
#   * glibc malloc never returns memory to the kernel (MALLOC_MMAP_MAX_=0,
#     MALLOC_TRIM_THRESHOLD_=64 GiB): otherwise MPI's internal buffers for large messages are
#     fresh pages on every call and first-touch faults (10-15 µs per 4 KiB page here) drop it
#     to ~0.3 GB/s at >= 32 MiB, which measures the kernel, not the library;
#   * Open MPI: shared-memory BTL (vader) plus self, without the single-copy (CMA/xpmem) path
#     that these containers do not permit; --oversubscribe so more ranks than cores start;
#     --allow-run-as-root for containers;
#   * MPICH: its defaults (Debian's ch4 build);
#   * Gloo: ranks started by `grove run -n N` (or by this script when no grove binary is found),
#     rendezvous in a fresh FileStore directory that is removed afterwards, TCP on 127.0.0.1.
#
# Usage: bench/peers/run.sh LIBRARY NRANKS COLLECTIVE [grove perf flags...]
#   LIBRARY     openmpi | mpich | gloo | all (the three, one after the other)
#   COLLECTIVE  allreduce | allgather | reducescatter | broadcast
#   flags       -b -e -f -i -n -w -c -r -a, as in grove perf
# Example: bench/peers/run.sh openmpi 2 allreduce -b 8 -e 64M -f 8
# Environment: PEERS_BIN (default build/bench/peers; build it with bench/peers/build.sh),
#              GROVE (the grove binary for gloo; default build/bin/grove, then PATH).
# Exit status: the driver's (0 all results right, 1 some wrong, 2 bad flags).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${PEERS_BIN:-$root/build/bench/peers}

if (($# < 3)); then
  sed -n '/^# Usage/,/^# Exit/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
library=$1
nranks=$2
shift 2
if ! [[ "$nranks" =~ ^[1-9][0-9]*$ ]]; then
  echo "run.sh: NRANKS: '$nranks' is not a positive integer" >&2
  exit 2
fi

export MALLOC_MMAP_MAX_=0
export MALLOC_TRIM_THRESHOLD_=68719476736

driver() {
  if [[ ! -x "$bin/$1" ]]; then
    echo "run.sh: $bin/$1 not found; build it with bench/peers/build.sh" >&2
    exit 2
  fi
  echo "$bin/$1"
}

run_openmpi() {
  local exe
  exe=$(driver mpi_perf_openmpi)
  mpirun.openmpi --allow-run-as-root --oversubscribe -np "$nranks" \
    --mca btl self,vader --mca btl_vader_single_copy_mechanism none \
    -x MALLOC_MMAP_MAX_ -x MALLOC_TRIM_THRESHOLD_ "$exe" "$@"
}

run_mpich() {
  local exe
  exe=$(driver mpi_perf_mpich)
  mpirun.mpich -np "$nranks" -genv MALLOC_MMAP_MAX_ "$MALLOC_MMAP_MAX_" \
    -genv MALLOC_TRIM_THRESHOLD_ "$MALLOC_TRIM_THRESHOLD_" "$exe" "$@"
}

find_grove() {
  if [[ -n "${GROVE:-}" ]]; then
    echo "$GROVE"
  elif [[ -x "$root/build/bin/grove" ]]; then
    echo "$root/build/bin/grove"
  else
    command -v grove || true
  fi
}

run_gloo() {
  local exe store grove status=0
  exe=$(driver gloo_perf)
  store=$(mktemp -d "${TMPDIR:-/tmp}/gloo-store.XXXXXX")
  grove=$(find_grove)
  if [[ -n "$grove" ]]; then
    "$grove" run -n "$nranks" -- "$exe" "$@" --store "$store" || status=$?
  else
    # No grove binary: start the ranks here, as grove run would (rank 0's output only).
    local pids=() rank
    for ((rank = 0; rank < nranks; ++rank)); do
      if ((rank == 0)); then
        GROVE_RANK=$rank GROVE_WORLD_SIZE=$nranks GLOO_PREFIX=run$$ \
          "$exe" "$@" --store "$store" &
      else
        GROVE_RANK=$rank GROVE_WORLD_SIZE=$nranks GLOO_PREFIX=run$$ \
          "$exe" "$@" --store "$store" >/dev/null &
      fi
      pids+=($!)
    done
    for pid in "${pids[@]}"; do
      wait "$pid" || { rc=$?; ((status == 0)) && status=$rc; }
    done
  fi
  rm -rf "$store"
  return "$status"
}

case "$library" in
  openmpi) run_openmpi "$@" ;;
  mpich) run_mpich "$@" ;;
  gloo) run_gloo "$@" ;;
  all)
    status=0
    for lib in openmpi mpich gloo; do
      "run_$lib" "$@" || status=$?
    done
    exit "$status"
    ;;
  *)
    echo "run.sh: LIBRARY: '$library' is not one of openmpi, mpich, gloo, all" >&2
    exit 2
    ;;
esac
