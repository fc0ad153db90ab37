#!/usr/bin/env bash
# Builds the peer benchmark drivers into build/bench/peers/ (or $1):
#   mpi_perf_openmpi   bench/peers/mpi_perf.cpp built by mpicxx.openmpi
#   mpi_perf_mpich     the same source built by mpicxx.mpich
#   gloo_perf          bench/peers/gloo_perf.cpp linked with Debian's libgloo
# Why not CMake: each MPI's compiler wrapper brings its own include paths, libraries and
# flags, and Open MPI and MPICH both name their header mpi.h; one wrapper per binary is the
# way their users build. The drivers are header-only apart from their one source, so a plain
# compiler call each is enough. -O2 without -march=native, like the grove library. A driver is
# rebuilt when its source or a shared header is newer than it (make's rule), else kept.
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

# stale BINARY SOURCE: true when BINARY is missing or older than its source, the headers the
# drivers share or this script (its flags), so a changed driver is always rebuilt and an unchanged one never is.
stale() {
  [[ -x $1 ]] || return 0
  local src
  for src in "$2" "$here"/*.hpp "${BASH_SOURCE[0]}"; do
    [[ $src -nt $1 ]] && return 0
  done
  return 1
}

# build BINARY COMPILER ARGS...: compiles into a temporary file and renames it over BINARY, so
# a benchmark running the old driver meanwhile (bench/compare and bench/hosts may run
# together) never sees a half-written one: a rename replaces the file at once.
build() {
  local bin=$1 compiler=$2
  shift 2
  local tmp
  tmp=$(mktemp "$bin.XXXXXX")
  if ! "$compiler" "$@" -o "$tmp"; then
    rm -f "$tmp"
    return 1
  fi
  chmod 755 "$tmp"
  mv -f "$tmp" "$bin"
}

pids=()
for mpi in openmpi mpich; do
  bin=$out/mpi_perf_$mpi
  if stale "$bin" "$here/mpi_perf.cpp"; then
    echo "build.sh: mpi_perf_$mpi"
    build "$bin" "mpicxx.$mpi" "${flags[@]}" "${mpiflags[@]}" "$here/mpi_perf.cpp" &
    pids+=($!)
  fi
done
for pid in "${pids[@]}"; do
  wait "$pid" || { echo "build.sh: an MPI driver failed to build" >&2; exit 1; }
done
if [[ ! -e /usr/include/gloo/allreduce.h ]]; then
  echo "build.sh: Gloo headers not found (install libgloo-dev)" >&2
  exit 1
fi
# Debian's libgloo is built with ibverbs and Redis (hiredis) support; the shared library
# carries those dependencies itself, so only -lgloo is needed here.
if stale "$out/gloo_perf" "$here/gloo_perf.cpp"; then
  echo "build.sh: gloo_perf"
  build "$out/gloo_perf" g++ "${flags[@]}" "$here/gloo_perf.cpp" -lgloo -pthread
fi
echo "build.sh: up to date: $out/{mpi_perf_openmpi,mpi_perf_mpich,gloo_perf}"
