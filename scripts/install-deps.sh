#!/usr/bin/env bash
# Installs the Debian packages grove needs to build, test and install, and nothing else.
#
# Why a script: `make` and CI call it before every build, so it must be idempotent and cost
# almost nothing when the machine is already set up (one `dpkg -s` per package, no network).
# Only when something is missing does it run `apt-get update` and `apt-get install`, printing
# what it installs. It never prompts (DEBIAN_FRONTEND=noninteractive), so it works in CI and
# without a TTY. Run it as root, or as a user with password-less sudo.
#
# Usage: scripts/install-deps.sh [--check]
#   --check   only report missing packages; exit 1 if any are missing.
set -euo pipefail

# One package per line, with the reason it is needed (see docs/building.md).
readonly PACKAGES=(
  build-essential     # C and C++ compilers, make
  cmake               # the build system (presets need 3.25)
  pkg-config          # checks the installed grove.pc (tests/install)
  ccache              # compiler cache: make test builds four presets, CI from a fresh clone
  libgtest-dev        # GoogleTest: unit and multirank tests
  libgmock-dev        # GoogleMock matchers used by the tests
  nlohmann-json3-dev  # JSON output and input (grove perf -J, topology files)
  libcli11-dev        # command-line parsing of the grove tool
  libfmt-dev          # formatting of messages and tables
  libssl-dev          # libcrypto: HMAC-SHA256 of the bootstrap authentication
  libxxhash-dev       # xxHash (header-only): GROVE_CHECKSUM's per-message checksums
  libzstd-dev liblz4-dev  # zstd and lz4: the coders grove's codec is measured against (bench/compression)
  clang-format        # make format / make format-check
  clang               # clang++ for the libFuzzer targets (make test-fuzz); GCC has no libFuzzer
  libclang-rt-14-dev  # libFuzzer + sanitizer runtimes of clang 14 (only recommended by clang)
  python3             # helper scripts (bench plots, result checks)
  python3-venv        # build/venv: the pinned torch the PyTorch backend is built and tested with
  python3-dev         # Python.h for the backend's extension module
  ninja-build         # torch.utils.cpp_extension compiles the extension with ninja
  graphviz            # dot: grove plan --svg draws packed trees over the topology
  openmpi-bin libopenmpi-dev mpich libmpich-dev libgloo-dev  # peer drivers (bench/peers)
)

check_only=0
case "${1:-}" in
  --check) check_only=1 ;;
  "") ;;
  -h | --help)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit 0
    ;;
  *)
    echo "install-deps.sh: unknown argument '$1' (expected --check or nothing)" >&2
    exit 2
    ;;
esac

missing=()
for pkg in "${PACKAGES[@]}"; do
  # dpkg -s succeeds for removed-but-configured packages too; require "install ok installed".
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: missing: ${missing[*]}"
if ((check_only)); then
  exit 1
fi

sudo=()
if ((EUID != 0)); then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    echo "install-deps: not root and no password-less sudo; as root run:" >&2
    echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-deps: apt-get update"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
