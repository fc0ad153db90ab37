#!/usr/bin/env bash
# Builds the peer benchmark drivers into build/bench/peers/ (or $1):
#   mpi_perf_openmpi   bench/peers/mpi_perf.cpp built by mpicxx.openmpi
#   mpi_perf_mpich     the same source built by mpicxx.mpich
#   gloo_perf          bench/peers/gloo_perf.cpp linked with Debian's libgloo
# Why not CMake: each MPI's compiler wrapper brings its own include paths, libraries and
# flags, and Open MPI and MPICH both name their header mpi.h; one wrapper per binary is the
# way their users build. The drivers are header-only apart from their one source, so a plain
# compiler call each is enough. -O2 without -march=native, like the grove library.
#
# Usage: bench/peers/build.sh [OUT_DIR]   (packages: scripts/install-deps.sh)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build/bench/peers}
mkdir -p "$out"

# The MPI C API only: skip the deprecated C++ bindings both MPIs still ship.
flags=(-std=c++20 -O2 -g -Wall -Wextra -I"$here")
mpiflags=(-DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1)

need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "build.sh: $1 not found (install $2; see scripts/install-deps.sh)" >&2
    exit 1
  fi
}
need mpicxx.openmpi "openmpi-bin libopenmpi-dev"
need mpicxx.mpich "mpich libmpich-dev"
need g++ "build-essential"

echo "build.sh: mpi_perf_openmpi"
mpicxx.openmpi "${flags[@]}" "${mpiflags[@]}" "$here/mpi_perf.cpp" -o "$out/mpi_perf_openmpi" &
pids=($!)
echo "build.sh: mpi_perf_mpich"
mpicxx.mpich "${flags[@]}" "${mpiflags[@]}" "$here/mpi_perf.cpp" -o "$out/mpi_perf_mpich" &
pids+=($!)
wait "${pids[@]}"
if [[ ! -e /usr/include/gloo/allreduce.h ]]; then
  echo "build.sh: Gloo headers not found (install libgloo-dev)" >&2
  exit 1
fi
echo "build.sh: gloo_perf"
# Debian's libgloo is built with ibverbs and Redis (hiredis) support; the shared library
# carries those dependencies itself, so only -lgloo is needed here.
g++ "${flags[@]}" "$here/gloo_perf.cpp" -o "$out/gloo_perf" -lgloo -pthread
echo "build.sh: built $out/{mpi_perf_openmpi,mpi_perf_mpich,gloo_perf}"
