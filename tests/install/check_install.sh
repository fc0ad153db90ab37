#!/usr/bin/env bash
# Installs a built grove into a scratch prefix and uses it the way a user would.
#
# Why: install rules rot silently, because nothing inside the build tree uses them. This
# script (run by CTest as install.consumer) checks that `cmake --install` puts every promised
# file in place, that find_package(grove) gives working grove::grove and grove::grove_static
# targets to an outside CMake project, and that a C program builds and runs with nothing but
# `pkg-config --cflags --libs grove`, against both the shared and the static library.
#
# Usage: check_install.sh BUILD_DIR WORK_DIR
# Environment (set by tests/install/CMakeLists.txt; defaults suit a plain build):
#   CMAKE, CC, CXX, CFLAGS, CXXFLAGS, BUILD_TYPE, GENERATOR, LIBDIR, INCLUDEDIR, VERSION
# CFLAGS/CXXFLAGS carry the sanitizer flags of a sanitizer build, whose libraries cannot be
# linked without them.
set -euo pipefail

if (($# != 2)); then
  echo "usage: $0 BUILD_DIR WORK_DIR" >&2
  exit 2
fi
build_dir=$1
work_dir=$2
here=$(cd "$(dirname "$0")" && pwd)

CMAKE=${CMAKE:-cmake}
CC=${CC:-cc}
CXX=${CXX:-c++}
CFLAGS=${CFLAGS:-}
CXXFLAGS=${CXXFLAGS:-}
BUILD_TYPE=${BUILD_TYPE:-Release}
GENERATOR=${GENERATOR:-Unix Makefiles}
LIBDIR=${LIBDIR:-lib}
INCLUDEDIR=${INCLUDEDIR:-include}
VERSION=${VERSION:-}

step() { echo "== $*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

rm -rf "$work_dir"
mkdir -p "$work_dir"
prefix=$work_dir/prefix

step "install $build_dir into $prefix"
"$CMAKE" --install "$build_dir" --prefix "$prefix" >"$work_dir/install.log" 2>&1 ||
  { cat "$work_dir/install.log"; fail "cmake --install failed"; }

step "check the installed files"
for f in "$INCLUDEDIR/grove/grove.hpp" "$INCLUDEDIR/grove/communicator.hpp" \
  "$INCLUDEDIR/grove/types.hpp" "$INCLUDEDIR/grove/error.hpp" "$INCLUDEDIR/grove/version.hpp" \
  "$LIBDIR/libgrove.so" "$LIBDIR/libgrove.a" bin/grove \
  "$LIBDIR/cmake/grove/groveConfig.cmake" "$LIBDIR/cmake/grove/groveConfigVersion.cmake" \
  "$LIBDIR/cmake/grove/groveTargets.cmake" "$LIBDIR/pkgconfig/grove.pc"; do
  [[ -e "$prefix/$f" ]] || fail "$f is not installed under $prefix"
done
# Listings are captured before grep reads them: `cmd | grep -q` under pipefail fails at
# random when grep exits on its first match and cmd, still writing, dies of SIGPIPE.
templates=$(find "$prefix/$INCLUDEDIR" -name '*.in')
if [[ -n $templates ]]; then
  fail "a template (*.in) was installed: $templates"
fi
"$prefix/bin/grove" --help >/dev/null || fail "the installed bin/grove --help failed"

step "CMake consumer: find_package(grove)"
"$CMAKE" -S "$here/consumer" -B "$work_dir/consumer-build" -G "$GENERATOR" \
  -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_CXX_FLAGS="$CXXFLAGS" \
  -Dgrove_DIR="$prefix/$LIBDIR/cmake/grove" >"$work_dir/consumer-configure.log" 2>&1 ||
  { cat "$work_dir/consumer-configure.log"; fail "configuring the consumer failed"; }
"$CMAKE" --build "$work_dir/consumer-build" >"$work_dir/consumer-build.log" 2>&1 ||
  { cat "$work_dir/consumer-build.log"; fail "building the consumer failed"; }
"$work_dir/consumer-build/consumer_shared" || fail "consumer_shared (grove::grove) failed"
"$work_dir/consumer-build/consumer_static" || fail "consumer_static (grove::grove_static) failed"
if command -v ldd >/dev/null 2>&1; then
  shared_libs=$(ldd "$work_dir/consumer-build/consumer_shared")
  grep -q "$prefix/$LIBDIR/libgrove.so" <<<"$shared_libs" ||
    fail "consumer_shared does not load libgrove.so from $prefix/$LIBDIR: $shared_libs"
  static_libs=$(ldd "$work_dir/consumer-build/consumer_static")
  ! grep -q 'libgrove\|libfmt' <<<"$static_libs" ||
    fail "consumer_static depends on a shared grove or fmt library: $static_libs"
fi

step "pkg-config consumer: C program"
export PKG_CONFIG_PATH=$prefix/$LIBDIR/pkgconfig
pc_version=$(pkg-config --modversion grove) || fail "pkg-config cannot find grove.pc"
if [[ -n "$VERSION" && "$pc_version" != "$VERSION" ]]; then
  fail "grove.pc says version $pc_version, the project is $VERSION"
fi
pc_includedir=$(pkg-config --variable=includedir grove)
[[ "$(cd "$pc_includedir" && pwd -P)" == "$(cd "$prefix/$INCLUDEDIR" && pwd -P)" ]] ||
  fail "grove.pc includedir $pc_includedir is not $prefix/$INCLUDEDIR"
if [[ ! -e "$prefix/$INCLUDEDIR/grove/grove.h" ]]; then
  echo "SKIP: grove.h is not installed (no C API yet); C consumer not built"
else
  # shellcheck disable=SC2046,SC2086  # pkg-config output and flags are word lists
  "$CC" -std=c11 -Wall -Wextra -Werror $CFLAGS "$here/c_consumer.c" -o "$work_dir/c_consumer" \
    $(pkg-config --cflags --libs grove) || fail "building the C consumer (shared) failed"
  LD_LIBRARY_PATH=$prefix/$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work_dir/c_consumer" ||
    fail "the C consumer (shared) failed"

  # Static: the same flags with libgrove.a in place of -lgrove, plus the private libraries.
  static_libs=$(pkg-config --static --libs grove)
  static_libs=${static_libs/-lgrove/$prefix/$LIBDIR/libgrove.a}
  # shellcheck disable=SC2046,SC2086
  "$CC" -std=c11 -Wall -Wextra -Werror $CFLAGS "$here/c_consumer.c" \
    -o "$work_dir/c_consumer_static" $(pkg-config --cflags grove) $static_libs ||
    fail "building the C consumer (static) failed"
  "$work_dir/c_consumer_static" || fail "the C consumer (static) failed"
fi

echo "install check passed"
